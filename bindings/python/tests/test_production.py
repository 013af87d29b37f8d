"""The API clients' production features, beyond Apple's library, against the mock App Store server: the Sandbox
fallback (a "Production" mock that knows no id, --not-found-lookups, and the normal mock as Sandbox) and the
client-side rate limit (the mock's arrival times, GET /mock/arrivals), sync and async."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID, REPO, arrivals, LoopTicker
from test_api import FakeResponse, expected_pages, python_call

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.api_client import APIError, APIException, AppStoreServerAPIClient, AsyncAppStoreServerAPIClient
from appstoreserver.models.Environment import Environment

SPEC = json.loads((REPO / "spec" / "endpoints.json").read_text())["endpoints"]
LOOKUPS = {ep["name"] for ep in SPEC if ep.get("sandboxFallback")}
NEITHER = "Production answered transactionIdNotFound (4040010); then Sandbox: "
NEITHER_401 = "Production answered HTTP 401 (an app never released there); then Sandbox: "


def production(keys: Path, url: str, cls: Any = AppStoreServerAPIClient, **kw: Any) -> Any:
    return cls((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION, base_url=url, **kw)


def sandbox(keys: Path, url: str, cls: Any = AppStoreServerAPIClient, **kw: Any) -> Any:
    return cls((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, base_url=url, **kw)


def _case_path(case: Dict[str, Any]) -> str:
    return f"{case['method']} {case['path']}"


def _count(url: str, key: str) -> int:
    return len(arrivals(url).get(key, []))


def _first_page(case: Dict[str, Any]) -> Any:
    return expected_pages(case)[0]


def _dict(model: Any) -> Any:
    return None if model is None else model.to_dict()


# ---- Sandbox fallback ---------------------------------------------------------------------------------------------


def test_lookups_fall_back_to_sandbox(keys: Path, mock_url: str, not_found_url: str,
                                      api_cases: List[Dict[str, Any]]) -> None:
    """Every lookup is answered by the Sandbox mock (after one 404 4040010 from Production) and reports Sandbox; every
    other endpoint is answered by Production and reports Production, Sandbox never asked."""
    c = production(keys, not_found_url, sandbox_fallback=True, sandbox_base_url=mock_url)
    seen = set()
    for case in api_cases:
        name = case["endpoint"]
        method, args, kwargs = python_call(case)
        before_prod, before_sandbox = _count(not_found_url, _case_path(case)), _count(mock_url, _case_path(case))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            got, env = getattr(c.with_environment, method)(*args, **kwargs)
        assert _dict(got) == _first_page(case), name
        asked_prod = _count(not_found_url, _case_path(case)) - before_prod
        asked_sandbox = _count(mock_url, _case_path(case)) - before_sandbox
        if name in LOOKUPS:
            seen.add(name)
            assert env == Environment.SANDBOX, name
            assert (asked_prod, asked_sandbox) == (1, 1), (name, asked_prod, asked_sandbox)
        else:
            assert env == Environment.PRODUCTION, name
            assert asked_sandbox == 0, f"{name} went to Sandbox"
    assert seen == LOOKUPS and len(seen) == 6
    # The plain methods return the answer alone (Apple's shape).
    info = c.get_transaction_info("2000000000000001")
    assert info.signedTransactionInfo == "signed-transaction-info"


def test_without_the_option_the_404_is_raised(keys: Path, not_found_url: str, api_cases: List[Dict[str, Any]]) -> None:
    for cls_kw in ({}, {"sandbox_fallback": False}):
        c = production(keys, not_found_url, **cls_kw)
        for case in api_cases:
            if case["endpoint"] not in LOOKUPS:
                continue
            method, args, kwargs = python_call(case)
            with warnings.catch_warnings(), pytest.raises(APIException) as ei:
                warnings.simplefilter("ignore", DeprecationWarning)
                getattr(c, method)(*args, **kwargs)
            e = ei.value
            assert (e.http_status_code, e.api_error) == (404, APIError.TRANSACTION_ID_NOT_FOUND), case["endpoint"]
            assert not e.message.startswith(NEITHER)


def test_non_lookups_do_not_fall_back(keys: Path) -> None:
    """transactionIdNotFound from an endpoint that is not a lookup is final: one request, to Production."""
    c = production(keys, "https://production.example.test", sandbox_fallback=True,
                   sandbox_base_url="https://sandbox.example.test")
    seen: List[str] = []

    def not_found(method: str, url: str, *rest: Any) -> FakeResponse:
        seen.append(url)
        return FakeResponse(404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."})

    c._execute_request = not_found
    for call in (lambda: c.look_up_order_id("W002182"), lambda: c.finish_transaction("2000000000000001")):
        seen.clear()
        with pytest.raises(APIException) as ei:
            call()
        assert ei.value.raw_api_error == 4040010 and not ei.value.message.startswith(NEITHER)
        assert len(seen) == 1 and seen[0].startswith("https://production.example.test/"), seen
    # A lookup through the same hook does fall back, to the Sandbox URL, with a fresh request.
    seen.clear()
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("1")
    assert [u.split("/inApps")[0] for u in seen] == ["https://production.example.test", "https://sandbox.example.test"]
    assert ei.value.message.startswith(NEITHER)


def test_fallback_after_retries_and_other_errors(keys: Path) -> None:
    """Production's retryable errors are retried first; an error other than 4040010 does not fall back."""
    c = production(keys, "https://production.example.test", sandbox_fallback=True,
                   sandbox_base_url="https://sandbox.example.test", max_retries=2, initial_backoff=0)
    answers = [FakeResponse(500, {"errorCode": 5000001, "errorMessage": "Internal."}),
               FakeResponse(404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."}),
               FakeResponse(200, {"signedTransactionInfo": "from-sandbox"})]
    seen: List[str] = []

    def hook(method: str, url: str, *rest: Any) -> FakeResponse:
        seen.append(url.split("/inApps")[0])
        return answers.pop(0)

    c._execute_request = hook
    info, env = c.with_environment.get_transaction_info("1")
    assert (info.signedTransactionInfo, env) == ("from-sandbox", Environment.SANDBOX)
    assert seen == ["https://production.example.test"] * 2 + ["https://sandbox.example.test"]
    c._execute_request = lambda *a: FakeResponse(400, {"errorCode": 4000006, "errorMessage": "Invalid transaction id."})
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("1")
    assert ei.value.raw_api_error == 4000006 and not ei.value.message.startswith(NEITHER)


def test_neither_environment_knows_the_id(keys: Path, mock_url: str, not_found_url: str) -> None:
    c = production(keys, not_found_url, sandbox_fallback=True, sandbox_base_url=mock_url)
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("error-404-4040010")  # the Sandbox mock answers this id with 4040010 too
    e = ei.value
    assert e.message.startswith(NEITHER) and e.error_message == "mock error 4040010", e.message
    assert e.api_error == APIError.TRANSACTION_ID_NOT_FOUND
    production_error = e.__context__
    assert isinstance(production_error, APIException) and production_error.error_message == "Transaction id not found."


def test_later_pages_stay_in_sandbox(keys: Path, mock_url: str, not_found_url: str,
                                     api_cases: List[Dict[str, Any]]) -> None:
    c = production(keys, not_found_url, sandbox_fallback=True, sandbox_base_url=mock_url)
    case = next(x for x in api_cases if x["endpoint"] == "getRefundHistory")
    before = _count(not_found_url, _case_path(case))
    pages = list(c.with_environment.iter_refund_history("2000000000000001"))
    assert [p.to_dict() for p, _ in pages] == case["pages"] and len(pages) > 1
    assert [env for _, env in pages] == [Environment.SANDBOX] * len(pages)
    assert _count(not_found_url, _case_path(case)) - before == 1, "only the first page asks Production"
    assert [p.to_dict() for p in c.iter_refund_history("2000000000000001")] == case["pages"]


def test_fallback_async(keys: Path, mock_url: str, not_found_url: str, api_cases: List[Dict[str, Any]]) -> None:
    async def run() -> None:
        c = production(keys, not_found_url, AsyncAppStoreServerAPIClient, sandbox_fallback=True,
                       sandbox_base_url=mock_url)
        plain = production(keys, not_found_url, AsyncAppStoreServerAPIClient)
        try:
            for case in api_cases:
                if case["endpoint"] not in LOOKUPS:
                    continue
                method, args, kwargs = python_call(case)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    got, env = await getattr(c.with_environment, method)(*args, **kwargs)
                    assert _dict(got) == _first_page(case) and env == Environment.SANDBOX, case["endpoint"]
                    assert _dict(await getattr(c, method)(*args, **kwargs)) == _first_page(case)
                    with pytest.raises(APIException) as ei:
                        await getattr(plain, method)(*args, **kwargs)
                    assert ei.value.raw_api_error == 4040010
            order = next(x for x in api_cases if x["endpoint"] == "lookUpOrderId")
            _, env = await c.with_environment.look_up_order_id(*python_call(order)[1])
            assert env == Environment.PRODUCTION
            pages = [x async for x in c.with_environment.iter_refund_history("2000000000000001")]
            assert len(pages) > 1 and {env for _, env in pages} == {Environment.SANDBOX}
            with pytest.raises(APIException) as ei:
                await c.get_transaction_info("error-404-4040010")
            assert ei.value.message.startswith(NEITHER)
        finally:
            await c.async_close()
            await plain.async_close()

    asyncio.run(run())


def _unauthorized(e: APIException) -> None:
    """Production's 401 as the mock answers it (no JSON body; Apple's request id in a header)."""
    assert (e.http_status_code, e.raw_api_error, e.api_error) == (401, None, None)
    assert e.reason == FailureReason.HTTP_ERROR and e.headers["x-apple-request-id"] == "mock-401"


def test_unauthorized_lookups_fall_back_to_sandbox(keys: Path, mock_url: str, unauthorized_url: str,
                                                   api_cases: List[Dict[str, Any]]) -> None:
    """Production answers HTTP 401 for an app never released there (App Review's purchases of a new app): every
    lookup is asked again in Sandbox and reports Sandbox; every other endpoint is answered by Production. Without the
    option the 401 is raised, with its headers."""
    c = production(keys, unauthorized_url, sandbox_fallback=True, sandbox_base_url=mock_url)
    plain = production(keys, unauthorized_url)
    seen = set()
    for case in api_cases:
        name = case["endpoint"]
        method, args, kwargs = python_call(case)
        before_prod, before_sandbox = _count(unauthorized_url, _case_path(case)), _count(mock_url, _case_path(case))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            got, env = getattr(c.with_environment, method)(*args, **kwargs)
            assert _dict(got) == _first_page(case), name
            asked = (_count(unauthorized_url, _case_path(case)) - before_prod,
                     _count(mock_url, _case_path(case)) - before_sandbox)
            if name in LOOKUPS:
                seen.add(name)
                assert env == Environment.SANDBOX and asked == (1, 1), (name, asked)
                with pytest.raises(APIException) as ei:
                    getattr(plain, method)(*args, **kwargs)
                _unauthorized(ei.value)
                assert not ei.value.message.startswith(NEITHER_401)
            else:
                assert env == Environment.PRODUCTION and asked == (1, 0), (name, asked)
    assert seen == LOOKUPS
    # Neither environment: Sandbox's error, saying what Production answered; Production's 401 as its context.
    with pytest.raises(APIException) as ei:
        c.get_transaction_info("error-404-4040010")
    e = ei.value
    assert e.message.startswith(NEITHER_401) and e.raw_api_error == 4040010, e.message
    assert isinstance(e.__context__, APIException)
    _unauthorized(e.__context__)


def test_unauthorized_lookups_fall_back_async(keys: Path, mock_url: str, unauthorized_url: str,
                                              api_cases: List[Dict[str, Any]]) -> None:
    async def run() -> None:
        c = production(keys, unauthorized_url, AsyncAppStoreServerAPIClient, sandbox_fallback=True,
                       sandbox_base_url=mock_url)
        plain = production(keys, unauthorized_url, AsyncAppStoreServerAPIClient)
        try:
            for case in api_cases:
                if case["endpoint"] not in LOOKUPS:
                    continue
                method, args, kwargs = python_call(case)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    got, env = await getattr(c.with_environment, method)(*args, **kwargs)
                    assert _dict(got) == _first_page(case) and env == Environment.SANDBOX, case["endpoint"]
                    with pytest.raises(APIException) as ei:
                        await getattr(plain, method)(*args, **kwargs)
                    _unauthorized(ei.value)
            order = next(x for x in api_cases if x["endpoint"] == "lookUpOrderId")
            _, env = await c.with_environment.look_up_order_id(*python_call(order)[1])
            assert env == Environment.PRODUCTION
            pages = [x async for x in c.with_environment.iter_refund_history("2000000000000001")]
            assert len(pages) > 1 and {env for _, env in pages} == {Environment.SANDBOX}
            with pytest.raises(APIException) as ei:
                await c.get_transaction_info("error-404-4040010")
            assert ei.value.message.startswith(NEITHER_401) and isinstance(ei.value.__context__, APIException)
            _unauthorized(ei.value.__context__)
        finally:
            await c.async_close()
            await plain.async_close()

    asyncio.run(run())


def test_environment_without_fallback(keys: Path, mock_url: str) -> None:
    """with_environment reports the client's environment when nothing falls back."""
    info, env = sandbox(keys, mock_url).with_environment.get_transaction_info("2000000000000001")
    assert env == Environment.SANDBOX and info.signedTransactionInfo == "signed-transaction-info"
    _, env = production(keys, mock_url).with_environment.get_transaction_info("2000000000000001")
    assert env == Environment.PRODUCTION


def test_fallback_configuration(keys: Path) -> None:
    key = (keys / "p256.p8").read_bytes()
    with pytest.raises(ValueError, match="for Production clients"):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, sandbox_fallback=True)
    with pytest.raises(ValueError, match="for Production clients"):
        AsyncAppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.LOCAL_TESTING, sandbox_fallback=True)
    with pytest.raises(ValueError, match="sandbox_fallback=True"):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION, sandbox_base_url="http://x")
    with pytest.raises(TypeError, match="sandbox_fallback must be a bool"):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION, sandbox_fallback=1)
    with pytest.raises(TypeError, match="sandbox_base_url must be a str"):
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION, sandbox_fallback=True,
                                sandbox_base_url=b"http://x")
    with pytest.raises(ValueError):  # the core checks the URL
        AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION, sandbox_fallback=True,
                                sandbox_base_url="ftp://x")
    # Apple's default: Sandbox is Apple's Sandbox.
    c = AppStoreServerAPIClient(key, KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION, sandbox_fallback=True)
    seen: List[str] = []
    c._execute_request = lambda m, url, *a: (seen.append(url), FakeResponse(
        404, {"errorCode": 4040010, "errorMessage": "x"}) if len(seen) == 1 else FakeResponse(200, {}))[1]
    assert c.with_environment.get_app_transaction_info("1")[1] == Environment.SANDBOX
    assert [u.split("/inApps")[0] for u in seen] == ["https://api.storekit.apple.com",
                                                     "https://api.storekit-sandbox.apple.com"]


