"""Every Python transport against a hostile server (Tests/support/hostile_http.py, the `hostile` fixture): the sync
client (urllib), the async client over httpx and without it (urllib in a worker thread), and the OCSP transport
callback. A redirect is never followed (the 3xx goes to the library as it is), a body is read up to the library's
limit and no further (counted after decoding: a gzip bomb does not inflate in memory), and the timeout is a deadline
for the whole exchange (a server dripping bytes cannot hold a call past it). And key material given where text goes
never shows in an exception."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from ctypes import byref, c_void_p
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID, Hostile

from appstoreserver import AppStoreStatus, ExternalSigner, FailureReason
from appstoreserver import _http
from appstoreserver._generated import abi
from appstoreserver._native import lib, new_handle, read_error, take_string
from appstoreserver._signing import signing_key
from appstoreserver.api_client import APIException, AppStoreServerAPIClient, AsyncAppStoreServerAPIClient
from appstoreserver.jws_signature_creator import (
    IntroductoryOfferEligibilitySignatureCreator,
    PromotionalOfferV2SignatureCreator,
)
from appstoreserver.models.Environment import Environment
from appstoreserver.promotional_offer import PromotionalOfferSignatureCreator
from appstoreserver.receipt_utility import ReceiptUtility
from appstoreserver.signed_data_verifier import SignedDataVerifier

TRANSPORTS = ["urllib", "httpx", "urllib-thread"]
REDIRECTS = [301, 302, 303, 307, 308]
MASS_EXTEND = {"extendByDays": 45, "extendReasonCode": 1, "requestIdentifier": "fdf964a4-233b-486c-aac1-97d8d52688ac",
               "storefrontCountryCodes": ["USA"], "productId": "com.example.productId"}


def client(keys: Path, url: str, cls: Any = AppStoreServerAPIClient, **kw: Any) -> Any:
    return cls((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, base_url=url, **kw)


def api_call(keys: Path, url: str, transport: str, method: str = "get_transaction_info", *args: Any,
             **kw: Any) -> Any:
    """One API call through `transport`: "urllib" (the sync client), "httpx" (the async client's default),
    "httpx-follow" (the async client with an httpx.AsyncClient made to follow redirects), "urllib-thread" (the async
    client without httpx)."""
    if not args:
        args = ("1",)
    if transport == "urllib":
        return getattr(client(keys, url, **kw), method)(*args)

    async def run() -> Any:
        c = client(keys, url, AsyncAppStoreServerAPIClient, **kw)
        if transport != "httpx":
            await c.async_close()
            c.http_client = None
        if transport == "httpx-follow":
            import httpx

            c.http_client = httpx.AsyncClient(follow_redirects=True)
        try:
            return await getattr(c, method)(*args)
        finally:
            await c.async_close()

    return asyncio.run(run())


def key_lines(keys: Path) -> list:
    """The base64 lines of the test key: none may appear in a message."""
    return [line for line in (keys / "p256.p8").read_text().splitlines() if line and not line.startswith("-----")]


# ---- redirects -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS + ["httpx-follow"])
@pytest.mark.parametrize("code", REDIRECTS)
def test_redirect_not_followed(keys: Path, hostile: Hostile, transport: str, code: int) -> None:
    """The 3xx is the answer: the call fails with its status, the catcher it points at gets nothing (no bearer token
    leaves for another host)."""
    for method, args in (("get_transaction_info", ("1",)),
                         ("extend_renewal_date_for_all_active_subscribers", (MASS_EXTEND,))):
        with pytest.raises(APIException) as ei:
            api_call(keys, hostile.url(f"redirect-{code}"), transport, method, *args)
        e = ei.value
        assert e.http_status_code == code and str(code) in str(e), (repr(e), e.message)
        # The core names the Location it refused to follow.
        assert f"HTTP {code} redirect to \"http://127.0.0.1:{hostile.catcher}/caught/" in e.message, e.message
    caught = hostile.caught()
    assert caught["count"] == 0 and caught["authorization"] == [], caught


def core_call(keys: Path, url: str, timeout_ms: int = 10000) -> Any:
    """getTransactionInfo through the core's own appstore_api_client_call with the Python transport callback (the
    one online checks use): the callback's answers reach the library as they are. The ErrorInfo of the failure."""
    key = signing_key((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE)
    opts, info = new_handle("appstore_api_client_options_new")
    assert opts is not None, info
    for fn, *args in (("appstore_api_client_options_set_base_url", url.encode()),
                      ("appstore_api_client_options_set_transport", _http.default_transport()),
                      ("appstore_api_client_options_set_timeout_ms", timeout_ms)):
        err = c_void_p()
        assert getattr(lib, fn)(opts.ptr, *args, byref(err)) == 0, read_error(err, 1)
    c, info = new_handle("appstore_api_client_new", key.ptr, abi.APPSTORE_ENVIRONMENT_SANDBOX, opts.ptr, keep=key)
    assert c is not None, info
    out = c_void_p()
    err = c_void_p()
    st = lib.appstore_api_client_call(c.ptr, b"getTransactionInfo", b'{"transactionId":"1"}', byref(out), byref(err))
    assert st != 0, f"expected a failure, got {take_string(out)!r}"
    return read_error(err, st)


@pytest.mark.parametrize("code", REDIRECTS)
def test_transport_callback_reports_redirects(keys: Path, hostile: Hostile, code: int) -> None:
    """The OCSP transport callback hands a 3xx to the library as an answer (for OCSP, a non-200 one); through the
    core, an API call fails with that status."""
    result, seen = ocsp_callback(hostile.url(f"redirect-{code}") + "/ocsp", 10000)
    assert result == abi.APPSTORE_TRANSPORT_RESULT_OK and seen.status == code and not seen.body, vars(seen)
    assert (b"Location", f"http://127.0.0.1:{hostile.catcher}/caught/ocsp".encode()) in seen.headers
    info = core_call(keys, hostile.url(f"redirect-{code}"))
    assert info.status == AppStoreStatus.API_ERROR and info.http_status == code, info
    assert f"http://127.0.0.1:{hostile.catcher}/caught/" in info.message, info.message
    assert hostile.caught()["count"] == 0


# ---- bounded bodies ------------------------------------------------------------------------------------------------

# A child process (a fresh peak RSS): one exchange, then what it raised and how far its peak RSS rose (KiB).
_CHILD = r"""
import asyncio, json, resource, sys
transport, url, key_path = sys.argv[1:4]
sys.path.insert(0, sys.argv[4])
from test_hardening import api_call, ocsp_callback
from pathlib import Path
import httpx  # imported before the baseline: its import is not the body
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    if transport == "ocsp":
        result = {"result": ocsp_callback(url, 10000)[0]}
    else:
        api_call(Path(key_path), url, transport)
        result = {"result": "no failure"}
except BaseException as e:
    result = {"type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__], "message": str(e)}
result["rise_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps(result))
"""

# The limit, its joined copy and a read or two (about 40 MiB); httpx inflating whole reads reached 139 MiB.
_RSS_RISE_KIB = 128 * 1024


def bounded_child(transport: str, url: str, keys: Path) -> Any:
    r = subprocess.run([sys.executable, "-c", _CHILD, transport, url, str(keys), str(Path(__file__).parent)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


class Seen:
    """Stands in for the library inside the transport callback (the appstore_http_response_* calls): records what
    the callback hands on. body_limit 0: no response object, the callback takes OCSP's limit."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: list = []
        self.body = bytearray()

    def appstore_http_response_body_limit(self, response: Any) -> int:
        return 0

    def appstore_http_response_set_status(self, response: Any, status: int, err: Any) -> int:
        self.status = status
        return 0

    def appstore_http_response_add_header(self, response: Any, name: bytes, value: bytes, err: Any) -> int:
        self.headers.append((name, value))
        return 0

    def appstore_http_response_append_body(self, response: Any, data: bytes, size: int, err: Any) -> int:
        self.body += data[:size]
        return 0


def ocsp_callback(url: str, timeout_ms: int) -> Any:
    """The OCSP transport callback as the library calls it (an OCSP-looking POST): (result, Seen)."""
    seen = Seen()
    ocsp_request = b"0\x00"
    headers = b"Content-Type: application/ocsp-request\r\nAccept: application/ocsp-response\r\n"
    real, _http.lib = _http.lib, seen  # type: ignore[assignment]
    try:
        return _http._callback(None, b"POST", url.encode(), headers, len(headers),  # type: ignore[arg-type]
                               ocsp_request, len(ocsp_request), timeout_ms, None), seen
    finally:
        _http.lib = real


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("behaviour", ["huge-64", "hugecl-64", "gzip-1024"])
def test_api_body_limit(keys: Path, hostile: Hostile, transport: str, behaviour: str) -> None:
    """A body beyond APPSTORE_LIMIT_API_RESPONSE_BYTES (16 MiB; a 1 GiB gzip bomb counted as it inflates) fails the
    call as a transport failure naming the limit, and is never held in memory."""
    got = bounded_child(transport, hostile.url(behaviour), keys)
    assert "OSError" in got["mro"] and "ResponseTooLarge" in got["mro"], got
    assert f"limit of {abi.APPSTORE_LIMIT_API_RESPONSE_BYTES >> 20} MiB" in got["message"], got
    if transport == "httpx":
        assert "TransportError" in got["mro"], got
    assert got["rise_kib"] < _RSS_RISE_KIB, f"peak RSS rose {got['rise_kib'] // 1024} MiB"


@pytest.mark.parametrize("behaviour", ["huge-2", "hugecl-64", "gzip-64", "gzip-1024"])
def test_ocsp_body_limit(keys: Path, hostile: Hostile, behaviour: str) -> None:
    """The OCSP transport callback stops at APPSTORE_LIMIT_OCSP_RESPONSE_BYTES (1 MiB, after inflating) and reports
    a failed exchange."""
    got = bounded_child("ocsp", hostile.url(behaviour) + "/ocsp", keys)
    assert got["result"] == abi.APPSTORE_TRANSPORT_RESULT_FAILED, got
    assert got["rise_kib"] < _RSS_RISE_KIB, f"peak RSS rose {got['rise_kib'] // 1024} MiB"


def test_ocsp_body_inflated(hostile: Hostile) -> None:
    """A gzip answer the size of the limit is handed on inflated (and without its Content-Encoding)."""
    result, seen = ocsp_callback(hostile.url("gzip-1") + "/ocsp", 10000)
    assert result == abi.APPSTORE_TRANSPORT_RESULT_OK and seen.status == 200
    assert bytes(seen.body) == b" " * abi.APPSTORE_LIMIT_OCSP_RESPONSE_BYTES
    assert not [h for h in seen.headers if h[0].lower() == b"content-encoding"], seen.headers


def test_body_limit_reached_not_passed(hostile: Hostile) -> None:
    """The limit itself is accepted; a body one read larger is not (urllib, inflated gzip)."""
    limit = abi.APPSTORE_LIMIT_OCSP_RESPONSE_BYTES
    r = _http.send("GET", hostile.url("hugecl-1"), {}, None, 10, limit=limit)
    assert r.status_code == 200 and len(r.content) == limit
    with pytest.raises(_http.ResponseTooLarge, match="limit of 1 MiB"):
        _http.send("GET", hostile.url("hugecl-2"), {}, None, 10, limit=limit)
    r = _http.send("GET", hostile.url("gzip-1"), {}, None, 10, limit=limit)
    assert r.content == b" " * limit and "Content-Encoding" not in r.headers, r.headers
    with pytest.raises(_http.ResponseTooLarge):
        _http.send("GET", hostile.url("gzip-2"), {}, None, 10, limit=limit)


def test_transport_callback_body_limit(keys: Path, hostile: Hostile) -> None:
    """Through the core (a real response object, the API's limit): a body beyond it is a transport failure."""
    info = core_call(keys, hostile.url("huge-64"))
    assert info.status == AppStoreStatus.TRANSPORT_ERROR and info.reason == FailureReason.TRANSPORT_FAILED, info


# ---- timeouts are deadlines ----------------------------------------------------------------------------------------

TIMEOUT = 1.5
# The drips last 600 s (a per-read timeout never fires, and a client waiting for the drip would take them all);
# the grace is >= 4x the slowest run seen on a loaded 2-core machine (under 7 s with a 1.5 s timeout) and still far
# below the drip. The timeout error itself is asserted too: the reason, not only the clock.
GRACE = 30.0


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("behaviour", ["drip-200", "dripall-200"])
def test_api_timeout_is_a_deadline(keys: Path, hostile: Hostile, transport: str, behaviour: str) -> None:
    """A server sending a byte every 200 ms (the body, or everything from the status line on) never trips a
    per-read timeout; the call still fails as a timeout soon after `timeout`."""
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as ei:
        api_call(keys, hostile.url(behaviour), transport, timeout=TIMEOUT)
    elapsed = time.monotonic() - t0
    assert elapsed < TIMEOUT + GRACE, f"took {elapsed:.1f} s with a timeout of {TIMEOUT} s"
    assert f"timeout of {TIMEOUT:g} s" in str(ei.value), str(ei.value)
    if transport == "httpx":
        import httpx

        assert isinstance(ei.value, httpx.TimeoutException)


@pytest.mark.parametrize("behaviour", ["drip-200", "dripall-200"])
def test_ocsp_timeout_is_a_deadline(hostile: Hostile, behaviour: str) -> None:
    t0 = time.monotonic()
    result, _ = ocsp_callback(hostile.url(behaviour) + "/ocsp", int(TIMEOUT * 1000))
    assert result == abi.APPSTORE_TRANSPORT_RESULT_TIMEOUT
    elapsed = time.monotonic() - t0
    assert elapsed < TIMEOUT + GRACE, f"took {elapsed:.1f} s with a timeout of {TIMEOUT} s"


def test_transport_callback_timeout(keys: Path, hostile: Hostile) -> None:
    """Through the core: the callback's deadline is the timeout_ms the library passes."""
    t0 = time.monotonic()
    info = core_call(keys, hostile.url("dripall-200"), timeout_ms=int(TIMEOUT * 1000))
    assert info.status == AppStoreStatus.TRANSPORT_ERROR and info.reason == FailureReason.TRANSPORT_TIMEOUT, info
    assert time.monotonic() - t0 < TIMEOUT + GRACE


# ---- key material is never echoed ----------------------------------------------------------------------------------


def _misplaced_key_calls(keys: Path, testpki: Path) -> Dict[str, Callable[[], Any]]:
    """Every string argument of the public API given the .p8 PEM text (a key pasted in the wrong place)."""
    pem = (keys / "p256.p8").read_text()
    key = pem.encode()
    dead = "http://127.0.0.1:9"  # nothing listens: calls that get as far as sending fail there
    root = (testpki / "root.der").read_bytes()
    tx = (testpki / "jws" / "tx-valid.jws").read_text().strip()

    def api(**kw: Any) -> Any:
        args = dict(signing_key=key, key_id=KEY_ID, issuer_id=ISSUER, bundle_id=BUNDLE,
                    environment=Environment.SANDBOX)
        args.update({k: v for k, v in kw.items() if k in args})
        return AppStoreServerAPIClient(**args, **{k: v for k, v in kw.items() if k not in args})

    return {
        "base_url": lambda: api(base_url=pem),
        "sandbox_base_url": lambda: api(environment=Environment.PRODUCTION, sandbox_fallback=True,
                                        sandbox_base_url=pem),
        "environment": lambda: api(environment=pem),
        "key_id": lambda: api(key_id=pem, base_url=dead).get_transaction_info("1"),
        "issuer_id": lambda: api(issuer_id=pem, base_url=dead).get_transaction_info("1"),
        "bundle_id": lambda: api(bundle_id=pem, base_url=dead).get_transaction_info("1"),
        "transaction_id": lambda: api(base_url=dead).get_transaction_info(pem),
        "app_account_token": lambda: api(base_url=dead).set_app_account_token("1", {"appAccountToken": pem}),
        "test_notification_token": lambda: api(base_url=dead).get_test_notification_status(pem),
        "status": lambda: api(base_url=dead).get_all_subscription_statuses("1", [pem]),
        "revision": lambda: api(base_url=dead).get_transaction_history("1", pem, None),
        "version": lambda: api(base_url=dead).get_transaction_history("1", None, None, pem),
        "verifier environment": lambda: SignedDataVerifier([root], False, pem, BUNDLE),
        "verifier bundle_id": lambda: SignedDataVerifier([root], False, Environment.SANDBOX, pem)
        .verify_and_decode_signed_transaction(tx),
        "signed data": lambda: SignedDataVerifier([root], False, Environment.SANDBOX, BUNDLE)
        .verify_and_decode_signed_transaction(pem),
        "verify kind": lambda: SignedDataVerifier([root], False, Environment.SANDBOX, BUNDLE)
        .verify_and_decode_json(pem, tx),
        "root certificate": lambda: SignedDataVerifier([key], False, Environment.SANDBOX, BUNDLE),
        "promo v1 nonce": lambda: PromotionalOfferSignatureCreator(key, KEY_ID, BUNDLE).create_signature(
            "p", "o", "u", pem, 1698148900000),
        "promo v1 product": lambda: PromotionalOfferSignatureCreator(key, KEY_ID, BUNDLE).create_signature(
            pem + "\u2063", "o", "u", "5E8B3B4C-3F4E-4C5B-9F0E-1A2B3C4D5E6F", 1698148900000),
        "intro transaction_id": lambda: IntroductoryOfferEligibilitySignatureCreator(
            key, KEY_ID, ISSUER, BUNDLE).create_signature("p", True, pem + "\x00"),
        "signer public_key": lambda: PromotionalOfferV2SignatureCreator(
            ExternalSigner(lambda m, d: b"", pem), KEY_ID, ISSUER, BUNDLE),
        "receipt": lambda: ReceiptUtility().extract_transaction_id_from_app_receipt(pem),
    }


def test_key_material_never_echoed(keys: Path, testpki: Path) -> None:
    """A PEM private key given as a base URL, an id, an environment, a parameter: whatever is raised names the
    argument but never shows the key (no line of its base64 body, in any case)."""
    lines = [line.lower() for line in key_lines(keys)]
    raised = 0
    for name, call in _misplaced_key_calls(keys, testpki).items():
        try:
            call()
            continue
        except Exception as e:  # noqa: BLE001 - any failure: its text is what is checked
            raised += 1
            text = " ".join([str(e), repr(e), str(getattr(e, "message", "")), str(e.__cause__ or "")]).lower()
        leaked = [line for line in lines if line in text]
        assert not leaked, f"{name}: the key shows in {text[:300]!r}"
    assert raised >= 15, f"only {raised} calls failed"


def test_oversized_parameter_refused_before_sending(keys: Path, hostile: Hostile) -> None:
    """A 5 MB transaction id is refused by the core (INVALID_ARGUMENT: Python's ValueError) before anything is signed
    or sent, as is a list of more than 1,000 product ids; the hostile server would have answered anything."""
    c = client(keys, hostile.url("ok"))
    with pytest.raises(ValueError, match="transactionId is 5000000 bytes; at most 8192 are accepted"):
        c.get_transaction_info("1" * 5_000_000)
