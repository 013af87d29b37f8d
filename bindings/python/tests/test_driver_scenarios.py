"""The call driver's shared scenarios (Tests/driver/scenarios.json, read its "doc") through the Python clients' own
loops, sync and async: each SEND reaches _execute_request with Apple's arguments (checked against the scenario's
method and full URL), each WAIT reaches the client's _sleep / _asleep, the clock is the client's _now_ms serving each
step's `now`, and the call ends with the scenario's answer (through with_environment) or its error. The scenarios
marked driverOnly misuse the driver, which a client loop never does: they are run by the C and Swift runners only.

A scripted transport failure is raised from the hook as the exception the loop classifies as that result (a
TimeoutError for TIMEOUT, ...); the clients raise it on unchanged, with the core's account of the failure as a note
(PEP 678), so that is where the scenario's reason and message are looked for."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import quote, urlencode

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID, REPO
from test_api import ENDPOINTS, python_call, snake

from appstoreserver import _http
from appstoreserver._generated import abi
from appstoreserver.api_client import APIException, AppStoreServerAPIClient, AsyncAppStoreServerAPIClient, _current
from appstoreserver.models.Environment import Environment

SCENARIOS: List[Dict[str, Any]] = json.loads((REPO / "Tests" / "driver" / "scenarios.json").read_text())["scenarios"]
RUN = [s for s in SCENARIOS if not s.get("driverOnly")]
REASON_STATUSES = {r["name"]: r["statuses"] for r in json.loads((REPO / "spec" / "errors.json").read_text())["reasons"]}
# The exception a hook raises for each transport result: what the client loop reports as that result (_http._classify).
FAILURES = {"TIMEOUT": TimeoutError, "UNREACHABLE": ConnectionRefusedError, "FAILED": _http.BadResponse}


class Script:
    """One scenario's steps, served in order to the client loop's hooks."""

    def __init__(self, scenario: Dict[str, Any]):
        self.name = scenario["name"]
        self.steps: List[Dict[str, Any]] = scenario["steps"]
        self.body = scenario["params"].get("body")  # the JSON body of every page's request
        self.i = 0
        self.raised: Optional[BaseException] = None  # the transport failure the hook raised
        self.answered: Optional[Dict[str, Any]] = None  # the last done, until the loop goes on or stops

    def went_on(self) -> None:
        """The loop asked for more after an answer: the driver must have said there is a next page."""
        if self.answered is not None:
            assert self.answered["hasNextPage"], f"{self.name}: the loop went on after the last page"
            self.answered = None

    def take(self, kind: str) -> Dict[str, Any]:
        self.went_on()
        assert self.i < len(self.steps), f"{self.name}: the loop went on after the last step ({kind})"
        step = self.steps[self.i]
        assert kind in step, f"{self.name}: step {self.i} is {sorted(step)}, the loop did {kind}"
        self.i += 1
        return step

    def now_ms(self) -> int:
        self.went_on()
        assert self.i < len(self.steps), f"{self.name}: the loop asked the clock after the last step"
        step = self.steps[self.i]
        assert "now" in step, f"{self.name}: step {self.i} ({sorted(step)}) gives no time, the loop asked for it"
        if "receive" in step:  # the answer arrives: the loop reports it with this time
            self.i += 1
        return step["now"]

    def sleep(self, seconds: float) -> None:
        want = self.take("wait")["wait"]
        assert round(seconds * 1000) == want, f"{self.name}: slept {seconds} s, the driver says wait {want} ms"

    def execute(self, method: str, url: str, params: Any, headers: Any, body: Any, data: Any) -> Any:
        """Apple's hook: url without the query, params as lists (rebuilt here as the default transport does)."""
        want = self.take("send")["send"]
        full = url + ("?" + urlencode(params, doseq=True, quote_via=quote) if params else "")
        assert (method, full) == (want["method"], want["url"]), f"{self.name}: step {self.i - 1}"
        assert headers["Authorization"].startswith("Bearer ") and body == self.body and data is None, self.name
        if "timeoutMs" in want:  # the transport timeout the default transports would use: the time left
            prepared = _current.get()
            assert prepared is not None and round(prepared.timeout * 1000) == want["timeoutMs"], (self.name, prepared)
        assert self.i < len(self.steps), f"{self.name}: no outcome scripted for the send"
        step = self.steps[self.i]
        if "fail" in step:
            self.i += 1
            self.raised = FAILURES[step["fail"]["result"]](step["fail"]["message"])
            raise self.raised
        assert "receive" in step, f"{self.name}: step {self.i} is {sorted(step)} after a send"
        r = step["receive"]
        content = r["bodyText"].encode() if "bodyText" in r else json.dumps(r["body"]).encode()
        return _http.Response(r["status"], _http.Headers(list(r.get("headers", {}).items())), content)

    def done(self, page: Any, environment: Environment) -> None:
        want = self.take("done")["done"]
        assert (None if page is None else page.to_dict()) == want["json"], f"{self.name}: {page!r}"
        assert environment == Environment[want["environment"]], f"{self.name}: answered by {environment}"
        self.answered = want

    def stopped(self) -> None:
        """The call returned, or iter_* ended: after an answer that has no next page."""
        assert self.answered is not None and not self.answered["hasNextPage"], f"{self.name}: stopped early"
        self.answered = None

    def error(self, e: BaseException) -> None:
        want = self.take("error")["error"]
        if self.raised is not None:  # a transport failure: the hook's exception, raised on with the core's note
            assert e is self.raised, f"{self.name}: raised {e!r}, not the hook's {self.raised!r}"
            assert want["status"] in REASON_STATUSES[want["reason"]], self.name
            notes = [n for n in getattr(e, "__notes__", []) if n.endswith(f"[{want['reason'].upper()}]")]
            assert len(notes) == 1, f"{self.name}: notes {getattr(e, '__notes__', None)}"
            message = notes[0]
        else:
            assert isinstance(e, APIException), f"{self.name}: raised {e!r}"
            got = {"status": e.status.name, "reason": e.reason.name.lower(), "httpStatus": e.http_status_code,
                   "apiErrorCode": e.raw_api_error, "retryAfterMs": e.retry_after}
            listed = {k: got[k] for k in got if k in want}  # as the C and Swift runners: the fields listed
            assert listed == {k: want[k] for k in listed}, f"{self.name}: {got} ({e.message})"
            message = e.message
        for text in want.get("messageContains", []):
            assert text in message, f"{self.name}: {text!r} not in {message!r}"
        for text in want.get("messageLacks", []):
            assert text not in message, f"{self.name}: {text!r} in {message!r}"

    def finished(self) -> None:
        assert self.i == len(self.steps), f"{self.name}: ended at step {self.i} of {len(self.steps)}"