# ---- client-side rate limit ---------------------------------------------------------------------------------------

TRANSACTION = "GET /inApps/v1/transactions/"


def _logged(cls: Any) -> Any:
    """cls recording its call loop: ("send", the driver's now in UNIX ms when it said send) and ("wait", ms). The
    spacing is judged on the driver's own clock, which load cannot stretch (a request's travel time on a busy machine
    moves its arrival at the server, not the moment the core let it go)."""

    class Logged(cls):  # type: ignore[misc, valid-type]
        def _now_ms(self) -> int:
            self._last_now = super()._now_ms()
            return self._last_now

        def _execute_request(self, *a: Any) -> Any:
            self.log.append(("send", self._last_now))
            return super()._execute_request(*a)

        def _sleep(self, seconds: float) -> None:
            self.log.append(("wait", round(seconds * 1000)))
            super()._sleep(seconds)

        async def _asleep(self, seconds: float) -> None:
            self.log.append(("wait", round(seconds * 1000)))
            await super()._asleep(seconds)

    return Logged


def _check_spacing(log: List[Tuple[str, int]], times: List[float], per_second: int, n: int) -> None:
    """n requests at `per_second` (log: a _logged client's; times: the server's arrivals): request k + per_second at
    least a second after request k by the driver's clock, and the first per_second sent without any wait (the budget
    is a second's worth, not an even spacing; a slow machine may need no wait at all)."""
    assert len(times) == n, times
    sends = sorted(t for what, t in log if what == "send")
    assert len(sends) == n, log
    gaps = [sends[i + per_second] - sends[i] for i in range(n - per_second)]
    assert min(gaps) >= 1000, f"requests {per_second} apart were sent {min(gaps)} ms apart: {log}"
    first_wait = next((i for i, (what, _) in enumerate(log) if what == "wait"), len(log))
    assert first_wait >= per_second, f"a wait before the first {per_second} requests: {log}"


