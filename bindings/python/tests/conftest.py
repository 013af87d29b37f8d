"""Shared fixtures of the Python binding's tests: the project's test PKI and receipt fixtures (generated once per
run by Tests/support/*.py), signing keys, the mock App Store server, the hostile HTTP server, the shared conformance
data.

The tests import `appstoreserver` as installed (bindings/python/run-tests installs the wheel it builds), so they
test the package as users get it. Closing lines (printed at the end, like the C and Swift runners):
    conformance: N passed, M failed, K skipped        ../shared/conformance (real Apple data)
    testpki: N passed, M failed, K skipped            the project's own PKI cases
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

REPO = Path(os.environ.get("APPSTORESERVER_REPO") or Path(__file__).resolve().parents[3])
SUPPORT = REPO / "Tests" / "support"
sys.path.insert(0, str(SUPPORT))
from served import served  # noqa: E402
CONFORMANCE = Path(os.environ.get("APPSTORESERVER_CONFORMANCE") or (REPO / ".." / "shared" / "conformance")).resolve()
KEY_ID = "ABC123DEFG"
ISSUER = "57246542-96fe-1a63-e053-0824d011072a"
BUNDLE = "com.example.app"


def _run(args: List[str]) -> None:
    r = subprocess.run([sys.executable] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


_testpki_dir: List[Path] = []


def get_testpki_dir() -> Path:
    """Tests/support/testpki.py: own PKI + 146 signed cases with expected results (manifest.json); generated once
    per run, at collection (the case list is fixed, the keys are fresh)."""
    if not _testpki_dir:
        env = os.environ.get("APPSTORESERVER_TESTPKI")
        if env:
            _testpki_dir.append(Path(env))
        else:
            out = Path(tempfile.mkdtemp(prefix="appstoreserver-testpki-"))
            _run([str(SUPPORT / "testpki.py"), str(out)])
            _testpki_dir.append(out)
    return _testpki_dir[0]


@pytest.fixture(scope="session")
def testpki() -> Path:
    return get_testpki_dir()


def pytest_unconfigure(config: object) -> None:
    if _testpki_dir and not os.environ.get("APPSTORESERVER_TESTPKI"):
        shutil.rmtree(_testpki_dir[0], ignore_errors=True)


@pytest.fixture(scope="session")
def receipt_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tests/support/receipts.py: own-CA app receipts with expected results."""
    out = tmp_path_factory.mktemp("receipts")
    _run([str(SUPPORT / "receipts.py"), str(out)])
    return out


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tests/support/check_signatures.py keys: p256.p8 (+ p256_public.pem), p384.p8, rsa.p8, encrypted.p8, ..."""
    out = tmp_path_factory.mktemp("keys")
    _run([str(SUPPORT / "check_signatures.py"), "keys", str(out)])
    return out


@pytest.fixture(scope="session")
def api_cases() -> List[Dict]:
    return json.loads((SUPPORT / "api_cases.json").read_text(encoding="utf-8"))["cases"]


def _mock(keys: Path, *extra: str) -> Iterator[str]:
    with served("mock_app_store.py", "--cases", str(SUPPORT / "api_cases.json"), "--public-key",
                str(keys / "p256_public.pem"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", BUNDLE,
                *extra) as ports:
        yield f"http://127.0.0.1:{int(ports[0])}"


@pytest.fixture(scope="session")
def mock_url(keys: Path) -> Iterator[str]:
    """Tests/support/mock_app_store.py on 127.0.0.1: checks every request (bearer token verified with joserfc) and
    answers with api_cases.json's canned answers or a scenario."""
    yield from _mock(keys)


@pytest.fixture(scope="session")
def not_found_url(keys: Path) -> Iterator[str]:
    """A second mock playing a Production that knows no id (--not-found-lookups): every lookup the spec marks
    sandboxFallback is answered 404 errorCode 4040010, the other endpoints as mock_url answers them."""
    yield from _mock(keys, "--not-found-lookups", str(REPO / "spec" / "endpoints.json"))