def make_client(cls: Any, scenario: Dict[str, Any], keys: Path, script: Script) -> Any:
    """Apple's base URLs (no base_url), the test key, the scenario's options; the hook, clock and sleep scripted."""
    opts = scenario["client"]
    kw: Dict[str, Any] = {}
    if "timeoutMs" in opts:
        kw["timeout"] = opts["timeoutMs"] / 1000
    if "maxRetries" in opts:
        kw.update(max_retries=opts["maxRetries"], initial_backoff=opts["initialBackoffMs"] / 1000,
                  max_backoff=opts["maxBackoffMs"] / 1000)
    if opts.get("sandboxFallback"):
        kw["sandbox_fallback"] = True
    if "rateLimit" in opts:
        kw.update(rate_limit=True, rate_limit_max_wait=opts["rateLimit"]["maxWaitMs"] / 1000,
                  rate_limit_share_percent=opts["rateLimit"]["sharePercent"])
    c = cls((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE, Environment[opts["environment"]], **kw)
    c._now_ms = script.now_ms
    if cls is AppStoreServerAPIClient:
        c._execute_request = script.execute
        c._sleep = script.sleep
    else:
        async def execute(*args: Any) -> Any:
            return script.execute(*args)

        async def asleep(seconds: float) -> None:
            script.sleep(seconds)

        c._execute_request = execute
        c._asleep = asleep
    return c


def method_and_args(scenario: Dict[str, Any]) -> Tuple[str, List[Any], Dict[str, Any]]:
    """The client method of the scenario's call (iter_* for "pages") and its arguments."""
    method, args, kwargs = python_call({"endpoint": scenario["endpoint"], "params": scenario["params"]})
    if not scenario.get("pages"):
        return method, args, kwargs
    ep = ENDPOINTS[scenario["endpoint"]]
    page_param = ep["pagination"]["parameter"]
    args = [a for p, a in zip(ep["parameters"], args) if p["name"] != page_param]
    return "iter_" + snake(scenario["endpoint"][len("get"):]), args, {}


def run_sync(scenario: Dict[str, Any], keys: Path) -> None:
    script = Script(scenario)
    c = make_client(AppStoreServerAPIClient, scenario, keys, script)
    method, args, kwargs = method_and_args(scenario)
    try:
        if scenario.get("pages"):
            for page in getattr(c.with_environment, method)(*args):
                script.done(*page)
        else:
            script.done(*getattr(c.with_environment, method)(*args, **kwargs))
        script.stopped()
    except (APIException, OSError) as e:
        script.error(e)
    script.finished()


async def run_async(scenario: Dict[str, Any], keys: Path) -> None:
    script = Script(scenario)
    c = make_client(AsyncAppStoreServerAPIClient, scenario, keys, script)
    method, args, kwargs = method_and_args(scenario)
    try:
        if scenario.get("pages"):
            async for page in getattr(c.with_environment, method)(*args):
                script.done(*page)
        else:
            script.done(*await getattr(c.with_environment, method)(*args, **kwargs))
        script.stopped()
    except (APIException, OSError) as e:
        script.error(e)
    finally:
        await c.async_close()
    script.finished()


def test_every_scenario_is_run() -> None:
    assert len(SCENARIOS) >= 21 and [s["name"] for s in SCENARIOS if s.get("driverOnly")] == [
        "misuse: next before the outcome, and after the end"], "a new driverOnly scenario: is it really one?"
    assert {s["endpoint"] for s in RUN if s.get("pages")} == {"getTransactionHistory", "getRefundHistory",
                                                              "getNotificationHistory"}
    for result, exc in FAILURES.items():  # what the loop reports for each exception the hook raises
        assert _http._classify(exc("x")) == getattr(abi, f"APPSTORE_TRANSPORT_RESULT_{result}"), result


@pytest.mark.parametrize("scenario", RUN, ids=[s["name"] for s in RUN])
def test_scenario_sync(scenario: Dict[str, Any], keys: Path) -> None:
    run_sync(scenario, keys)


@pytest.mark.parametrize("scenario", RUN, ids=[s["name"] for s in RUN])
def test_scenario_async(scenario: Dict[str, Any], keys: Path) -> None:
    asyncio.run(run_async(scenario, keys))
