"""SignedDataVerifier and the models beyond the manifests: raw twins and unknown enum values, to_dict / from_dict,
deep notification verification (own PKI and real Apple data), the chain cache, a table of bad arguments (a clear
TypeError / ValueError, never a ctypes error or a crash), 8 threads on one verifier, and a verifier used in a forked
child. (Memory over many calls: test_leak.py.)"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest
from conftest import shared_manifest

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver._native import lib
from appstoreserver.api_client import AppStoreServerAPIClient
from appstoreserver.jws_signature_creator import PromotionalOfferV2SignatureCreator
from appstoreserver.models.Environment import Environment
from appstoreserver.models.JWSTransactionDecodedPayload import JWSTransactionDecodedPayload
from appstoreserver.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserver.models.OfferDiscountType import OfferDiscountType
from appstoreserver.models.PerformanceTestResultResponse import PerformanceTestResultResponse
from appstoreserver.models.SendAttemptResult import SendAttemptResult
from appstoreserver.models.Type import Type
from appstoreserver.receipt_utility import ReceiptUtility
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException, VerificationStatus

BUNDLE = "com.example.testpki"


def make(testpki: Path, **kw: Any) -> SignedDataVerifier:
    return SignedDataVerifier([(testpki / "root.der").read_bytes()], False, Environment.SANDBOX, BUNDLE, **kw)


def jws(testpki: Path, name: str) -> str:
    return (testpki / "jws" / f"{name}.jws").read_text().strip()


def payload(text: str) -> dict:
    seg = text.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


def test_xcode_and_local_testing_need_no_roots(testpki: Path) -> None:
    # Signatures are not checked there, so no roots are needed (as with Apple's library); Sandbox still needs them.
    t = SignedDataVerifier([], False, Environment.XCODE, BUNDLE).verify_and_decode_signed_transaction(
        jws(testpki, "xcode-tx-valid"))
    assert t.environment is Environment.XCODE
    t = SignedDataVerifier([], False, Environment.LOCAL_TESTING, BUNDLE).verify_and_decode_signed_transaction(
        jws(testpki, "localtesting-tx-valid-no-x5c"))
    assert t.bundleId == BUNDLE
    with pytest.raises(VerificationException) as e:
        SignedDataVerifier([], False, Environment.SANDBOX, BUNDLE).verify_and_decode_signed_transaction(
            jws(testpki, "tx-valid"))
    assert e.value.status is VerificationStatus.INVALID_CERTIFICATE


# ---- models -------------------------------------------------------------------------------------------------------


def test_unknown_enum_values_are_kept_raw(testpki: Path) -> None:
    t = make(testpki).verify_and_decode_signed_transaction(jws(testpki, "tx-valid"))
    assert t.offerDiscountType is None and t.rawOfferDiscountType == "SOMETHING_NEW"
    assert t.type is Type.AUTO_RENEWABLE_SUBSCRIPTION and t.rawType == "Auto-Renewable Subscription"
    assert t.environment is Environment.SANDBOX and t.price == 9990 and t.appAccountToken == \
        payload(jws(testpki, "tx-valid"))["appAccountToken"]
    # Assigning one twin updates the other (Apple's behaviour).
    t.environment = Environment.PRODUCTION
    assert t.rawEnvironment == "Production"
    t.rawEnvironment = "Zzz"
    assert t.environment is None and t.rawEnvironment == "Zzz"
    t.offerDiscountType = OfferDiscountType.FREE_TRIAL
    assert t.rawOfferDiscountType == "FREE_TRIAL"
    t.offerDiscountType = None
    assert t.rawOfferDiscountType is None
    # Constructor: raw wins when both are given; unknown raw values stay raw.
    assert JWSTransactionDecodedPayload(environment=Environment.XCODE, rawEnvironment="Sandbox").environment \
        is Environment.SANDBOX
    u = JWSTransactionDecodedPayload(rawType="Future Type")
    assert u.type is None and u.rawType == "Future Type" and u.to_dict() == {"type": "Future Type"}


def test_fractional_dates_truncate(testpki: Path) -> None:
    text = jws(testpki, "tx-valid-fractional-negative-dates")
    t = make(testpki).verify_and_decode_signed_transaction(text)
    assert payload(text)["purchaseDate"] == 1697679936049.7297
    assert t.purchaseDate == 1697679936049 and isinstance(t.purchaseDate, int)
    assert t.originalPurchaseDate == -62135769600000


def test_round_trips(testpki: Path) -> None:
    text = jws(testpki, "notif-valid-did-renew")
    v = make(testpki)
    n = v.verify_and_decode_notification(text)
    raw = v.verify_and_decode_json("notification", text)
    assert n.to_dict() == {k: val for k, val in raw.items() if k in type(n)._KEYS}
    again = type(n).from_dict(n.to_dict())
    assert again == n and again is not n and type(n).from_json(n.to_json()) == n
    with pytest.raises(TypeError):
        hash(n)
    assert n.notificationType is NotificationTypeV2.DID_RENEW and n.data.bundleId == BUNDLE
    assert "DID_RENEW" in repr(n)
    r = PerformanceTestResultResponse.from_dict({"failures": {"TIMED_OUT": 3, "WEIRD": 1}})
    assert r.failures == {SendAttemptResult.TIMED_OUT: 3} and r.rawFailures == {"TIMED_OUT": 3, "WEIRD": 1}
    assert r.to_dict() == {"failures": {"TIMED_OUT": 3, "WEIRD": 1}}


def test_deep_notification_own_pki(testpki: Path) -> None:
    v = make(testpki)
    text = jws(testpki, "notif-valid-did-renew")
    deep = v.verify_and_decode_notification_deep(text)
    n = v.verify_and_decode_notification(text)
    assert deep.notification == n
    assert deep.transaction == v.verify_and_decode_signed_transaction(n.data.signedTransactionInfo)
    assert deep.renewalInfo == v.verify_and_decode_renewal_info(n.data.signedRenewalInfo)
    assert deep.appTransaction is None
    # A nested value that does not verify fails the deep call, naming the field; the outer one alone verifies.
    outer = payload(text)
    nested = outer["data"]["signedTransactionInfo"]
    outer["data"]["signedTransactionInfo"] = nested[:-2] + ("AA" if nested[-2:] != "AA" else "BB")
    forged = resign(testpki, text.split(".")[0], outer)
    assert v.verify_and_decode_notification(forged).data.bundleId == BUNDLE
    with pytest.raises(VerificationException) as ei:
        v.verify_and_decode_notification_deep(forged)
    assert ei.value.message.startswith("data.signedTransactionInfo"), ei.value.message
    assert ei.value.reason is FailureReason.BAD_SIGNATURE


def resign(testpki: Path, header_segment: str, claims: dict) -> str:
    """A JWS with the testpki leaf key (made with cryptography, not with this library)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    key = serialization.load_pem_private_key((testpki / "leaf_key.pem").read_bytes(), None)
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    signing_input = f"{header_segment}.{body}".encode()
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))  # type: ignore[union-attr,call-arg]
    sig = base64.urlsafe_b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big")).rstrip(b"=").decode()
    return f"{header_segment}.{body}.{sig}"


