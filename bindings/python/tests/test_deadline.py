"""The client's timeout is a deadline for the whole call (issue 35): an external signer that blocks is abandoned at the
deadline, sync and async, and is told the time left. The waits and reads of the deadline are the shared driver
scenarios' (test_driver_scenarios.py, Tests/driver/scenarios.json)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, List

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID
from test_signing import KMS, external

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.api_client import APIException, AppStoreServerAPIClient, AsyncAppStoreServerAPIClient
from appstoreserver.models.Environment import Environment

T0 = 1_800_000_000_000


class FakeResponse:
    """A requests-like answer, as Apple's tests return from _execute_request."""

    def __init__(self, status: int, body: Any, headers: Any = None):
        self.status_code, self._body = status, body
        self.headers = {"content-type": "application/json", **(headers or {})}

    def json(self) -> Any:
        return self._body


class Blocking:
    """An 8 s signer: it blocks until the test releases it (or 8 s pass), and records whether it returned."""

    def __init__(self, keys: Path):
        self.kms = KMS(keys, "der")
        self.release = threading.Event()
        self.returned = threading.Event()

    def __call__(self, message: bytes, digest: bytes) -> bytes:
        self.release.wait(8)
        try:
            return self.kms(message, digest)
        finally:
            self.returned.set()


def check_deadline(e: APIException, signer: Blocking, elapsed: float) -> None:
    assert e.status == AppStoreStatus.TRANSPORT_ERROR and e.reason == FailureReason.DEADLINE_EXCEEDED, e
    assert "timeout of 1000 ms" in e.message and "external signer did not answer" in e.message, e.message
    assert isinstance(e.__cause__, TimeoutError), repr(e.__cause__)
    # Deterministic: the call gave up while the signer was still blocked (it is released only below).
    assert not signer.returned.is_set(), "the call waited for the signer"
    # On the real clock: timeout 1 s and an 8 s signer; the call returns in about 1 s (the issue asks under 3 s, measured
    # by hand). The bound stays below the signer's 8 s but leaves load 6 s of room: the check above is the proof.
    assert elapsed < 7, f"the call took {elapsed:.1f} s"


def test_async_client_abandons_a_blocking_signer_at_the_deadline(keys: Path) -> None:
    signer = Blocking(keys)
    sent: List[Any] = []

    async def execute(*a: Any) -> Any:
        sent.append(a)

    async def run() -> None:
        c = AsyncAppStoreServerAPIClient(external(keys, signer), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, timeout=1)
        c._execute_request = execute
        try:
            started = time.monotonic()
            with pytest.raises(APIException) as ei:
                await c.get_transaction_info("1")
            check_deadline(ei.value, signer, time.monotonic() - started)
        finally:
            signer.release.set()
            await c.async_close()

    asyncio.run(run())
    assert sent == [], "nothing is sent after the deadline"


def test_sync_client_abandons_a_blocking_signer_at_the_deadline(keys: Path) -> None:
    signer = Blocking(keys)
    c = AppStoreServerAPIClient(external(keys, signer), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, timeout=1)
    sent: List[Any] = []
    c._execute_request = lambda *a: sent.append(a)
    try:
        started = time.monotonic()
        with pytest.raises(APIException) as ei:
            c.get_transaction_info("1")
        check_deadline(ei.value, signer, time.monotonic() - started)
    finally:
        signer.release.set()
    assert sent == []


def test_the_signer_is_told_the_time_left(keys: Path) -> None:
    """On a fake clock: the first token may take the whole timeout (1.5 s, less than the signer's 10 s); after a
    Retry-After of 400 ms the retry's token has what is left (1.1 s), and so has its exchange. A signer without a
    `timeout` keyword is called as before."""
    told: List[float] = []
    kms = KMS(keys, "raw")

    def sign(message: bytes, digest: bytes, *, timeout: float) -> bytes:
        told.append(timeout)
        return kms(message, digest)

    now = [T0]
    timeouts: List[float] = []
    answers = [FakeResponse(429, {"errorCode": 4290000, "errorMessage": "Rate limit exceeded."},
                            headers={"Retry-After": str(T0 + 400)}),
               FakeResponse(200, {"signedTransactionInfo": "ok"})]

    from appstoreserver.api_client import _current

    def execute(*a: Any) -> Any:
        timeouts.append(_current.get().timeout)  # type: ignore[union-attr]
        return answers.pop(0)

    def sleep(seconds: float) -> None:
        now[0] += round(seconds * 1000)

    c = AppStoreServerAPIClient(external(keys, sign), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, timeout=1.5,
                                max_retries=1, initial_backoff=0.1, max_backoff=5)
    c._now_ms = lambda: now[0]
    c._execute_request = execute
    c._sleep = sleep
    assert c.get_transaction_info("1").signedTransactionInfo == "ok"
    # The fake clock does not move while the signer runs; the core's monotonic clock measures the signer (a few ms),
    # so the times told are the fake clock's less at most that.
    assert len(told) == 2 and 1.4 < told[0] <= 1.5 and 1.0 < told[1] <= 1.1, told
    assert 1.4 < timeouts[0] <= 1.5 and 1.0 < timeouts[1] <= 1.1, timeouts
    assert len(kms.calls) == 2