def test_rate_limit_spacing(keys: Path, mock_url: str) -> None:
    """getTransactionInfo (50/s): Production sends 10 at once, never waiting (max wait 0); Sandbox, a tenth (5/s),
    spaces them: 5 in the first second, the next 5 a second later."""
    prod = production(keys, mock_url, rate_limit=True, rate_limit_max_wait=0)
    tid = f"flaky429-0-p{uuid.uuid4().hex}"
    for _ in range(10):
        assert prod.get_transaction_info(tid).signedTransactionInfo.startswith("attempt-")
    assert len(arrivals(mock_url)[TRANSACTION + tid]) == 10

    sb = sandbox(keys, mock_url, _logged(AppStoreServerAPIClient), rate_limit=True, rate_limit_max_wait=5)
    sb.log = []
    tid = f"flaky429-0-s{uuid.uuid4().hex}"
    t0 = time.monotonic()
    for _ in range(10):
        sb.get_transaction_info(tid)
    assert time.monotonic() - t0 >= 0.95, "10 requests at 5 per second take at least a second"
    _check_spacing(sb.log, arrivals(mock_url)[TRANSACTION + tid], 5, 10)


def test_rate_limit_share(keys: Path, mock_url: str) -> None:
    """rate_limit_share_percent=40: Production getRefundHistory (10/s) allows 4 per second."""
    c = production(keys, mock_url, rate_limit=True, rate_limit_max_wait=0, rate_limit_share_percent=40)
    path = "GET /inApps/v2/refund/lookup/2000000000000001"
    before = _count(mock_url, path)
    for _ in range(4):
        c.get_refund_history("2000000000000001")
    with pytest.raises(APIException) as ei:
        c.get_refund_history("2000000000000001")
    assert ei.value.reason == FailureReason.LOCAL_RATE_LIMIT and "4 requests per second" in ei.value.message
    assert _count(mock_url, path) - before == 4


