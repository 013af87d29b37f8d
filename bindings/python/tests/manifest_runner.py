"""Runs one verifyAndDecode* case of a manifest (../shared/conformance or Tests/support/testpki.py) through the
Python API and checks it as Tests/capi/conformance.c and Tests/AppStoreServerTests/ManifestRunner.swift do:

  result "implementation-defined"  the call returns or raises VerificationException (nothing else)
  result "valid"                   a model of the operation's class comes back; the JSON is the signed payload
                                   segment, decoded, exactly; every scalar of "fields" matches (numbers truncated,
                                   null = absent or null), in the JSON and in the model's to_dict()
  result "config_error"            the verifier cannot be built (Python: see check_config)
  result "error..."                VerificationException with "reason" / "status" / "apple_status" / "error_class"

and, beyond the C runner, Apple's Python status for the case: what apple-python's reference result says (shared
manifest), or the status Apple's Python library reports for the reason (testpki).
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any, Dict, Optional

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.models.AppTransaction import AppTransaction
from appstoreserver.models.DecodedRealtimeRequestBody import DecodedRealtimeRequestBody
from appstoreserver.models.Environment import Environment
from appstoreserver.models.JWSRenewalInfoDecodedPayload import JWSRenewalInfoDecodedPayload
from appstoreserver.models.JWSTransactionDecodedPayload import JWSTransactionDecodedPayload
from appstoreserver.models.ResponseBodyV2DecodedPayload import ResponseBodyV2DecodedPayload
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException, VerificationStatus

OPS = {
    "verifyAndDecodeNotification": ("verify_and_decode_notification", "notification", ResponseBodyV2DecodedPayload),
    "verifyAndDecodeTransaction": ("verify_and_decode_signed_transaction", "transaction", JWSTransactionDecodedPayload),
    "verifyAndDecodeRenewalInfo": ("verify_and_decode_renewal_info", "renewal_info", JWSRenewalInfoDecodedPayload),
    "verifyAndDecodeAppTransaction": ("verify_and_decode_app_transaction", "app_transaction", AppTransaction),
    "verifyAndDecodeRealtimeRequest": ("verify_and_decode_realtime_request", "realtime_request",
                                       DecodedRealtimeRequestBody),
}

# The shared manifest's semantic error classes and the reasons that satisfy them (Tests/capi/conformance.c).
ERROR_CLASSES = {
    "signature_invalid": {"bad_signature"}, "unsupported_alg": {"unsupported_alg"}, "missing_x5c": {"missing_x5c"},
    "chain_length": {"chain_length", "empty_x5c"}, "invalid_certificate": {"bad_certificate"},
    "chain_untrusted": {"untrusted_chain"},
    "chain_invalid": {"untrusted_chain", "expired", "missing_marker_oid", "chain_length"},
    "expired": {"expired"}, "no_trust_anchor": {"no_trust_anchor"}, "wrong_bundle": {"wrong_bundle"},
    "wrong_app_apple_id": {"wrong_app_id"}, "wrong_environment": {"wrong_environment"}, "wrong_kind": {"wrong_kind"},
    "malformed_jws": {"malformed"},
}

# What Apple's Python library (3.1.2) reports for each of our reasons, written from its source: it checks that x5c
# is non-empty and alg is ES256 before anything else (VERIFICATION_FAILURE), then the chain length, wraps every
# other failure (JWT format, payload decoding, chain validation) as VERIFICATION_FAILURE, and reports a verifier
# without roots as INVALID_CERTIFICATE. Written independently of spec/apple.json, from which the binding's table is
# generated; this one checks it.
APPLE_PYTHON_STATUS = {
    "malformed": "VERIFICATION_FAILURE", "unsupported_alg": "VERIFICATION_FAILURE",
    "missing_x5c": "VERIFICATION_FAILURE", "empty_x5c": "VERIFICATION_FAILURE", "chain_length": "INVALID_CHAIN_LENGTH",
    "bad_certificate": "INVALID_CERTIFICATE", "untrusted_chain": "VERIFICATION_FAILURE",
    "expired": "VERIFICATION_FAILURE", "missing_marker_oid": "VERIFICATION_FAILURE",
    "bad_signature": "VERIFICATION_FAILURE", "undecodable_payload": "VERIFICATION_FAILURE",
    "wrong_bundle": "INVALID_APP_IDENTIFIER", "wrong_app_id": "INVALID_APP_IDENTIFIER",
    "wrong_environment": "INVALID_ENVIRONMENT", "no_trust_anchor": "INVALID_CERTIFICATE",
}


def read_trimmed(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def signed_payload(jws: str) -> Optional[str]:
    parts = jws.split(".")
    if len(parts) != 3:
        return None
    seg = parts[1]
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)).decode("utf-8")


def _same_scalar(got: Any, want: Any) -> bool:
    if isinstance(got, (int, float)) and isinstance(want, (int, float)) and not isinstance(got, bool) \
            and not isinstance(want, bool):
        return math.trunc(got) == math.trunc(want)
    return got == want


def make_verifier(base: Path, v: Dict[str, Any]) -> SignedDataVerifier:
    roots = [(base / r).read_bytes() for r in v["rootCertificates"]]
    return SignedDataVerifier(roots, bool(v.get("enableOnlineChecks")), Environment(v["environment"]),
                              v.get("bundleId") or "", v.get("appAppleId"))


def check_case(base: Path, case: Dict[str, Any], apple_reference: Optional[Dict[str, Any]] = None) -> None:
    """Raises AssertionError describing the first mismatch."""
    op = case["operation"]
    method, kind, cls = OPS[op]
    expect = case["expect"]
    result = expect.get("result", "")
    jws = read_trimmed(base / case["path"])
    if result == "config_error":
        check_config(base, case, jws)
        return
    verifier = make_verifier(base, case["verifier"])
    try:
        model = getattr(verifier, method)(jws)
        raw = verifier.verify_and_decode_json(kind, jws)
        error: Optional[VerificationException] = None
    except VerificationException as e:
        model, raw, error = None, None, e
    if result == "implementation-defined":
        return
    if result == "valid":
        assert error is None, f"expected valid, got {error!r}"
        assert isinstance(model, cls), f"expected a {cls.__name__}, got {type(model).__name__}"
        text = signed_payload(jws)
        assert text is not None and raw == json.loads(text), "the JSON is not the signed payload"
        as_dict = model.to_dict()
        fields = expect.get("fields") or case.get("fields") or {}
        for k, want in fields.items():
            got = raw.get(k)
            if want is None:
                assert got is None, f"field {k}: expected null, got {got!r}"
                assert getattr(model, k, None) is None, f"model {k}: expected None"
                continue
            if isinstance(want, (list, dict)):
                continue
            assert k in raw, f"field {k}: missing in output"
            assert _same_scalar(got, want), f"field {k}: expected {want!r}, got {got!r}"
            if k in cls._KEYS:
                assert _same_scalar(as_dict.get(k), want), f"model field {k}: expected {want!r}, got {as_dict.get(k)!r}"
        return
    assert result.startswith("error"), f"unknown expectation {result!r}"
    assert error is not None, "expected an error, got a valid result"
    reason = error.reason.name.lower() if isinstance(error.reason, FailureReason) else str(error.reason)
    status = error.appstore_status.name if isinstance(error.appstore_status, AppStoreStatus) else str(error.appstore_status)
    assert isinstance(error.status, VerificationStatus), f"status {error.status!r} is not a VerificationStatus"
    assert error.message, "empty message"
    # Apple's text first, then the reason and the precise message.
    assert str(error) == f"Verification failed with status {error.status.name} ({error.reason.name}): {error.message}", str(error)
    if "reason" in expect:
        assert reason == expect["reason"], f"expected reason {expect['reason']}, got {reason} ({error.message})"
    if "status" in expect:
        assert status == expect["status"], f"expected status {expect['status']}, got {status} ({error.message})"
    if "apple_status" in expect:
        assert status == expect["apple_status"], f"expected Apple's status {expect['apple_status']}, got {status}"
    cls_text = expect.get("error_class")
    if cls_text:
        accepted = set()
        for alt in cls_text.split("/"):
            head = alt.strip().split(" ")[0]
            assert head in ERROR_CLASSES, f"unmapped error class {alt}"
            accepted |= ERROR_CLASSES[head]
        assert reason in accepted, f"expected {cls_text}, got {status}/{reason}: {error.message}"
    # Apple's Python status for the case.
    if apple_reference is not None:
        if apple_reference.get("result") == "error" and apple_reference.get("status"):
            assert error.status.name == apple_reference["status"], \
                f"Apple's Python reports {apple_reference['status']}, we report {error.status.name} ({status}/{reason})"
    else:
        want = APPLE_PYTHON_STATUS.get(reason, status)
        if reason == "wrong_kind":
            want = status
        assert error.status.name == want, f"Apple's Python would report {want}, we report {error.status.name}"


def check_config(base: Path, case: Dict[str, Any], jws: str) -> None:
    """The three configuration failures of the testpki manifest, as the Python API reports them."""
    reason = case["expect"].get("reason")
    v = case["verifier"]
    if reason == "invalid_argument":  # Production without app Apple ID: Apple's ValueError and message
        try:
            make_verifier(base, v)
        except ValueError as e:
            assert str(e) == "appAppleId is required when the environment is Production", str(e)
            return
        raise AssertionError("expected ValueError for Production without app_apple_id")
    if reason == "no_trust_anchor":  # Apple's library builds the verifier and fails with INVALID_CERTIFICATE
        verifier = make_verifier(base, v)
        method = OPS[case["operation"]][0]
        try:
            getattr(verifier, method)(jws)
        except VerificationException as e:
            assert e.status == VerificationStatus.INVALID_CERTIFICATE, repr(e)
            assert e.appstore_status == AppStoreStatus.CONFIGURATION_ERROR, repr(e)
            assert e.reason == FailureReason.NO_TRUST_ANCHOR, repr(e)
            return
        raise AssertionError("expected VerificationException without trust anchors")
    if reason == "online_checks_unavailable":
        # Python has a default transport (urllib), so online checks are available; the case's leaf names no OCSP
        # responder, which the online check reports.
        verifier = make_verifier(base, v)
        method = OPS[case["operation"]][0]
        try:
            getattr(verifier, method)(jws)
        except VerificationException as e:
            assert e.reason == FailureReason.OCSP_NO_RESPONDER, repr(e)
            assert e.status == VerificationStatus.VERIFICATION_FAILURE, repr(e)
            return
        raise AssertionError("expected the online check to fail: the leaf names no OCSP responder")
    raise AssertionError(f"unknown configuration case {reason}")