def test_deep_notification_real_data(conformance: Path) -> None:
    manifest = shared_manifest()
    g3 = (conformance / "certs/apple-root-ca-g3.der").read_bytes()
    checked = 0
    for f in manifest["files"]:
        if f.get("kind") != "notification" or not f.get("nested_jws") or not f.get("signedDate"):
            continue
        env = Environment(f["environment"])
        v = SignedDataVerifier([g3], False, env, f["bundleId"], f.get("appAppleId") or 1)
        deep = v.verify_and_decode_notification_deep((conformance / f["path"]).read_text().strip())
        for nested in f["nested_jws"]:
            if nested["kind"] == "transaction":
                assert deep.transaction.transactionId == nested["transactionId"], f["id"]
                checked += 1
            elif nested["kind"] == "renewal_info":
                assert deep.renewalInfo is not None, f["id"]
    assert checked >= 5


def test_cache_stats(testpki: Path) -> None:
    v = make(testpki)
    for _ in range(3):
        v.verify_and_decode_signed_transaction(jws(testpki, "tx-valid"))
    hits, misses, entries = v.cache_stats()
    assert (hits, misses, entries) == (2, 1, 1)
    off = make(testpki, chain_cache_size=0)
    off.verify_and_decode_signed_transaction(jws(testpki, "tx-valid"))
    off.verify_and_decode_signed_transaction(jws(testpki, "tx-valid"))
    assert off.cache_stats()[0] == 0