def test_rate_limit_fails_fast(keys: Path, mock_url: str) -> None:
    """max wait 0: requestTestNotification in Sandbox (a tenth of 1/s: one every 10 s) refuses the second call at once,
    sending nothing, and names the next slot."""
    c = sandbox(keys, mock_url, rate_limit=True, rate_limit_max_wait=0)
    path = "POST /inApps/v1/notifications/test"
    before = _count(mock_url, path)
    c.request_test_notification()
    t0 = time.time()
    with pytest.raises(APIException) as ei:
        c.request_test_notification()
    # Waiting would take ~10 s (the next slot); a refusal takes milliseconds: 5 s is >= 4x any loaded run.
    assert time.time() - t0 < 5.0, "a refusal does not wait"
    e = ei.value
    assert e.status == AppStoreStatus.RATE_LIMITED and e.reason == FailureReason.LOCAL_RATE_LIMIT
    assert e.http_status_code == 0 and e.raw_api_error is None and "nothing was sent" in e.message, e.message
    assert t0 * 1000 < e.retry_after <= t0 * 1000 + 10_000, (e.retry_after, t0)  # the next slot, UNIX ms
    assert e.retry_at_ms == e.retry_after and 0 <= e.retry_after_seconds <= 10 and len(e.headers) == 0
    assert _count(mock_url, path) - before == 1, "the refused call sent nothing"
    # Another client (its own budget) and a client without the limit are not refused.
    sandbox(keys, mock_url).request_test_notification()
    assert _count(mock_url, path) - before == 2


