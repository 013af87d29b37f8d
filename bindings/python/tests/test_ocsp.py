"""Online (OCSP) checks with the default transport (urllib behind an appstore_transport callback), against the real
`openssl ocsp` responders of Tests/support/ocsp_harness.py, as Tests/capi/ocsp_test.c does with its C transport:
every case's status, reason and message, the OCSP requests the responders received, the offline outcome, the
cache, the timeout. `enable_online_checks=True` needs no other code."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from served import served

from appstoreserver import FailureReason
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException, VerificationStatus

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None or shutil.which("faketime") is None,
                                reason="SKIPPED: the openssl and faketime commands run the OCSP responders")


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    out = tmp_path_factory.mktemp("ocsp")
    with served("ocsp_harness.py", "serve", str(out), "--lifetime", "600", ready="READY", stop_seconds=20) as words:
        yield json.loads(Path(words[0]).read_text())


def counts(setup: Dict[str, Any]) -> Dict[str, Any]:
    with urllib.request.urlopen(setup["controlUrl"], timeout=10) as r:
        return json.loads(r.read())


def verifier(setup: Dict[str, Any], online: bool = True, **kw: Any) -> SignedDataVerifier:
    return SignedDataVerifier([Path(setup["root"]).read_bytes()], online, Environment.SANDBOX, setup["bundleId"], **kw)


def jws(setup: Dict[str, Any], name: str, i: int = 0) -> str:
    return Path(setup["cases"][name]["jws"][i]).read_text().strip()


def outcome(v: SignedDataVerifier, text: str) -> Dict[str, Any]:
    try:
        v.verify_and_decode_signed_transaction(text)
        return {"status": "OK"}
    except VerificationException as e:
        return {"status": e.appstore_status.name, "reason": e.reason.name.lower(), "message": e.message,
                "apple": e.status}


def test_every_case(harness: Dict[str, Any]) -> None:
    problems = []
    for name, case in harness["cases"].items():
        expect = case["expect"]
        slow = name == "responder_slow"
        v = verifier(harness, online_timeout=2.5 if slow else 10)
        before = counts(harness)
        t0 = time.monotonic()
        got = outcome(v, jws(harness, name))
        elapsed = time.monotonic() - t0
        after = counts(harness)
        received = after["total"] - before["total"]
        want = {"status": expect["status"], **({"reason": expect["reason"]} if "reason" in expect else {})}
        if {k: got.get(k) for k in want} != want:
            problems.append(f"{name}: expected {want}, got {got}")
            continue
        for piece in expect.get("messageContains", []):
            if piece not in got.get("message", ""):
                problems.append(f"{name}: message {got.get('message')!r} lacks {piece!r}")
        if received != expect["responderRequests"]:
            problems.append(f"{name}: the responders received {received} requests, expected {expect['responderRequests']}")
        # The outcome (ocsp_timeout, checked above) shows the deadline fired; the bound is 12x the 2.5 s timeout
        # (>= 4x the slowest loaded run) and far below the relay's 600 s wait.
        if slow and elapsed > 30:
            problems.append(f"{name}: took {elapsed:.1f} s with a 2.5 s timeout (the relay waits 600 s)")
        if got["status"] == "RETRYABLE_VERIFICATION_FAILURE" and got["apple"] != VerificationStatus.RETRYABLE_VERIFICATION_FAILURE:
            problems.append(f"{name}: Apple's status {got['apple']!r}")
        off = outcome(verifier(harness, online=False), jws(harness, name))
        off_want = expect["offline"]
        if {k: off.get(k) for k in off_want} != off_want:
            problems.append(f"{name} offline: expected {off_want}, got {off}")
    assert not problems, "\n".join(problems)


def test_cache_one_exchange_per_certificate(harness: Dict[str, Any]) -> None:
    v = verifier(harness)
    before = counts(harness)
    for i in range(len(harness["cases"]["good"]["jws"])):
        assert v.verify_and_decode_signed_transaction(jws(harness, "good", i)).bundleId == harness["bundleId"]
    after = counts(harness)
    assert after["total"] - before["total"] == 2, "the chain's two certificates are checked once, then cached"
    hits, misses, entries = v.cache_stats()
    assert misses == 1 and hits == len(harness["cases"]["good"]["jws"]) - 1 and entries == 1
    # Failures are not cached; with the cache off every call asks.
    off = verifier(harness, chain_cache_size=0)
    before = counts(harness)
    off.verify_and_decode_signed_transaction(jws(harness, "good", 0))
    off.verify_and_decode_signed_transaction(jws(harness, "good", 1))
    assert counts(harness)["total"] - before["total"] == 4


def test_revoked_is_apple_verification_failure(harness: Dict[str, Any]) -> None:
    with pytest.raises(VerificationException) as ei:
        verifier(harness).verify_and_decode_signed_transaction(jws(harness, "leaf_revoked"))
    assert ei.value.status == VerificationStatus.VERIFICATION_FAILURE and ei.value.reason == FailureReason.REVOKED