def test_exception_attributes(testpki: Path) -> None:
    with pytest.raises(VerificationException) as ei:
        make(testpki).verify_and_decode_signed_transaction(jws(testpki, "tx-malformed-two-segments"))
    e = ei.value
    assert e.status is VerificationStatus.VERIFICATION_FAILURE  # Apple's Python status
    assert e.appstore_status is AppStoreStatus.INVALID_JWT_FORMAT and e.reason is FailureReason.MALFORMED
    assert e.args == ("Verification failed with status VERIFICATION_FAILURE",) and e.message


# ---- bad arguments ------------------------------------------------------------------------------------------------


def bad_argument_table(testpki: Path, keys: Path) -> List[Tuple[str, Callable[[], Any], type]]:
    root = (testpki / "root.der").read_bytes()
    pem = (keys / "p256.p8").read_bytes()
    v = make(testpki)
    c = AppStoreServerAPIClient(pem, "KEY", "ISSUER", "com.b", Environment.SANDBOX, base_url="http://127.0.0.1:9")
    v2 = PromotionalOfferV2SignatureCreator(pem, "KEY", "ISSUER", "com.b")
    r = ReceiptUtility()
    S = Environment.SANDBOX
    return [
        ("roots None", lambda: SignedDataVerifier(None, False, S, BUNDLE), TypeError),  # type: ignore[arg-type]
        ("roots str", lambda: SignedDataVerifier("root", False, S, BUNDLE), TypeError),  # type: ignore[arg-type]
        ("root str", lambda: SignedDataVerifier(["root"], False, S, BUNDLE), TypeError),  # type: ignore[list-item]
        ("root not DER", lambda: SignedDataVerifier([b"nope"], False, S, BUNDLE), ValueError),
        ("online not bool", lambda: SignedDataVerifier([root], 1, S, BUNDLE), TypeError),  # type: ignore[arg-type]
        ("environment None", lambda: SignedDataVerifier([root], False, None, BUNDLE), TypeError),  # type: ignore
        ("environment unknown", lambda: SignedDataVerifier([root], False, "Moon", BUNDLE), ValueError),  # type: ignore
        ("bundle None", lambda: SignedDataVerifier([root], False, S, None), TypeError),  # type: ignore[arg-type]
        ("bundle bytes", lambda: SignedDataVerifier([root], False, S, b"com.x"), TypeError),  # type: ignore
        ("bundle with NUL", lambda: SignedDataVerifier([root], False, S, "com.x\x00evil"), ValueError),
        ("bundle surrogate", lambda: SignedDataVerifier([root], False, S, "com.\udcff"), ValueError),
        ("app id str", lambda: SignedDataVerifier([root], False, S, BUNDLE, "123"), TypeError),  # type: ignore
        ("app id too big", lambda: SignedDataVerifier([root], False, S, BUNDLE, 2**63), ValueError),
        ("app id bool", lambda: SignedDataVerifier([root], False, S, BUNDLE, True), TypeError),
        ("cache size negative", lambda: make(testpki, chain_cache_size=-1), ValueError),
        ("cache size huge", lambda: make(testpki, chain_cache_size=2**32), ValueError),
        ("verify None", lambda: v.verify_and_decode_signed_transaction(None), TypeError),  # type: ignore[arg-type]
        ("verify int", lambda: v.verify_and_decode_notification(5), TypeError),  # type: ignore[arg-type]
        ("verify list", lambda: v.verify_and_decode_renewal_info(["a"]), TypeError),  # type: ignore[arg-type]
        ("verify NUL inside", lambda: v.verify_and_decode_signed_transaction("a.b\x00.c"), VerificationException),
        ("verify surrogate", lambda: v.verify_and_decode_app_transaction("\udcff.a.b"), VerificationException),
        ("verify empty", lambda: v.verify_and_decode_realtime_request(""), VerificationException),
        ("json kind", lambda: v.verify_and_decode_json("nope", "a.b.c"), ValueError),
        ("receipt None", lambda: r.extract_transaction_id_from_app_receipt(None), TypeError),  # type: ignore
        ("receipt int", lambda: r.extract_transaction_id_from_transaction_receipt(3), TypeError),  # type: ignore
        ("receipt NUL", lambda: r.extract_transaction_id_from_app_receipt("QUJD\x00REVG"), ValueError),
        ("key None", lambda: PromotionalOfferV2SignatureCreator(None, "K", "I", "B"), TypeError),  # type: ignore
        ("key id NUL", lambda: PromotionalOfferV2SignatureCreator(pem, "K\x00", "I", "B"), ValueError),
        ("key id int", lambda: PromotionalOfferV2SignatureCreator(pem, 5, "I", "B"), TypeError),  # type: ignore
        ("product None", lambda: v2.create_signature(None, "o", None), ValueError),  # type: ignore[arg-type]
        ("product int", lambda: v2.create_signature(1, "o", None), TypeError),  # type: ignore[arg-type]
        ("offer NUL", lambda: v2.create_signature("p", "o\x00", None), ValueError),
        ("transaction bytes", lambda: v2.create_signature("p", "o", b"1"), TypeError),  # type: ignore[arg-type]
        ("api id None", lambda: c.get_transaction_info(None), TypeError),  # type: ignore[arg-type]
        ("api id NUL", lambda: c.get_transaction_info("1\x00"), ValueError),
        ("api id int", lambda: c.look_up_order_id(12), TypeError),  # type: ignore[arg-type]
        ("api body wrong model", lambda: c.set_app_account_token("1", object()), TypeError),  # type: ignore
        ("api body None", lambda: c.send_consumption_information("1", None), TypeError),  # type: ignore
        ("api image str", lambda: c.upload_image(uuid.uuid4(), "png"), TypeError),  # type: ignore[arg-type]
        ("api image id not uuid", lambda: c.delete_image("not-a-uuid"), ValueError),
        ("api status not list", lambda: c.get_all_subscription_statuses("1", 2), TypeError),  # type: ignore
        ("api status wrong type", lambda: c.get_all_subscription_statuses("1", ["active"]), ValueError),
        ("api history version", lambda: c.get_transaction_history("1", None, None, "v3"), ValueError),  # type: ignore
        ("api unknown body key", lambda: c.set_app_account_token("1", {"appAccountTokn": "x"}), ValueError),
        ("api limits", lambda: c.extend_subscription_renewal_date("1", {"extendByDays": 1000, "extendReasonCode": 1,
                                                                        "requestIdentifier": "r"}), ValueError),
        ("api not JSON", lambda: c.set_app_account_token("1", {"appAccountToken": object()}), TypeError),
        ("api surrogate", lambda: c.get_transaction_info("\udcff"), ValueError),
        ("api timeout negative", lambda: AppStoreServerAPIClient(pem, "K", "I", "B", Environment.SANDBOX,
                                                                 timeout=-1), ValueError),
        ("api retries bool", lambda: AppStoreServerAPIClient(pem, "K", "I", "B", Environment.SANDBOX,
                                                             max_retries=True), TypeError),
        ("api base url NUL", lambda: AppStoreServerAPIClient(pem, "K", "I", "B", Environment.SANDBOX,
                                                             base_url="http://x\x00"), ValueError),
        ("api base url ftp", lambda: AppStoreServerAPIClient(pem, "K", "I", "B", Environment.SANDBOX,
                                                             base_url="ftp://x"), ValueError),
    ]