def test_retries_take_slots(keys: Path, mock_url: str) -> None:
    """A retry takes a slot like any attempt: at 1/s (getTransactionInfo, 2 % of 50/s) the retry of a 429 waits for
    the next second, or is refused with max wait 0."""
    c = production(keys, mock_url, _logged(AppStoreServerAPIClient), max_retries=2, initial_backoff=0.01,
                   rate_limit=True, rate_limit_max_wait=5, rate_limit_share_percent=2)
    c.log = []
    tid = f"flaky429-1-r{uuid.uuid4().hex}"
    assert c.get_transaction_info(tid).signedTransactionInfo == "attempt-2"
    sends = [t for what, t in c.log if what == "send"]
    assert len(arrivals(mock_url)[TRANSACTION + tid]) == 2 and len(sends) == 2 and sends[1] - sends[0] >= 1000, c.log
    fast = production(keys, mock_url, max_retries=2, initial_backoff=0.01, rate_limit=True, rate_limit_max_wait=0,
                      rate_limit_share_percent=2)
    tid = f"flaky429-1-f{uuid.uuid4().hex}"
    with pytest.raises(APIException) as ei:
        fast.get_transaction_info(tid)
    assert ei.value.reason == FailureReason.LOCAL_RATE_LIMIT
    assert len(arrivals(mock_url)[TRANSACTION + tid]) == 1


