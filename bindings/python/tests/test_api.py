"""The API clients against the mock App Store server (Tests/support/mock_app_store.py): every endpoint of
api_cases.json through its Python method, sync and async (httpx and the urllib fallback); Apple's error payloads,
429 with Retry-After in its three forms, retries (the core decides, Python sleeps), pagination, the
_execute_request hook as Apple's users override it, and transport failures."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple
from uuid import UUID

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID, REPO, LoopTicker, arrivals

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.api_client import (
    APIError,
    APIException,
    AppStoreServerAPIClient,
    AsyncAppStoreServerAPIClient,
    GetTransactionHistoryVersion,
)
from appstoreserver.models.ConsumptionRequest import ConsumptionRequest
from appstoreserver.models.DeliveryStatus import DeliveryStatus
from appstoreserver.models.Environment import Environment
from appstoreserver.models.ExtendReasonCode import ExtendReasonCode
from appstoreserver.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserver.models.InAppOwnershipType import InAppOwnershipType
from appstoreserver.models.RefundPreference import RefundPreference
from appstoreserver.models.Status import Status
from appstoreserver.models.TransactionHistoryRequest import Order, ProductType, TransactionHistoryRequest

ENDPOINTS = {ep["name"]: ep for ep in json.loads((REPO / "spec" / "endpoints.json").read_text())["endpoints"]}
MODELS = set(json.loads((REPO / "spec" / "models.json").read_text())["models"])


def snake(name: str) -> str:
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s).lower()


def client(keys: Path, url: str, cls: Any = AppStoreServerAPIClient, **kw: Any) -> Any:
    return cls((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, base_url=url, **kw)


def _model_class(type_name: str) -> Any:
    import importlib

    name = {"NotificationData": "Data"}.get(type_name, type_name)
    return getattr(importlib.import_module(f"appstoreserver.models.{name}"), name)


def python_call(case: Dict[str, Any]) -> Tuple[str, List[Any], Dict[str, Any]]:
    """The Python method and arguments for an api_cases.json call (its params are the C ABI's params_json)."""
    name = case["endpoint"]
    params = case["params"]
    kwargs: Dict[str, Any] = {}
    if name == "getTransactionHistoryV1":
        ep = ENDPOINTS["getTransactionHistory"]
        method = "get_transaction_history"
        kwargs["version"] = GetTransactionHistoryVersion.V1
    else:
        ep = ENDPOINTS[name]
        method = snake(name)
        if name == "getTransactionHistory":  # Apple's default is version 1
            kwargs["version"] = GetTransactionHistoryVersion.V2
    args: List[Any] = []
    for p in ep["parameters"]:
        t = p["type"]
        if p["in"] == "body":
            args.append(base64.b64decode(params[p["name"]]) if t == "Bytes" else _model_class(t).from_dict(params["body"]))
        elif p["in"] == "query" and isinstance(t, str) and t in MODELS:  # a query model: keys flattened
            args.append(_model_class(t).from_dict({k: v for k, v in params.items() if k != "anyTransactionId"}))
        else:
            args.append(params.get(p["name"]))
    return method, args, kwargs


def expected_pages(case: Dict[str, Any]) -> List[Any]:
    return case["pages"] if case.get("pages") else [case["response"]]


def test_every_endpoint_is_a_method(api_cases: List[Dict[str, Any]]) -> None:
    names = {c["endpoint"] for c in api_cases}
    assert names == set(ENDPOINTS), "api_cases.json and spec/endpoints.json disagree"
    for name in ENDPOINTS:
        method = "get_transaction_history" if name == "getTransactionHistoryV1" else snake(name)
        assert callable(getattr(AppStoreServerAPIClient, method)), method
        assert asyncio.iscoroutinefunction(getattr(AsyncAppStoreServerAPIClient, method)), method


def _check_answer(case: Dict[str, Any], got: Any) -> None:
    want = expected_pages(case)[0]
    if want is None:
        assert got is None
    else:
        assert got is not None and got.to_dict() == want, f"{case['endpoint']}: {got!r}"


def test_endpoints_sync(keys: Path, mock_url: str, api_cases: List[Dict[str, Any]]) -> None:
    c = client(keys, mock_url)
    for case in api_cases:
        method, args, kwargs = python_call(case)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            got = getattr(c, method)(*args, **kwargs)
        _check_answer(case, got)


@pytest.mark.parametrize("transport", ["httpx", "urllib-thread"])
def test_endpoints_async(keys: Path, mock_url: str, api_cases: List[Dict[str, Any]], transport: str) -> None:
    async def run() -> None:
        c = client(keys, mock_url, AsyncAppStoreServerAPIClient)
        if transport == "httpx":
            assert c.http_client is not None, "httpx is installed in the test environment"
        else:
            await c.async_close()
            c.http_client = None
        try:
            for case in api_cases:
                method, args, kwargs = python_call(case)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    got = await getattr(c, method)(*args, **kwargs)
                _check_answer(case, got)
        finally:
            await c.async_close()

    asyncio.run(run())


def test_apple_style_models(keys: Path, mock_url: str) -> None:
    """Requests built with Apple's constructors (positional order, enum members) reach the mock as Apple sends them."""
    c = client(keys, mock_url)
    r = TransactionHistoryRequest(1698148800000, 1698148900000, ["com.example.a", "com.example.b"],
                                  [ProductType.AUTO_RENEWABLE, ProductType.CONSUMABLE], Order.DESCENDING,
                                  ["sub_group_1", "sub_group_2"], InAppOwnershipType.FAMILY_SHARED, False)
    page = c.get_transaction_history("2000000000000001", None, r, GetTransactionHistoryVersion.V2)
    assert page.signedTransactions == ["v2-1", "v2-2"] and page.hasMore and page.revision == "revision-page-2"
    assert page.environment is None and page.rawEnvironment == "LocalTestingxxx"  # unknown value kept raw
    # Apple's positional order: customerConsented, sampleContentProvided, deliveryStatus, consumptionPercentage, ...
    assert c.send_consumption_information("2000000000000001", ConsumptionRequest(
        True, True, DeliveryStatus.DELIVERED, 50000, RefundPreference.GRANT_PRORATED)) is None
    resp = c.extend_subscription_renewal_date("1000000000000001", ExtendRenewalDateRequest(
        extendByDays=45, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION,
        requestIdentifier="fdf964a4-233b-486c-aac1-97d8d52688ac"))
    assert resp.success is True and resp.effectiveDate == 1698148900000
    statuses = c.get_all_subscription_statuses("2000000000000001", [Status.EXPIRED, Status.ACTIVE])
    last = statuses.data[0].lastTransactions
    assert last[0].status == Status.ACTIVE and last[1].status is None and last[1].rawStatus == 99
    with pytest.warns(DeprecationWarning, match="send_consumption_information"):
        c.send_consumption_data("2000000000000001", _model_class("ConsumptionRequestV1").from_dict(
            {"customerConsented": True, "consumptionStatus": 1, "platform": 2, "sampleContentProvided": False,
             "deliveryStatus": 3, "accountTenure": 4, "playTime": 5, "lifetimeDollarsRefunded": 6,
             "lifetimeDollarsPurchased": 7, "userStatus": 4, "refundPreference": 3}))
    c.upload_image(UUID("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"), base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="),
        _model_class("ImageSize").FULL_SIZE)


# ---- errors -------------------------------------------------------------------------------------------------------


def test_error_payload(keys: Path, mock_url: str) -> None:
    c = client(keys, mock_url)
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("error-404-4040010")
    e = ei.value
    assert (e.http_status_code, e.raw_api_error, e.api_error) == (404, 4040010, APIError.TRANSACTION_ID_NOT_FOUND)
    assert e.error_message == "mock error 4040010"
    assert e.args == (404, 4040010, "mock error 4040010")
    assert e.status == AppStoreStatus.API_ERROR and e.reason == FailureReason.API_ERROR
    assert e.api_error_name == "transactionIdNotFound" and e.retry_after is None and e.retry_after_seconds is None
    # The answer's headers, looked up case-insensitively, every one kept in order.
    assert e.headers["content-type"] == "application/json" and e.headers["Content-Type"] == "application/json"
    assert "content-length" in e.headers and ("Content-Type", "application/json") in e.headers.multi_items()
    # An error code this version does not know: kept raw, api_error None.
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("error-400-4009999")
    assert ei.value.raw_api_error == 4009999 and ei.value.api_error is None
    # No App Store error payload.
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("plain500")
    assert ei.value.http_status_code == 500 and ei.value.raw_api_error is None and ei.value.args == (500,)
    assert ei.value.reason == FailureReason.HTTP_ERROR and "Content-Length" in ei.value.headers
    # A 2xx answer that does not decode.
    for tid in ("malformed", "badtype"):
        with pytest.raises(APIException) as ei:
            c.get_transaction_info(tid)
        assert ei.value.status == AppStoreStatus.INVALID_RESPONSE and ei.value.http_status_code == 200
        assert ei.value.reason == FailureReason.UNDECODABLE_RESPONSE and "content-type" in ei.value.headers
        # As Apple's Java: the decoding failure is the cause (Apple's Python raises the decoder's error itself).
        assert isinstance(ei.value.__cause__, ValueError) and str(ei.value.__cause__) == ei.value.message
    # Built by hand (as Apple's tests do): no answer, no headers.
    assert len(APIException(400).headers) == 0 and APIException(400).retry_after is None


def _sent(url: str, tid: str) -> int:
    """How many Get Transaction Info requests for `tid` the mock received so far."""
    return len(arrivals(url).get(f"GET /inApps/v1/transactions/{tid}", []))


@pytest.mark.parametrize("tid,lo,hi", [("ratelimit", 7, 7), ("ratelimit-ms-5000", 4, 5), ("ratelimit-date-9", 7, 10)])
def test_rate_limit_retry_after(keys: Path, mock_url: str, tid: str, lo: int, hi: int) -> None:
    c = client(keys, mock_url)  # no retries by default
    before = _sent(mock_url, tid)
    t0 = time.time()
    with pytest.raises(APIException) as ei:
        c.get_transaction_info(tid)
    t1 = time.time()
    e = ei.value
    assert e.http_status_code == 429 and e.api_error == APIError.RATE_LIMIT_EXCEEDED
    assert e.reason == FailureReason.RATE_LIMITED
    # retry_after: a UNIX time in milliseconds (as Apple documents Retry-After), whatever form the answer used;
    # retry_after_seconds: the seconds from the answer; retry_at_ms: retry_after's name before 0.2.0.
    assert lo <= e.retry_after_seconds <= hi, e.retry_after_seconds
    # The answer arrived between t0 and t1 (measured here, so load cannot break it); 1 s for whole seconds.
    assert t0 + e.retry_after_seconds - 1 <= e.retry_after / 1000 <= t1 + e.retry_after_seconds + 1, (e.retry_after, t0, t1)
    assert e.retry_at_ms == e.retry_after and e.retry_after > 10**12
    if tid.startswith("ratelimit-ms-"):  # Apple's form: the header's value, as it is
        assert e.retry_after == int(e.headers["retry-after"])
    else:
        assert e.headers["Retry-After"] != str(e.retry_after)
    assert _sent(mock_url, tid) - before == 1, "no retries are configured: one request, nothing waited for"


def test_retries(keys: Path, mock_url: str) -> None:
    c = client(keys, mock_url, max_retries=3, initial_backoff=0.01, max_backoff=2)
    assert c.get_transaction_info("flaky429-2-py").signedTransactionInfo == "attempt-3"
    assert c.get_transaction_info("flaky4040002-1-py").signedTransactionInfo == "attempt-2"
    assert c.get_transaction_info("flaky5000001-3-py").signedTransactionInfo == "attempt-4"
    with pytest.raises(APIException) as ei:  # one more failure than retries
        c.get_transaction_info("flaky429-4-py")
    assert ei.value.http_status_code == 429
    # Retry-After as Apple sends it (UNIX ms) and as an HTTP-date: the retry waits until that time.
    got = c.get_transaction_info("flakyms700-1-py").signedTransactionInfo
    assert re.fullmatch(r"attempt-2 after (\d+)", got) and int(got.split()[-1]) >= 650, got
    got = c.get_transaction_info("flakydate1-1-py").signedTransactionInfo
    assert int(got.split()[-1]) >= 400, got
    # A Retry-After further away than max_backoff is not waited for.
    before = _sent(mock_url, "ratelimit-long")
    t0 = time.time()
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("ratelimit-long")
    t1 = time.time()
    # Not waited for: the one request is all the server saw (the mechanism, not a clock load can stretch).
    assert _sent(mock_url, "ratelimit-long") - before == 1 and ei.value.retry_after_seconds == 3600
    assert (t0 + 3599) * 1000 <= ei.value.retry_after <= (t1 + 3601) * 1000, (ei.value.retry_after, t0, t1)
    # Not retryable: an ordinary error is raised at once.
    with pytest.raises(APIException):
        c.get_transaction_info("error-400-4000006")


def test_retry_decision_comes_from_the_core(keys: Path, mock_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python sleeps (through the client's _sleep) for exactly the WAITs appstore_api_call_next answers, and sends
    again only when it answers SEND: the backoff doubles from initial_backoff, as the core decides."""
    from appstoreserver import api_client
    from appstoreserver._generated import abi

    actions: List[Tuple[int, int]] = []
    real_lib = api_client.lib

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(real_lib, name)

        def appstore_api_call_next(self, call: Any, now: int, action: Any, wait: Any, err: Any) -> int:
            st = real_lib.appstore_api_call_next(call, now, action, wait, err)
            if st == 0:
                actions.append((action._obj.value, wait._obj.value))
            return st

    monkeypatch.setattr(api_client, "lib", Spy())
    slept: List[float] = []
    c = client(keys, mock_url, max_retries=2, initial_backoff=0.25, max_backoff=10)
    c._sleep = slept.append
    assert c.get_transaction_info("flaky5000001-2-spy").signedTransactionInfo == "attempt-3"
    send, wait, done = abi.APPSTORE_API_ACTION_SEND, abi.APPSTORE_API_ACTION_WAIT, abi.APPSTORE_API_ACTION_DONE
    assert actions == [(send, 0), (wait, 250), (send, 0), (wait, 500), (send, 0), (done, 0)], actions
    assert slept == [0.25, 0.5], slept  # exponential backoff, from the core


def test_retried_answers_are_the_context(keys: Path) -> None:
    """Each answer the call went past (retried) is the __context__ of the next failure: the exception raised carries
    every attempt's."""
    c = client(keys, "https://api.example.test", max_retries=2, initial_backoff=0.01)
    answers = [FakeResponse(500, {"errorCode": 5000001, "errorMessage": "first"}),
               FakeResponse(429, {"errorCode": 4290000, "errorMessage": "second"}),
               FakeResponse(500, {"errorCode": 5000001, "errorMessage": "third"})]
    c._execute_request = lambda *a: answers.pop(0)
    c._sleep = lambda seconds: None
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("1")
    chain, e = [], ei.value
    while e is not None:
        assert isinstance(e, APIException)
        chain.append((e.http_status_code, e.error_message))
        e = e.__context__
    assert chain == [(500, "third"), (429, "second"), (500, "first")] and answers == []


def test_async_retry_does_not_block_the_loop(keys: Path, mock_url: str) -> None:
    async def run() -> Tuple[str, int]:
        c = client(keys, mock_url, AsyncAppStoreServerAPIClient, max_retries=2, initial_backoff=0.01, max_backoff=5)
        ticker = LoopTicker().start()
        try:  # a 2 s wait: 40 ticks of 50 ms on an idle loop, 8x the 5 asserted (a blocked loop ticks at most once)
            r = await c.get_transaction_info("flakyms2000-1-async")
        finally:
            ticker.stop()
            await c.async_close()
        return r.signedTransactionInfo, ticker.ticks

    info, ticks = asyncio.run(run())
    assert info.startswith("attempt-2 after "), info
    assert ticks >= 5, f"the event loop was blocked during the retry wait ({ticks} ticks)"


def test_async_errors(keys: Path, mock_url: str) -> None:
    async def run() -> None:
        c = client(keys, mock_url, AsyncAppStoreServerAPIClient)
        try:
            with pytest.raises(APIException) as ei:
                await c.get_transaction_info("ratelimit")
            assert ei.value.http_status_code == 429 and ei.value.retry_after_seconds == 7
            assert ei.value.retry_after > time.time() * 1000 and ei.value.headers["retry-after"] == "7"
        finally:
            await c.async_close()

    asyncio.run(run())


# ---- pagination ---------------------------------------------------------------------------------------------------


def test_pagination(keys: Path, mock_url: str, api_cases: List[Dict[str, Any]]) -> None:
    c = client(keys, mock_url)
    by = {x["endpoint"]: x for x in api_cases}
    pages = list(c.iter_refund_history("2000000000000001"))
    assert [p.to_dict() for p in pages] == by["getRefundHistory"]["pages"]
    _, args, _ = python_call(by["getTransactionHistory"])
    pages = list(c.iter_transaction_history("2000000000000001", args[2]))
    assert [p.to_dict() for p in pages] == by["getTransactionHistory"]["pages"]
    _, args, _ = python_call(by["getNotificationHistory"])
    pages = list(c.iter_notification_history(args[1]))
    assert [p.to_dict() for p in pages] == by["getNotificationHistory"]["pages"]
    item = pages[0].notificationHistory[0].sendAttempts[1]
    assert item.sendAttemptResult is None and item.rawSendAttemptResult == "CARRIER_PIGEON"
    # Apple's way, page by page.
    second = c.get_refund_history("2000000000000001", "revision-page-2")
    assert second.signedTransactions == ["refund-3"] and second.hasMore is False

    async def run() -> List[Any]:
        a = client(keys, mock_url, AsyncAppStoreServerAPIClient)
        try:
            return [p async for p in a.iter_refund_history("2000000000000001")]
        finally:
            await a.async_close()

    assert [p.to_dict() for p in asyncio.run(run())] == by["getRefundHistory"]["pages"]


# ---- the _execute_request hook --------------------------------------------------------------------------------------


class FakeResponse:
    """What Apple's tests return from a replaced _execute_request (requests-like)."""

    def __init__(self, status: int, body: Any, content_type: str = "application/json"):
        self.status_code = status
        self.headers = {"content-type": content_type}
        self._body = body

    def json(self) -> Any:
        return self._body


def test_execute_request_override_as_apple_users_do(keys: Path) -> None:
    c = client(keys, "https://api.example.test")
    seen = []

    def fake(method: str, url: str, params: Any, headers: Any, json: Any, data: Any) -> FakeResponse:
        seen.append((method, url, params, headers, json, data))
        return FakeResponse(200, {"signedTransactions": ["x"], "revision": "r2", "hasMore": False})

    c._execute_request = fake
    r = TransactionHistoryRequest(sort=Order.ASCENDING, productTypes=[ProductType.CONSUMABLE], revoked=True,
                                  startDate=123)
    page = c.get_transaction_history("1234", "r1", r, GetTransactionHistoryVersion.V2)
    assert page.signedTransactions == ["x"] and page.revision == "r2"
    method, url, params, headers, body, data = seen[0]
    assert method == "GET" and url == "https://api.example.test/inApps/v2/history/1234"
    assert params == {"revision": ["r1"], "startDate": ["123"], "productType": ["CONSUMABLE"], "sort": ["ASCENDING"],
                      "revoked": ["true"]}
    assert headers["Authorization"].startswith("Bearer ") and headers["Accept"] == "application/json"
    assert body is None and data is None
    # A JSON body arrives as a dict; raw bytes (image upload) as data with Content-Type image/png.
    seen.clear()
    c._execute_request = lambda *a: (seen.append(a), FakeResponse(200, {}))[1]
    c.extend_subscription_renewal_date("77", ExtendRenewalDateRequest(3, ExtendReasonCode.OTHER, "req-1"))
    assert seen[0][0] == "PUT" and seen[0][4] == {"extendByDays": 3, "extendReasonCode": 2, "requestIdentifier": "req-1"}
    assert "Content-Type" not in seen[0][3] and seen[0][5] is None  # requests adds it for json=, as in Apple's
    c.upload_image("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", b"\x89PNG...")
    assert seen[1][4] is None and seen[1][5] == b"\x89PNG..." and seen[1][3]["Content-Type"] == "image/png"
    # Apple's error handling through the hook: Apple's error payload with content-type application/json.
    c._execute_request = lambda *a: FakeResponse(400, {"errorCode": 4000006, "errorMessage": "Invalid transaction id."})
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("1")
    assert ei.value.api_error == APIError.INVALID_TRANSACTION_ID and ei.value.error_message == "Invalid transaction id."
    # The headers of the hook's response (a requests-like dict here) come back on the exception.
    answer = FakeResponse(401, {})
    answer.headers = {"Content-Type": "text/plain", "X-Apple-Request-Id": "req-1"}
    c._execute_request = lambda *a: answer
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("1")
    assert ei.value.http_status_code == 401 and ei.value.headers["x-apple-request-id"] == "req-1"
    assert ei.value.headers.multi_items() == [("Content-Type", "text/plain"), ("X-Apple-Request-Id", "req-1")]


def test_execute_request_override_async(keys: Path) -> None:
    async def run() -> None:
        c = client(keys, "https://api.example.test", AsyncAppStoreServerAPIClient)
        seen = []

        async def fake(method: str, url: str, params: Any, headers: Any, json: Any, data: Any) -> FakeResponse:
            seen.append((method, url))
            return FakeResponse(200, {"signedTransactionInfo": "ok"})

        c._execute_request = fake
        try:
            assert (await c.get_transaction_info("5")).signedTransactionInfo == "ok"
        finally:
            await c.async_close()
        assert seen == [("GET", "https://api.example.test/inApps/v1/transactions/5")]

    asyncio.run(run())


# What Apple's library (appstoreserverlibrary 3.1, api_client.py) hands _execute_request for each api_cases.json call,
# written from its source: the path as its f-strings format it (str arguments as given, a UUID lowercased), query
# parameters as lists (str(startDate), the caller's productIds, enum .value strings, str(revoked), Status values as
# ints; {} without parameters), the body through _get_request_json (a dict; UUIDs lowercased, None fields left out)
# or the image bytes as data.
_UUID_REF = "3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"
_HISTORY_QUERY = {"startDate": ["1698148800000"], "endDate": ["1698148900000"],
                  "productId": ["com.example.a", "com.example.b"], "productType": ["AUTO_RENEWABLE", "CONSUMABLE"],
                  "sort": ["DESCENDING"], "subscriptionGroupIdentifier": ["sub_group_1", "sub_group_2"],
                  "inAppOwnershipType": ["FAMILY_SHARED"], "revoked": ["False"]}
_PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg==")
APPLE_HOOK_ARGS: Dict[str, Tuple[str, str, Dict[str, Any], Any, Any]] = {  # endpoint: (method, path, params, json, data)
    "getTransactionInfo": ("GET", "/inApps/v1/transactions/2000000000000001", {}, None, None),
    "getTransactionHistory": ("GET", "/inApps/v2/history/2000000000000001", _HISTORY_QUERY, None, None),
    "getTransactionHistoryV1": ("GET", "/inApps/v1/history/2000000000000001", _HISTORY_QUERY, None, None),
    "getAllSubscriptionStatuses": ("GET", "/inApps/v1/subscriptions/2000000000000001", {"status": [2, 1]}, None, None),
    "getRefundHistory": ("GET", "/inApps/v2/refund/lookup/2000000000000001", {}, None, None),
    "lookUpOrderId": ("GET", "/inApps/v1/lookup/MQ12/ab cd?#%", {}, None, None),
    "getAppTransactionInfo": ("GET", "/inApps/v1/transactions/appTransactions/2000000000000001", {}, None, None),
    "finishTransaction": ("POST", "/inApps/v1/transactions/2000000000000001/finish", {}, None, None),
    "sendConsumptionData": ("PUT", "/inApps/v1/transactions/consumption/2000000000000001", {}, {
        "customerConsented": True, "consumptionStatus": 1, "platform": 2, "sampleContentProvided": False,
        "deliveryStatus": 3, "accountTenure": 4, "playTime": 5, "lifetimeDollarsRefunded": 6,
        "lifetimeDollarsPurchased": 7, "userStatus": 4, "refundPreference": 3}, None),
    "sendConsumptionInformation": ("PUT", "/inApps/v2/transactions/consumption/2000000000000001", {}, {
        "customerConsented": True, "consumptionPercentage": 50000, "deliveryStatus": "DELIVERED",
        "refundPreference": "GRANT_PRORATED", "sampleContentProvided": True}, None),
    "setAppAccountToken": ("PUT", "/inApps/v1/transactions/1000000000000001/appAccountToken", {},
                           {"appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"}, None),
    "extendSubscriptionRenewalDate": ("PUT", "/inApps/v1/subscriptions/extend/1000000000000001", {}, {
        "extendByDays": 45, "extendReasonCode": 1, "requestIdentifier": "fdf964a4-233b-486c-aac1-97d8d52688ac"}, None),
    "extendRenewalDateForAllActiveSubscribers": ("POST", "/inApps/v1/subscriptions/extend/mass", {}, {
        "extendByDays": 45, "extendReasonCode": 1, "requestIdentifier": "fdf964a4-233b-486c-aac1-97d8d52688ac",
        "storefrontCountryCodes": ["USA", "MEX"], "productId": "com.example.productId"}, None),
    "getStatusOfSubscriptionRenewalDateExtensions": (
        "GET", "/inApps/v1/subscriptions/extend/mass/com.example.product/20fba8a0-2b80-4a7d-a17f-85c1854727f8", {},
        None, None),
    "requestTestNotification": ("POST", "/inApps/v1/notifications/test", {}, None, None),
    "getTestNotificationStatus": (
        "GET", "/inApps/v1/notifications/test/8cd2974c-f905-492a-bf9a-b2f47c791d19_1700000000000", {}, None, None),
    "getNotificationHistory": ("POST", "/inApps/v1/notifications/history", {}, {
        "startDate": 1698148900000, "endDate": 1698148950000, "notificationType": "SUBSCRIBED",
        "notificationSubtype": "INITIAL_BUY", "transactionId": "999733843", "onlyFailures": True}, None),
    "uploadImage": ("PUT", "/inApps/v1/messaging/image/A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D",
                    {"imageSize": ["FULL_SIZE"]}, None, _PNG),
    "deleteImage": ("DELETE", "/inApps/v1/messaging/image/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", {}, None, None),
    "getImageList": ("GET", "/inApps/v1/messaging/image/list", {}, None, None),
    "uploadMessage": ("PUT", "/inApps/v1/messaging/message/b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", {}, {
        "header": "Header text", "body": "Body text",
        "image": {"imageIdentifier": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "altText": "Alt text"},
        "headerPosition": "ABOVE_IMAGE",
        "bulletPoints": [{"text": "Point one", "imageIdentifier": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
                          "altText": "Bullet image"}]}, None),
    "deleteMessage": ("DELETE", "/inApps/v1/messaging/message/b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", {}, None, None),
    "getMessageList": ("GET", "/inApps/v1/messaging/message/list", {}, None, None),
    "configureDefaultMessage": ("PUT", "/inApps/v1/messaging/default/com.example.product/en-US", {},
                                {"messageIdentifier": "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e"}, None),
    "deleteDefaultMessage": ("DELETE", "/inApps/v1/messaging/default/com.example.product/en-US", {}, None, None),
    "getDefaultMessage": ("GET", "/inApps/v1/messaging/default/com.example.product/en-US", {}, None, None),
    "configureRealtimeURL": ("PUT", "/inApps/v1/messaging/realtime/url", {},
                             {"realtimeURL": "https://example.com/realtime?x=1"}, None),
    "deleteRealtimeURL": ("DELETE", "/inApps/v1/messaging/realtime/url", {}, None, None),
    "getRealtimeURL": ("GET", "/inApps/v1/messaging/realtime/url", {}, None, None),
    "initiatePerformanceTest": ("POST", "/inApps/v1/messaging/performanceTest", {},
                                {"originalTransactionId": "1000000000000001"}, None),
    "getPerformanceTestResults": ("GET", "/inApps/v1/messaging/performanceTest/result/perf-test-1", {}, None, None),
    "cancelSubscription": ("POST", "/advancedCommerce/v1/subscription/cancel/2000000000000001", {},
                           {"requestInfo": {"requestReferenceId": _UUID_REF}, "storefront": "USA"}, None),
    "changeSubscriptionMetadata": ("POST", "/advancedCommerce/v1/subscription/changeMetadata/2000000000000001", {}, {
        "descriptors": {"description": "New description", "displayName": "New name", "effective": "NEXT_BILL_CYCLE"},
        "items": [{"currentSKU": "com.example.sku.1", "description": "Item", "displayName": "Item name",
                   "effective": "IMMEDIATELY", "SKU": "com.example.sku.2"}],
        "requestInfo": {"requestReferenceId": _UUID_REF}, "taxCode": "C003-00-1"}, None),
    "changeSubscriptionPrice": ("POST", "/advancedCommerce/v1/subscription/changePrice/2000000000000001", {}, {
        "currency": "USD", "items": [{"SKU": "com.example.sku.1", "price": 4990, "dependentSKUs": ["com.example.sku.2"]}],
        "requestInfo": {"requestReferenceId": _UUID_REF}}, None),
    "migrateSubscription": ("POST", "/advancedCommerce/v1/subscription/migrate/2000000000000001", {}, {
        "descriptors": {"description": "Pro", "displayName": "Pro"},
        "items": [{"description": "Item", "displayName": "Item", "SKU": "com.example.sku.1"}],
        "requestInfo": {"requestReferenceId": _UUID_REF}, "targetProductId": "com.example.ac.product",
        "taxCode": "C003-00-1"}, None),
    "revokeSubscription": ("POST", "/advancedCommerce/v1/subscription/revoke/2000000000000001", {}, {
        "refundReason": "LEGAL", "refundRiskingPreference": True, "refundType": "PRORATED",
        "requestInfo": {"requestReferenceId": _UUID_REF}}, None),
    "requestTransactionRefund": ("POST", "/advancedCommerce/v1/transaction/requestRefund/2000000000000001", {}, {
        "items": [{"SKU": "com.example.sku.1", "refundAmount": 990, "refundReason": "OTHER", "refundType": "CUSTOM",
                   "revoke": False}],
        "refundRiskingPreference": False, "requestInfo": {"requestReferenceId": _UUID_REF}, "currency": "USD"}, None),
}


def ours_where_we_differ(endpoint: str, path: str, params: Dict[str, Any], body: Any) -> Tuple[str, Dict[str, Any], Any]:
    """Apple's hook arguments with the deliberate differences (bindings/python/README.md, "Migrating from Apple's
    library"), each where we send what Apple's API documents and Apple's library does not."""
    params = dict(params)
    if "revoked" in params:  # Apple's str(False) is "False"; the API documents true / false
        params["revoked"] = [params["revoked"][0].lower()]
    if endpoint == "sendConsumptionData":  # the API requires appAccountToken (empty when none); Apple's leaves it out
        body = dict(body, appAccountToken="")
    if endpoint == "lookUpOrderId":  # path parameters percent-encoded; Apple's inserts them as they are
        path = "/inApps/v1/lookup/MQ12%2Fab%20cd%3F%23%25"
    if endpoint == "uploadImage":  # a UUID path parameter given as str is lowercased, as Apple's formats a UUID
        head, _, uuid = path.rpartition("/")
        path = f"{head}/{uuid.lower()}"
    return path, params, body


def _check_hook_args(case: Dict[str, Any], got: Tuple[Any, ...]) -> None:
    name = case["endpoint"]
    method, url, params, headers, body, data = got
    want_method, path, want_params, want_json, want_data = APPLE_HOOK_ARGS[name]
    path, want_params, want_json = ours_where_we_differ(name, path, want_params, want_json)
    assert (method, url) == (want_method, "https://api.example.test" + path), name
    assert type(params) is dict and params == want_params, (name, params)
    for k, values in params.items():  # lists, of str (Status values: int, as [s.value for s in status])
        assert type(values) is list and all(type(v) is (int if k == "status" else str) for v in values), (name, k)
    names = ["User-Agent", "Authorization", "Accept"] + (["Content-Type"] if want_data is not None else [])
    assert type(headers) is dict and list(headers) == names, (name, list(headers))
    assert headers["User-Agent"].startswith("appstoreserver/") and headers["Authorization"].startswith("Bearer ")
    assert headers["Accept"] == "application/json"
    if want_data is not None:
        assert headers["Content-Type"] == "image/png"
    assert (type(body) is dict and body == want_json) if want_json is not None else body is None, (name, body)
    assert (type(data) is bytes and data == want_data) if want_data is not None else data is None, name


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_execute_request_gets_what_apples_library_passes(keys: Path, api_cases: List[Dict[str, Any]],
                                                         flavour: str) -> None:
    """An override of _execute_request receives, for every endpoint, the arguments Apple's library passes (written
    out above from Apple's source), apart from the listed deliberate differences."""
    assert set(APPLE_HOOK_ARGS) == {c["endpoint"] for c in api_cases}
    seen: List[Tuple[Any, ...]] = []

    def answer(case: Dict[str, Any]) -> FakeResponse:
        want = expected_pages(case)[0]
        return FakeResponse(200, {} if want is None else want)

    def call(c: Any, case: Dict[str, Any]) -> Any:
        method, args, kwargs = python_call(case)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return getattr(c, method)(*args, **kwargs)

    if flavour == "sync":
        c = client(keys, "https://api.example.test")
        for case in api_cases:
            seen.clear()
            c._execute_request = lambda *a, case=case: (seen.append(a), answer(case))[1]
            call(c, case)
            assert len(seen) == 1
            _check_hook_args(case, seen[0])
        return

    async def run() -> None:
        c = client(keys, "https://api.example.test", AsyncAppStoreServerAPIClient)
        try:
            for case in api_cases:
                seen.clear()

                async def hook(*a: Any, case: Dict[str, Any] = case) -> FakeResponse:
                    seen.append(a)
                    return answer(case)

                c._execute_request = hook
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    await call(c, case)
                assert len(seen) == 1
                _check_hook_args(case, seen[0])
        finally:
            await c.async_close()

    asyncio.run(run())


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_changed_requests_go_out_as_requests_sends_them(keys: Path, mock_url: str, api_cases: List[Dict[str, Any]],
                                                        flavour: str) -> None:
    """A subclass that adds a header and passes everything else to the default transport: the request is rebuilt from
    the hook's arguments (Status ints, the json dict, the image bytes) and the mock finds every one as it expects
    (a JSON body with Content-Type application/json, as requests adds it)."""

    class Traced(AppStoreServerAPIClient):
        def _execute_request(self, method, url, params, headers, json, data):  # type: ignore[no-untyped-def]
            return super()._execute_request(method, url, params, dict(headers, **{"X-Trace": "1"}), json, data)

    class AsyncTraced(AsyncAppStoreServerAPIClient):
        async def _execute_request(self, method, url, params, headers, json, data):  # type: ignore[no-untyped-def]
            return await super()._execute_request(method, url, params, dict(headers, **{"X-Trace": "1"}), json, data)

    async def run() -> None:
        c = client(keys, mock_url, AsyncTraced)
        try:
            for case in api_cases:
                method, args, kwargs = python_call(case)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    _check_answer(case, await getattr(c, method)(*args, **kwargs))
        finally:
            await c.async_close()

    if flavour == "async":
        asyncio.run(run())
        return
    c = client(keys, mock_url, Traced)
    for case in api_cases:
        method, args, kwargs = python_call(case)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            _check_answer(case, getattr(c, method)(*args, **kwargs))


def test_subclass_changes_the_request(keys: Path, mock_url: str) -> None:
    """A subclass may change what it sends and call the default transport: the changed request goes out."""

    class Tagged(AppStoreServerAPIClient):
        def _execute_request(self, method, url, params, headers, json, data):  # type: ignore[no-untyped-def]
            return super()._execute_request(method, url.replace("2000000000000001", "error-409-4090000"), params,
                                            headers, json, data)

    with pytest.raises(APIException) as ei:
        client(keys, mock_url, Tagged).get_transaction_info("2000000000000001")
    assert ei.value.raw_api_error == 4090000


def test_transport_failures_are_not_retried(keys: Path, mock_url: str) -> None:
    """The transport's exception is raised unchanged, at once; the core's account of it (the endpoint, the kind of
    failure the loop reported) is a note on it."""
    c = client(keys, mock_url, max_retries=3, timeout=0.3)
    before = _sent(mock_url, "slow-1500")
    with pytest.raises(TimeoutError) as ei:
        c.get_transaction_info("slow-1500")
    # A retry would have been sent before the call raised; the first request may still be on its way to the mock's
    # log (the 0.3 s timeout can beat it on a loaded machine), so wait for it, then count.
    deadline = time.monotonic() + 30
    while _sent(mock_url, "slow-1500") == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sent(mock_url, "slow-1500") - before == 1, "a transport failure must not be retried"
    assert [n for n in ei.value.__notes__ if n.startswith("getTransactionInfo: transport timeout: ")
            and n.endswith("[TRANSPORT_TIMEOUT]")], ei.value.__notes__
    dead = client(keys, "http://127.0.0.1:9", max_retries=3)  # nothing listens on the discard port
    with pytest.raises(OSError) as ei:
        dead.get_transaction_info("1")
    assert [n for n in ei.value.__notes__ if n.endswith("[TRANSPORT_UNREACHABLE]")], ei.value.__notes__


def test_client_configuration(keys: Path) -> None:
    key = (keys / "p256.p8").read_bytes()
    with pytest.raises(ValueError, match="Xcode is not a supported environment"):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.XCODE)
    with pytest.raises(ValueError, match="Invalid environment provided"):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, "Nowhere")  # type: ignore[arg-type]
    c = AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, "Production")  # type: ignore[arg-type]
    assert c._base_url == "https://api.storekit.apple.com"
    assert AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.LOCAL_TESTING)._base_url == \
        "https://local-testing-base-url"
    with pytest.raises(ValueError):
        AppStoreServerAPIClient((keys / "p384.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)
    with pytest.raises(TypeError):
        AppStoreServerAPIClient(key, KEY_ID, None, BUNDLE, Environment.SANDBOX)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, max_retries=101)