@pytest.fixture(scope="session")
def unauthorized_url(keys: Path) -> Iterator[str]:
    """A third mock playing a Production that has never heard of the app (--unauthorized-lookups): every lookup the
    spec marks sandboxFallback is answered HTTP 401 with a plain-text body and an X-Apple-Request-Id header, as Apple's
    Production answers App Review's purchases of a new app; the other endpoints as mock_url answers them."""
    yield from _mock(keys, "--unauthorized-lookups", str(REPO / "spec" / "endpoints.json"))


class Hostile:
    """Tests/support/hostile_http.py, running: url(behaviour) is a base URL selecting a misbehaviour (redirect-307,
    drip-200, huge-64, gzip-1024, ...); caught() is what its catcher port received (count 0: no client followed a
    redirect)."""

    def __init__(self, main: int, catcher: int):
        self.main = main
        self.catcher = catcher

    def url(self, behaviour: str) -> str:
        return f"http://127.0.0.1:{self.main}/{behaviour}"

    def caught(self) -> Dict:
        with urllib.request.urlopen(self.url("caught"), timeout=10) as r:
            return json.loads(r.read())


@pytest.fixture(scope="session")
def hostile() -> Iterator[Hostile]:
    """A hostile HTTP server on 127.0.0.1 for the hardening tests, started once per session and stopped at its end
    (it stops when its standard input closes)."""
    with served("hostile_http.py", "--lifetime", "3600") as (main, catcher):
        yield Hostile(int(main), int(catcher))


def arrivals(url: str) -> Dict[str, List[float]]:
    """The mock's arrival times (monotonic seconds) per "METHOD path" (GET /mock/arrivals)."""
    with urllib.request.urlopen(f"{url}/mock/arrivals", timeout=10) as r:
        return json.loads(r.read())["arrivals"]


@pytest.fixture(scope="session")
def conformance() -> Path:
    if not (CONFORMANCE / "manifest.json").is_file():
        pytest.skip(f"SKIPPED: {CONFORMANCE} not found; real Apple data NOT checked")
    return CONFORMANCE


def shared_manifest() -> Dict:
    path = CONFORMANCE / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"cases": []}


class LoopTicker:
    """Counts 50 ms ticks of the running event loop while started: a test's proof that the loop was not blocked.
    start() inside a coroutine, stop() in its finally block, then read .ticks."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: "asyncio.Future[None] | None" = None
        self._notify: "List[Tuple[int, threading.Event]]" = []

    def notify(self, ticks: int, event: threading.Event) -> "LoopTicker":
        """Sets `event` once the loop has ticked `ticks` times: a worker thread can wait for the loop's progress
        instead of sleeping a time that load may stretch."""
        self._notify.append((ticks, event))
        return self

    def start(self) -> "LoopTicker":
        async def tick() -> None:
            while True:
                await asyncio.sleep(0.05)
                self.ticks += 1
                for n, event in self._notify:
                    if self.ticks >= n:
                        event.set()

        self._task = asyncio.ensure_future(tick())
        return self

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


# ---- closing lines ------------------------------------------------------------------------------------------------

_tallies: Dict[str, Dict[str, int]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    suite = None
    if "::test_case[" not in report.nodeid:
        return
    if "test_conformance.py" in report.nodeid:
        suite = "conformance"
    elif "test_testpki.py" in report.nodeid:
        suite = "testpki"
    if suite is None:
        return
    t = _tallies.setdefault(suite, {"passed": 0, "failed": 0, "skipped": 0})
    if report.when == "call":
        t["passed" if report.passed else "failed" if report.failed else "skipped"] += 1
    elif report.when == "setup" and report.skipped:
        t["skipped"] += 1
    elif report.when in ("setup", "teardown") and report.failed:
        t["failed"] += 1


def pytest_terminal_summary(terminalreporter: object, exitstatus: int) -> None:
    w = terminalreporter.write_line  # type: ignore[attr-defined]
    if not (CONFORMANCE / "manifest.json").is_file():
        w(f"conformance: SKIPPED - {CONFORMANCE} not found; real Apple data NOT checked")
    for suite in ("conformance", "testpki"):
        t = _tallies.get(suite, {"passed": 0, "failed": 0, "skipped": 0})
        w(f"{suite}: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped")