def test_fallback_requests_take_slots(keys: Path, mock_url: str, not_found_url: str) -> None:
    """The fallback request takes a Sandbox slot: at 20 % getTransactionInfo is 10/s in Production and 1/s in Sandbox,
    so the second lookup within a second is refused in Sandbox after Production answered. The core's driver reports
    the refusal as it is (its message names Sandbox, without the "then Sandbox" prefix of an answer Sandbox gave);
    Production's answer is its __context__."""
    c = production(keys, not_found_url, sandbox_fallback=True, sandbox_base_url=mock_url, rate_limit=True,
                   rate_limit_max_wait=0, rate_limit_share_percent=20)
    tid = f"flaky429-0-fb{uuid.uuid4().hex}"  # Production: 404 4040010; Sandbox: 200
    assert c.with_environment.get_transaction_info(tid)[1] == Environment.SANDBOX
    with pytest.raises(APIException) as ei:
        c.get_transaction_info(tid)
    assert ei.value.reason == FailureReason.LOCAL_RATE_LIMIT and "in Sandbox" in ei.value.message, ei.value.message
    production_error = ei.value.__context__
    assert isinstance(production_error, APIException) and production_error.raw_api_error == 4040010
    assert (_count(not_found_url, TRANSACTION + tid), _count(mock_url, TRANSACTION + tid)) == (2, 1)


def test_rate_limit_async(keys: Path, mock_url: str) -> None:
    """Ten concurrent tasks on a Sandbox client: spaced as in the sync test, waiting with asyncio.sleep (the event
    loop keeps running); max wait 0 refuses at once."""
    tid = f"flaky429-0-a{uuid.uuid4().hex}"
    log: List[Tuple[str, int]] = []

    async def run() -> Tuple[int, float]:
        c = sandbox(keys, mock_url, _logged(AsyncAppStoreServerAPIClient), rate_limit=True, rate_limit_max_wait=5)
        c.log = log
        fast = sandbox(keys, mock_url, AsyncAppStoreServerAPIClient, rate_limit=True, rate_limit_max_wait=0)
        ticker = LoopTicker().start()
        t0 = time.monotonic()
        try:
            got = await asyncio.gather(*(c.get_transaction_info(tid) for _ in range(10)))
            assert all(g.signedTransactionInfo.startswith("attempt-") for g in got)
            elapsed = time.monotonic() - t0
            await fast.request_test_notification()
            with pytest.raises(APIException) as ei:
                await fast.request_test_notification()
            assert ei.value.reason == FailureReason.LOCAL_RATE_LIMIT
        finally:
            ticker.stop()
            await c.async_close()
            await fast.async_close()
        return ticker.ticks, elapsed

    ticks, elapsed = asyncio.run(run())
    assert elapsed >= 0.95, elapsed
    # At least a second of waiting: 20 ticks of 50 ms on an idle loop, 4x the 5 asserted.
    assert ticks >= 5, f"the event loop was blocked while waiting for slots ({ticks} ticks)"
    _check_spacing(log, arrivals(mock_url)[TRANSACTION + tid], 5, 10)


def test_rate_limit_configuration(keys: Path) -> None:
    key = (keys / "p256.p8").read_bytes()
    args = (key, KEY_ID, ISSUER, BUNDLE, Environment.PRODUCTION)
    with pytest.raises(ValueError, match="rate_limit=True"):
        AppStoreServerAPIClient(*args, rate_limit_max_wait=1)
    with pytest.raises(ValueError, match="rate_limit=True"):
        AsyncAppStoreServerAPIClient(*args, rate_limit_share_percent=50)
    with pytest.raises(TypeError, match="rate_limit must be a bool"):
        AppStoreServerAPIClient(*args, rate_limit="yes")
    for share in (0, 101, -1):
        with pytest.raises(ValueError, match="rate_limit_share_percent"):
            AppStoreServerAPIClient(*args, rate_limit=True, rate_limit_share_percent=share)
    for bad in (50.0, "50", True):
        with pytest.raises(TypeError, match="rate_limit_share_percent"):
            AppStoreServerAPIClient(*args, rate_limit=True, rate_limit_share_percent=bad)
    with pytest.raises(ValueError, match="rate_limit_max_wait"):
        AppStoreServerAPIClient(*args, rate_limit=True, rate_limit_max_wait=-1)
    with pytest.raises(TypeError, match="rate_limit_max_wait"):
        AppStoreServerAPIClient(*args, rate_limit=True, rate_limit_max_wait="5")
    # Without the limit nothing is reserved: many calls in a row, none refused.
    c = AppStoreServerAPIClient(*args)
    c._execute_request = lambda *a: FakeResponse(200, {})
    for _ in range(5):
        c.request_test_notification()