def test_bad_arguments(testpki: Path, keys: Path) -> None:
    problems = []
    for what, call, expected in bad_argument_table(testpki, keys):
        try:
            call()
        except ctypes.ArgumentError as e:
            problems.append(f"{what}: ctypes.ArgumentError {e}")
        except expected as e:
            if not str(e):
                problems.append(f"{what}: {type(e).__name__} without a message")
        except BaseException as e:  # noqa: BLE001
            problems.append(f"{what}: {type(e).__name__} {e}, expected {expected.__name__}")
        else:
            problems.append(f"{what}: no error, expected {expected.__name__}")
    assert not problems, "\n".join(problems)


# ---- threads, memory, fork ----------------------------------------------------------------------------------------


def test_library_calls_release_the_gil() -> None:
    # ctypes.CDLL (unlike PyDLL) releases the GIL around every foreign call.
    assert isinstance(lib, ctypes.CDLL) and not isinstance(lib, ctypes.PyDLL)


def test_eight_threads_one_verifier(testpki: Path) -> None:
    v = make(testpki)
    good = jws(testpki, "tx-valid")
    want = payload(good)["transactionId"]
    notif = jws(testpki, "notif-valid-did-renew")
    bad = jws(testpki, "tx-bad-signature-bit-flip")
    errors: List[str] = []
    barrier = threading.Barrier(8)

    def work(k: int) -> None:
        barrier.wait()
        for i in range(300):
            try:
                case = (i + k) % 3
                if case == 0:
                    got = v.verify_and_decode_signed_transaction(good).transactionId
                    if got != want:
                        errors.append(f"thread {k}: transaction {got}")
                elif case == 1:
                    if v.verify_and_decode_notification(notif).data.bundleId != BUNDLE:
                        errors.append(f"thread {k}: notification")
                else:
                    try:
                        v.verify_and_decode_signed_transaction(bad)
                        errors.append(f"thread {k}: a bad signature verified")
                    except VerificationException as e:
                        if e.reason is not FailureReason.BAD_SIGNATURE:
                            errors.append(f"thread {k}: {e!r}")
            except Exception as e:  # noqa: BLE001
                errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    hits, misses, _ = v.cache_stats()
    assert hits + misses == 8 * 300 and misses <= 8 * 3, (hits, misses)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_verifier_in_forked_child(testpki: Path) -> None:
    v = make(testpki)
    good = jws(testpki, "tx-valid")
    v.verify_and_decode_signed_transaction(good)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            ok = v.verify_and_decode_signed_transaction(good).transactionId == payload(good)["transactionId"]
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_fork_while_threads_verify(testpki: Path) -> None:
    """gunicorn and multiprocessing fork while other threads are inside the library: every child must verify (no
    crash on a lock held by a thread that does not exist in the child, no deadlock in OpenSSL's locks)."""
    import warnings
    verifier = make(testpki)
    uncached = make(testpki, chain_cache_size=0)
    valid, forged = jws(testpki, "tx-valid"), jws(testpki, "tx-untrusted-forged-chain")
    stop = threading.Event()
    calls = [0]

    def busy(v: SignedDataVerifier) -> None:
        while not stop.is_set():
            v.verify_and_decode_signed_transaction(valid)
            with pytest.raises(VerificationException):
                v.verify_and_decode_signed_transaction(forged)
            calls[0] += 1

    threads = [threading.Thread(target=busy, args=(v,), daemon=True) for v in (verifier, uncached, verifier)]
    for t in threads:
        t.start()
    failures = []
    try:
        while calls[0] < 20:
            threading.Event().wait(0.005)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "use of fork() may lead to deadlocks": the point
            for i in range(30):
                pid = os.fork()
                if pid == 0:  # the child: one signal-safe exit code, whatever happens
                    code = 1
                    try:
                        import signal
                        signal.alarm(20)
                        verifier.verify_and_decode_signed_transaction(valid)
                        make(testpki).verify_and_decode_signed_transaction(valid)
                        code = 0
                    finally:
                        os._exit(code)
                _, status = os.waitpid(pid, 0)
                if status != 0:
                    failures.append((i, os.WIFSIGNALED(status) and os.WTERMSIG(status), os.WIFEXITED(status) and os.WEXITSTATUS(status)))
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not failures, f"children that failed (index, signal, exit code): {failures}"
    assert calls[0] > 30, "the threads were not busy while forking"


def test_exception_text_says_why(testpki: Path, mock_url: str, keys: Path) -> None:
    """str() of an exception says the reason and what exactly failed, not only the status (Apple's attributes and
    Apple's text prefix stay)."""
    with pytest.raises(VerificationException) as e:
        make(testpki).verify_and_decode_signed_transaction(jws(testpki, "tx-bad-signature-bit-flip"))
    text = str(e.value)
    assert text.startswith("Verification failed with status VERIFICATION_FAILURE (BAD_SIGNATURE): "), text
    assert "signature" in text[len("Verification failed with status VERIFICATION_FAILURE (BAD_SIGNATURE): "):], text
    from appstoreserver.api_client import APIException
    client = AppStoreServerAPIClient((keys / "p256.p8").read_bytes(), "ABC123DEFG", "57246542-96fe-1a63-e053-0824d011072a",
                                     "com.example.app", Environment.LOCAL_TESTING, base_url=mock_url)
    with pytest.raises(APIException) as a:
        client.get_transaction_info("error-404-4040010")
    text = str(a.value)
    assert "4040010" in text and "HTTP 404" in text and "[" in text and a.value.http_status_code == 404, text


def _other_app_notification() -> str:
    """A LocalTesting notification (signatures are not checked there) naming another app: com.other, 99."""
    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    payload = {"notificationType": "TEST", "notificationUUID": "3f2f3b2c-4a5b-4c6d-8e9f-0a1b2c3d4e5f", "version": "2.0",
               "signedDate": 1700000000000,
               "data": {"bundleId": "com.other", "appAppleId": 99, "environment": "LocalTesting"}}
    return b64(b'{"alg":"ES256"}') + "." + b64(json.dumps(payload).encode()) + ".c2ln"


def test_verify_notification_hook() -> None:
    """Apple's _verify_notification extension point: replaced on the instance (as Apple's tests do) or in a subclass,
    it sees the app the notification names and decides; the default is the library's check."""
    jws = _other_app_notification()
    plain = SignedDataVerifier([], False, Environment.LOCAL_TESTING, BUNDLE)
    with pytest.raises(VerificationException) as ei:
        plain.verify_and_decode_notification(jws)
    assert ei.value.status == VerificationStatus.INVALID_APP_IDENTIFIER

    seen: List[Any] = []
    v = SignedDataVerifier([], False, Environment.LOCAL_TESTING, BUNDLE)
    v._verify_notification = lambda bundle_id, app_apple_id, environment: seen.append(  # type: ignore[method-assign]
        (bundle_id, app_apple_id, environment))
    assert v.verify_and_decode_notification(jws).notificationType == NotificationTypeV2.TEST
    assert seen == [("com.other", 99, Environment.LOCAL_TESTING)]

    class Deferring(SignedDataVerifier):
        def _verify_notification(self, bundle_id: Any, app_apple_id: Any, environment: Any) -> None:
            seen.append(bundle_id)
            super()._verify_notification(bundle_id, app_apple_id, environment)

    with pytest.raises(VerificationException) as ei:
        Deferring([], False, Environment.LOCAL_TESTING, BUNDLE).verify_and_decode_notification(jws)
    assert ei.value.status == VerificationStatus.INVALID_APP_IDENTIFIER and "com.other" in str(ei.value)
    assert seen[-1] == "com.other"
    # The default on its own, with what a caller passes.
    plain._verify_notification(BUNDLE, None, Environment.LOCAL_TESTING)
    with pytest.raises(VerificationException) as ei:
        plain._verify_notification(BUNDLE, None, Environment.SANDBOX)
    assert ei.value.status == VerificationStatus.INVALID_ENVIRONMENT
