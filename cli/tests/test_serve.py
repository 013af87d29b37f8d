"""`appstoreserver serve` (docs/serve.md) as a real server process on loopback, posted at as Apple posts:

- notifications: every lifecycle of Tests/support/lifecycles.py (own PKI), each scenario's expectations read back
  through the query endpoints and the tool's `ledger show`; real Apple notifications of ../shared/conformance
  (SKIPPED loudly when absent) with each manifest case's verdict; duplicates, out-of-order and concurrent delivery
  (the same state as an in-order ingest, the oracle silent);
- refusals: forged, tampered, wrong app, wrong environment, malformed, oversized: the documented 4xx with the
  verifier's reason, a log line with it, the ledger unchanged;
- the HTTP layer (cli/Sources/CLIServe): strict parsing, limits (body, headers, connections), slow clients (header,
  body and idle timeouts), chunked and 100-continue, pipelining, HEAD;
- the query endpoints behind the API key, /healthz, /metrics; the routes against spec/serve.openapi.json and its
  Ledger* schemas against spec/models.json;
- SIGTERM (in-flight requests finished, new ones refused, ledgers closed) and SIGKILL under load: every request
  answered 200 is in the ledger afterwards, and re-posting the rest converges to a clean ingest's state
  (APPSTORESERVER_SERVE_KILLS rounds, 5 by default; docs/serve.md records a long run);
- configuration: the file (relative paths, unknown members refused), flags over it, --check, the key never on the
  command line and never in the logs.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from test_cli import CONFIG, CONFORMANCE, ERROR_CLASSES, REPO, TOOL, USAGE, need_conformance, tool
from test_ledger_cli import as_of, doc, mismatches, pki  # noqa: F401  (module fixtures: the test PKI, the lifecycles)

OPENAPI = REPO / "spec" / "serve.openapi.json"
MODELS = REPO / "spec" / "models.json"
KEY = "test-key-0123456789abcdef0123456789"
# The documented status for each of the verifier's statuses (docs/serve.md, "Delivery contract").
HTTP_STATUS = {"INVALID_JWT_FORMAT": 400, "VERIFICATION_FAILURE": 403, "INVALID_CHAIN_LENGTH": 403,
               "INVALID_CERTIFICATE": 403, "INVALID_APP_IDENTIFIER": 422, "INVALID_ENVIRONMENT": 422}


# ---- a server process -----------------------------------------------------------------------------------------------

class Server:
    """`appstoreserver serve --listen 127.0.0.1:0 ARGS`: the port from its first log line; every stdout line must be
    a JSON object (collected in `logs`)."""

    def __init__(self, *args: str, env: Optional[Dict[str, str]] = None) -> None:
        e = {k: v for k, v in os.environ.items() if not k.startswith("APPSTORE_")}
        e.update(env or {})
        self.p = subprocess.Popen([TOOL, "serve", "--listen", "127.0.0.1:0", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=e)
        first = self.p.stdout.readline()  # type: ignore[union-attr]
        if not first:
            raise AssertionError(f"serve did not start (exit {self.p.wait()}): {self.p.stderr.read().decode()}")  # type: ignore[union-attr]
        self.started = json.loads(first)
        assert self.started["event"] == "listening", first
        self.port: int = self.started["port"]
        self.logs: List[Dict[str, Any]] = [self.started]
        self.raw_log = [first.decode()]
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            self.raw_log.append(line.decode())
            self.logs.append(json.loads(line))  # a line that is not JSON fails the test that reads logs

    def request(self, method: str, path: str, body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None,
                timeout: float = 30) -> Tuple[int, Dict[str, str], bytes]:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def post(self, env: str, jws: Optional[str] = None, raw: Optional[bytes] = None) -> Tuple[int, Any]:
        body = raw if raw is not None else json.dumps({"signedPayload": jws}).encode()
        status, _, data = self.request("POST", f"/notifications/{env}", body, {"Content-Type": "application/json"})
        return status, json.loads(data)

    def get(self, path: str, key: Optional[str] = KEY) -> Tuple[int, Any]:
        status, headers, data = self.request("GET", path, headers={"Authorization": f"Bearer {key}"} if key else {})
        return status, json.loads(data) if headers.get("content-type", "").startswith("application/json") else data.decode()

    def events(self, name: str) -> List[Dict[str, Any]]:
        return [l for l in self.logs if l.get("event") == name]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        self.p.send_signal(sig)
        code = self.p.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.reader.join(timeout=10)


def serve_args(pki: Path, doc: Dict[str, Any], tmp: Path, *extra: str, key: bool = True) -> List[str]:
    args = ["--bundle-id", doc["bundleId"], "--app-apple-id", str(doc["appAppleId"]), "--root", str(pki / "root.der"),
            "--ledger", f"sandbox={tmp / 'sandbox.db'}", *extra]
    if key:
        (tmp / "api-key").write_text(KEY + "\n")
        args += ["--api-key-file", str(tmp / "api-key")]
    return args


def raw(port: int, data: bytes, wait: float = 10, pause: float = 0) -> bytes:
    """Sends bytes on a new connection (in pieces when `pause`: one byte at a time), then reads until the server
    closes or `wait` seconds pass."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        if pause:
            for b in data:
                s.sendall(bytes([b]))
                time.sleep(pause)
        else:
            s.sendall(data)
        return read_all(s, wait)
    finally:
        s.close()


def trickle(port: int, start: bytes, drip: bytes, pause: float = 0.1, wait: float = 10) -> bytes:
    """A slow client: `start` at once, then `drip` a byte at a time, until the server answers (or closes)."""
    import select
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        s.sendall(start)
        for b in drip:
            if select.select([s], [], [], pause)[0]:
                break
            s.sendall(bytes([b]))
        return read_all(s, wait)
    finally:
        s.close()


def read_all(s: socket.socket, wait: float) -> bytes:
    out = b""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def statuses(data: bytes, head: bool = False) -> List[int]:
    """The statuses of the responses in `data`, one after another (each framed by its Content-Length)."""
    out = []
    while data:
        top, sep, rest = data.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", top)
        assert sep and m, data[:200]
        out.append(int(m.group(1)))
        length = re.search(rb"\r\nContent-Length: (\d+)", top)
        data = rest[0 if head or not length else int(length.group(1)):]
    return out


def error_reason(data: bytes) -> str:
    return json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]["reason"]


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        if key == (f"{name}{{{want}}}" if want else name):
            return float(value)
    return 0.0


def notifications(lcs: List[Dict[str, Any]]) -> List[str]:
    return [n["signed"] for lc in lcs for n in lc["notifications"]]


def payload_of(jws: str) -> Dict[str, Any]:
    """The payload of a compact JWS, decoded here (not by the tool)."""
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def tool_summary(db: Path) -> Dict[str, Any]:
    r = tool("ledger", "show", "--db", str(db))
    assert r.code == 0, r
    return r.json()


# ---- notifications ------------------------------------------------------------------------------------------------

def test_scenarios_over_http(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    with Server(*serve_args(pki, doc, tmp_path)) as s:
        posted = 0
        for lc in doc["scenarios"]:
            for n in lc["notifications"]:
                status, r = s.post("sandbox", n["signed"])
                assert status == 200 and r["stored"] and r.get("agrees", True), (lc["name"], status, r)
                posted += 1
        failures, checked = [], 0
        for lc in doc["scenarios"]:
            for e in lc["expect"]:
                if "notifications" not in (e.get("deliveries") or ["notifications"]):
                    continue
                path = (f"/v1/sandbox/subscriptions/{e['subscription']}" if "subscription" in e
                        else f"/v1/sandbox/customers/{e['customer']}") + f"?at={e['at']}"
                path += f"&asOf={as_of(e)[1]}" if "asOf" in e else ""
                status, answer = s.get(path)
                assert status in (200, 404), (path, status, answer)
                checked += 1
                failures += [f"{lc['name']} at {e['at']} ({e['rule']}): {p}"
                             for p in mismatches(answer if status == 200 else None, e)]
        assert not failures, "\n".join(failures)
        assert checked >= 40
        status, summary = s.get("/v1/sandbox/summary")
        assert status == 200 and summary["events"] == posted and summary["disagreements"] == []
        assert s.stop() == 0
    # The ledger the server wrote, read by the tool.
    assert tool_summary(tmp_path / "sandbox.db") == summary
    notes = s.events("notification")
    assert len(notes) == posted and all(l["outcome"] == "stored" and l["status"] == 200 for l in notes)
    assert all("signedPayload" not in l for l in notes)
    assert not any("eyJ" in line for line in s.raw_log), "a signed payload (or part of one) in the logs"
    print(f"\nserve: {posted} scenario notifications stored, {checked} expectations read back over HTTP")


def test_duplicates_out_of_order_and_concurrent(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    everything = notifications(doc["random"])
    rng = random.Random(22)
    # Apple's retries: some notifications again, right after or much later; everything shuffled.
    deliveries = everything + [x for x in everything if rng.random() < 0.3]
    rng.shuffle(deliveries)
    results: List[Tuple[int, Any]] = []
    lock = threading.Lock()
    with Server(*serve_args(pki, doc, tmp_path)) as s:
        queue = list(deliveries)

        def worker() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    jws = queue.pop()
                r = s.post("sandbox", jws)
                with lock:
                    results.append(r)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(status == 200 for status, _ in results), [r for r in results if r[0] != 200][:3]
        stored = sum(1 for _, r in results if r["stored"])
        assert stored == len(set(everything)) and len(results) - stored == len(deliveries) - len(set(everything))
        status, summary = s.get("/v1/sandbox/summary")
        assert summary["disagreements"] == [] and summary["checkedNotifications"] > 200, summary
        _, metrics = s.get("/metrics")
        assert metric(metrics, "appstoreserver_notifications_received_total", environment="sandbox") == len(deliveries)
        assert metric(metrics, "appstoreserver_notifications_stored_total", environment="sandbox") == stored
        assert metric(metrics, "appstoreserver_notifications_duplicates_total", environment="sandbox") == len(deliveries) - stored
        assert metric(metrics, "appstoreserver_ingest_duration_seconds_count") == len(deliveries)
        # The events route reads the ledger: every stored notification once (duplicates are not events), newest
        # first, paged with nextBefore; the UUIDs are read from the posted payloads here.
        status, recent = s.get("/v1/sandbox/events?limit=5")
        assert status == 200 and len(recent["events"]) == 5 and recent["nextBefore"] == recent["events"][-1]["eventId"]
        listed: List[Dict[str, Any]] = []
        before = ""
        while True:
            status, page = s.get(f"/v1/sandbox/events?limit=1000{before}")
            assert status == 200
            listed += page["events"]
            if "nextBefore" not in page:
                break
            before = f"&before={page['nextBefore']}"
        ids = [e["eventId"] for e in listed]
        assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids) == stored
        assert [e["eventId"] for e in listed[:5]] == [e["eventId"] for e in recent["events"]]
        assert {e["result"]["notificationUUID"] for e in listed} == {payload_of(x)["notificationUUID"] for x in everything}
        assert all(e["result"]["stored"] and e["receivedAt"] > 1_700_000_000_000 for e in listed)
        for bad in ("limit=0", "limit=1001", "before=x", "before=0", "since=1"):
            assert s.get(f"/v1/sandbox/events?{bad}")[0] == 400, bad
        assert s.stop() == 0
    # The same state as the same notifications ingested once, in order, by the tool.
    ref = tmp_path / "reference.db"
    (tmp_path / "all.jws").write_text("".join(x + "\n" for x in everything))
    r = tool("ledger", "ingest", "--db", str(ref), "--bundle-id", doc["bundleId"], "--environment", "sandbox",
             "--root", str(pki / "root.der"), str(tmp_path / "all.jws"))
    assert r.code == 0, r
    assert tool_summary(tmp_path / "sandbox.db") == tool_summary(ref) == summary


def test_refused_posts_change_nothing(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    args = serve_args(pki, doc, tmp_path, "--ledger", f"production={tmp_path / 'production.db'}")
    with Server(*args) as s:
        first = doc["scenarios"][0]["notifications"]
        for n in first:
            assert s.post("sandbox", n["signed"])[0] == 200
        before = {env: s.get(f"/v1/{env}/summary")[1] for env in ("sandbox", "production")}
        refused = 0
        for b in doc["bad"]:
            if "signed" not in b or b["kind"] != "NOTIFICATION":
                continue
            status, r = s.post("sandbox", b["signed"])
            refused += 1
            assert (status, r["error"]["reason"], r["error"]["status"]) == (HTTP_STATUS[b["status"]], b["reason"], b["status"]), (b["name"], status, r)
            assert r["error"]["message"]
        assert refused >= 6
        # A genuine signed transaction where a notification belongs.
        status, r = s.post("sandbox", doc["scenarios"][0]["history"]["pages"][0]["signedTransactions"][0])
        assert (status, r["error"]["reason"]) == (422, "wrong_kind"), r
        refused += 1
        # A genuine sandbox notification at the production URL: genuine, wrong environment.
        status, r = s.post("production", first[0]["signed"])
        assert (status, r["error"]["reason"]) == (422, "wrong_environment"), r
        # Bodies that are not Apple's shape, and the limit.
        for body, want in [(b"", "malformed_body"), (b"not json", "malformed_body"), (b"[]", "malformed_body"),
                           (b'{"signedPayload": 5}', "malformed_body"), (b'{"other": "x"}', "malformed_body"),
                           (b"[" * 60000, "malformed_body"), (b'{"signedPayload": "a.b.c"}', "malformed")]:
            status, r = s.post("sandbox", raw=body)
            assert (status, r["error"]["reason"]) == (400, want), (body[:40], status, r)
        status, r = s.post("sandbox", "a" * 70000)
        assert (status, r["error"]["reason"]) == (413, "body_too_large"), r
        assert s.post("staging", first[0]["signed"])[0] == 404
        after = {env: s.get(f"/v1/{env}/summary")[1] for env in ("sandbox", "production")}
        assert after == before
        _, metrics = s.get("/metrics")
        assert metric(metrics, "appstoreserver_notifications_rejected_total", environment="sandbox", reason="bad_signature") == 1
        assert metric(metrics, "appstoreserver_notifications_rejected_total", environment="sandbox", reason="malformed_body") == 6
        assert metric(metrics, "appstoreserver_notifications_rejected_total", environment="production", reason="wrong_environment") == 1
        assert metric(metrics, "appstoreserver_http_refused_total", reason="body_too_large") == 1
        assert s.stop() == 0
    warned = [l for l in s.events("notification") if l["outcome"] == "rejected"]
    assert len(warned) == refused + 1 + 7 and all(l["level"] == "warn" and l["reason"] for l in warned)
    assert all(l.get("message") for l in warned if l["reason"] != "malformed_body")
    assert [l for l in s.events("refused") if l["reason"] == "body_too_large"]


def test_real_apple_notifications(tmp_path: Path) -> None:
    base = need_conformance()
    cases = [c for c in json.loads((base / "manifest.json").read_text())["cases"]
             if c["operation"] == "verifyAndDecodeNotification"]
    groups: Dict[Tuple[Any, ...], List[Dict[str, Any]]] = {}
    for c in cases:
        v = c["verifier"]
        env = {"Production": "production", "Sandbox": "sandbox"}.get(v["environment"])
        if env is None or not v["rootCertificates"] or c["expect"]["result"] == "config_error":
            continue
        if env == "production" and v.get("appAppleId") is None:
            continue
        groups.setdefault((v["bundleId"], env, v.get("appAppleId"), tuple(v["rootCertificates"])), []).append(c)
    tally = {"stored": 0, "refused": 0, "again": 0}
    for i, ((bundle, env, app_id, roots), group) in enumerate(sorted(groups.items(), key=lambda g: str(g[0]))):
        args = ["--bundle-id", bundle, "--ledger", f"{env}={tmp_path / f'{i}.db'}"]
        args += ["--app-apple-id", str(app_id)] if app_id is not None else []
        for r in roots:
            args += ["--root", str(base / r)]
        with Server(*args) as s:
            valid = []
            for c in group:
                jws = (base / c["path"]).read_text().strip()
                status, r = s.post(env, jws)
                result = c["expect"]["result"]
                if result == "valid":
                    assert status == 200 and r["stored"], (c["id"], status, r)
                    valid.append(jws)
                    tally["stored"] += 1
                elif result == "implementation-defined":
                    assert status in (200, 400, 403, 422), (c["id"], status, r)
                else:
                    classes = [p.strip().split(" ")[0] for p in str(c["expect"].get("error_class", "")).split(" / ")]
                    allowed = set().union(*(ERROR_CLASSES.get(cls, {cls}) for cls in classes))
                    assert 400 <= status < 500 and r["error"]["reason"] in allowed, (c["id"], status, r)
                    tally["refused"] += 1
            for jws in valid:
                status, r = s.post(env, jws)
                assert status == 200 and not r["stored"], r
                tally["again"] += 1
            assert s.get(f"/v1/{env}/summary", key=None)[0] == 403  # no API key configured: queries off
            assert s.stop() == 0
        assert tool_summary(tmp_path / f"{i}.db")["events"] == len(set(valid))
    print(f"\nserve, real Apple notifications: {tally['stored']} stored, {tally['again']} duplicates, "
          f"{tally['refused']} refused as the manifest expects")
    assert tally["stored"] >= 15 and tally["refused"] >= 2


def incomplete_and_contradicting(pki: Path, doc: Dict[str, Any]) -> Tuple[str, str]:
    """Two notifications signed with the test PKI, their data.status as Apple documents it (apple-lifecycle.md
    sections 1-2): a DID_RENEW (status 1) signed before its new period's purchaseDate, an INCOMPLETE_HISTORY to a
    fresh ledger; a DID_FAIL_TO_RENEW/GRACE_PERIOD (status 4) whose renewal info says retry without a
    gracePeriodExpiresDate (status 3 by section 2), a CONTRADICTION. Both signed at the same instant."""
    import sys
    sys.path.insert(0, str(REPO / "Tests" / "support"))
    import lifecycles as L
    signer = L.Signer(str(pki))
    day, t0 = L.D, L.T0 + 40 * L.D

    def tx(tid: str, otid: str, purchase: int, expires: int) -> Dict[str, Any]:
        return {"transactionId": tid, "originalTransactionId": otid, "bundleId": doc["bundleId"],
                "productId": L.PRODUCTS["basic"], "purchaseDate": purchase, "expiresDate": expires, "quantity": 1,
                "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "environment": "Sandbox",
                "signedDate": purchase}

    def note(ntype: str, subtype: Optional[str], status: int, t: Dict[str, Any], retry: bool, uuid: str) -> str:
        ri = {"originalTransactionId": t["originalTransactionId"], "autoRenewProductId": t["productId"],
              "productId": t["productId"], "autoRenewStatus": 1, "isInBillingRetryPeriod": retry,
              "environment": "Sandbox", "signedDate": t0}
        return signer.sign(L.P.notification(ntype, subtype, signed_date=t0, uuid=uuid, data={
            "appAppleId": doc["appAppleId"], "bundleId": doc["bundleId"], "environment": "Sandbox", "status": status,
            "signedTransactionInfo": signer.sign(dict(tx(t["transactionId"], t["originalTransactionId"],
                                                         t["purchaseDate"], t["expiresDate"]), signedDate=t0)),
            "signedRenewalInfo": signer.sign(ri)}))

    renew = note("DID_RENEW", None, 1, tx("8100000000000002", "8100000000000001", t0 + 33_000, t0 + 30 * day), False,
                 "5b0c2a3e-0000-4000-8000-000000000001")
    fail = note("DID_FAIL_TO_RENEW", "GRACE_PERIOD", 4,
                tx("8200000000000001", "8200000000000001", t0 - 31 * day, t0 - day), True,
                "5b0c2a3e-0000-4000-8000-000000000002")
    return renew, fail


def test_the_oracle_alerts_on_contradictions_only(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """docs/ledger.md, "Disagreements". Two notifications, each posted twice, signed here with the test PKI; their
    data.status as Apple documents it (apple-lifecycle.md sections 1-2):
    - DID_RENEW, status 1, signed before its new period's purchaseDate (as Apple signs them): a fresh ledger knows no
      transaction then: INCOMPLETE_HISTORY, logged at info with what is missing, not counted in the alert;
    - DID_FAIL_TO_RENEW/GRACE_PERIOD, status 4, whose renewal info says retry without a gracePeriodExpiresDate
      (status 3 by section 2): a CONTRADICTION, one warning and one count, the duplicate counting nothing."""
    renew, fail = incomplete_and_contradicting(pki, doc)
    with Server(*serve_args(pki, doc, tmp_path)) as s:
        answers = [s.post("sandbox", jws) for jws in (renew, renew, fail, fail)]
        assert [a[0] for a in answers] == [200] * 4, answers
        assert [(a[1]["stored"], a[1]["verdict"]) for a in answers] == [
            (True, "INCOMPLETE_HISTORY"), (False, "INCOMPLETE_HISTORY"), (True, "CONTRADICTION"), (False, "CONTRADICTION")]
        assert answers[0][1]["appleStatus"] == 1 and "catch-up" in answers[0][1]["missing"]
        assert answers[2][1]["appleStatus"] == 4 and answers[2][1]["engineStatus"] == 3
        _, metrics = s.get("/metrics")
        assert metric(metrics, "appstoreserver_oracle_disagreements_total", environment="sandbox") == 1
        assert metric(metrics, "appstoreserver_oracle_incomplete_history_total", environment="sandbox") == 1
        assert s.stop() == 0
        logged = s.events("notification")
        warnings = [l for l in logged if l["level"] == "warn"]
        assert [l.get("oracle") for l in warnings] == ["CONTRADICTION"], warnings
        incomplete = [l for l in logged if l.get("oracle") == "INCOMPLETE_HISTORY"]
        assert len(incomplete) == 2 and all(l["level"] == "info" and "missing" in l for l in incomplete), incomplete
    # The summary counts each once and lists the contradiction first (both are signed at t0); a list cut at one
    # entry keeps the contradiction, says so on stderr, and still counts both.
    summary = tool_summary(tmp_path / "sandbox.db")
    assert (summary["contradictions"], summary["incompleteHistories"]) == (1, 1), summary
    assert [d["verdict"] for d in summary["disagreements"]] == ["CONTRADICTION", "INCOMPLETE_HISTORY"], summary
    cut = tool("ledger", "show", "--db", str(tmp_path / "sandbox.db"), "--disagreements", "1")
    assert cut.code == 0 and "1 of 2 disagreements listed" in cut.err, cut
    assert [d["verdict"] for d in cut.json()["disagreements"]] == ["CONTRADICTION"]
    assert (cut.json()["contradictions"], cut.json()["incompleteHistories"]) == (1, 1)
    for bad in ("-1", "1000001"):
        r = tool("ledger", "show", "--db", str(tmp_path / "sandbox.db"), f"--disagreements={bad}")
        assert r.code != 0 and "disagreementLimit" in r.err, r
    r = tool("ledger", "show", "--db", str(tmp_path / "sandbox.db"), "8100000000000001", "--disagreements", "5")
    assert r.code != 0 and "--disagreements is for the counts" in r.err, r
    assert_paged_disagreements(str(tmp_path / "sandbox.db"))
    assert_paged_ids(str(tmp_path / "sandbox.db"))


def assert_paged_ids(db: str) -> None:
    """`ledger subscriptions` and `ledger customers` over the two notifications of `incomplete_and_contradicting`: two
    subscriptions without an appAccountToken, so each originalTransactionId is a customer too; pages of one."""
    for what in ("subscriptions", "customers"):
        first = tool("ledger", what, "--db", db, "--limit", "1")
        assert first.code == 0 and "--after 8100000000000001" in first.err, first
        assert first.json() == {"ids": ["8100000000000001"], "next": "8100000000000001"}, first
        last = tool("ledger", what, "--db", db, "--after", "8100000000000001", "--limit", "1")
        assert last.code == 0 and last.json() == {"ids": ["8200000000000001"]} and "--after" not in last.err, last
        whole = tool("ledger", what, "--db", db)
        assert whole.code == 0 and whole.json() == {"ids": ["8100000000000001", "8200000000000001"]}, whole
        r = tool("ledger", what, "--db", db, "--limit", "10001")
        assert r.code != 0 and "limit must be 1...10000" in r.err, r


def assert_paged_disagreements(db: str) -> None:
    """`ledger disagreements`: a ledger holding the contradiction and the incomplete history above, a page at a time."""
    first = tool("ledger", "disagreements", "--db", db, "--limit", "1")
    assert first.code == 0 and "--after" in first.err, first
    page = first.json()
    assert [d["verdict"] for d in page["disagreements"]] == ["CONTRADICTION"] and page["next"], page
    last = tool("ledger", "disagreements", "--db", db, "--after", page["next"])
    assert last.code == 0 and "--after" not in last.err, last
    assert [d["verdict"] for d in last.json()["disagreements"]] == ["INCOMPLETE_HISTORY"], last
    assert "next" not in last.json(), last
    whole = tool("ledger", "disagreements", "--db", db)
    assert whole.code == 0 and whole.json()["disagreements"] == page["disagreements"] + last.json()["disagreements"]
    for args, why in ((["--limit", "0"], "limit must be 1...10000"), (["--after", "CONTRADICTION:x:y"], "not a cursor")):
        r = tool("ledger", "disagreements", "--db", db, *args)
        assert r.code != 0 and why in r.err, r


# ---- the HTTP layer -----------------------------------------------------------------------------------------------

def test_http_layer_limits_and_slow_clients(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"limits": {"headerTimeoutSeconds": 1.5, "bodyTimeoutSeconds": 1.5,
                                             "idleTimeoutSeconds": 1.5, "maxConnections": 4, "maxHeaderBytes": 4096}}))
    jws = doc["scenarios"][0]["notifications"][0]["signed"]
    body = json.dumps({"signedPayload": jws}).encode()
    with Server("--config", str(config), *serve_args(pki, doc, tmp_path)) as s:
        port = s.port
        h = b"Host: x\r\n"
        bad = {
            b"GET /healthz HTTP/1.1\nHost: x\n\n": (400, "bad_request"),                      # bare LF
            b"GET /healthz HTTP/1.1\r\nHost: x\rY\r\n\r\n": (400, "bad_request"),             # bare CR
            b"GET /healthz HTTP/1.1\r\n\r\n": (400, "bad_request"),                          # no Host
            b"GET /healthz HTTP/1.1\r\n" + h + h + b"\r\n": (400, "bad_request"),            # two Hosts
            b"GET  /healthz HTTP/1.1\r\n" + h + b"\r\n": (400, "bad_request"),               # two spaces
            b"GET http://x/healthz HTTP/1.1\r\n" + h + b"\r\n": (400, "bad_request"),        # absolute-form
            b"GET /healthz HTTP/2.0\r\n" + h + b"\r\n": (505, "version_not_supported"),
            b"GET /healthz HTTP/1.1\r\n" + h + b" folded\r\n\r\n": (400, "bad_request"),     # obs-fold
            b"GET /healthz HTTP/1.1\r\n" + h + b"Bad Name: v\r\n\r\n": (400, "bad_request"),
            b"GET /healthz HTTP/1.1\r\n" + h + b"X: a\x01b\r\n\r\n": (400, "bad_request"),   # control character
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello": (400, "bad_request"),
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: -5\r\n\r\n": (400, "bad_request"),
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n": (400, "bad_request"),
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: gzip\r\n\r\n": (501, "unsupported_transfer_encoding"),
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n": (400, "bad_request"),
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Expect: magic\r\n\r\n": (417, "expectation_failed"),
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: 70000\r\n\r\n": (413, "body_too_large"),
            b"GET /healthz HTTP/1.1\r\n" + h + b"X: " + b"a" * 5000 + b"\r\n\r\n": (431, "header_too_large"),
            b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n" + h + b"\r\n": (414, "uri_too_long"),
        }
        for request, (code, reason) in bad.items():
            answer = raw(port, request)
            assert statuses(answer) == [code] and error_reason(answer) == reason, (request[:60], answer[:300])
            assert b"Connection: close" in answer
        # Chunked, decoded within the body limit: a whole notification, and one too large.
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 1000]), body[i:i + 1000]) for i in range(0, len(body), 1000))
        answer = raw(port, b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                     + chunks + b"0\r\nX-Trailer: ok\r\n\r\n")
        assert statuses(answer) == [200] and json.loads(answer.split(b"\r\n\r\n", 1)[1])["stored"], answer[:300]
        big = b"8000\r\n" + b"x" * 0x8000 + b"\r\n"
        answer = raw(port, b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\r\n\r\n" + big * 3)
        assert statuses(answer) == [413], answer[:300]
        # Expect: 100-continue: the interim answer once the length is accepted, then the real one.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            assert c.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
            c.sendall(body)
            answer = read_all(c, 3)
            assert statuses(answer) == [200] and b'"stored":false' in answer, answer[:300]
        # Pipelining and keep-alive: two requests in one write, two answers in order.
        answer = raw(port, b"GET /healthz HTTP/1.1\r\n" + h + b"\r\nGET /nowhere HTTP/1.1\r\n" + h + b"Connection: close\r\n\r\n")
        assert statuses(answer) == [200, 404], answer
        # HEAD: the headers of GET, no body.
        answer = raw(port, b"HEAD /healthz HTTP/1.1\r\n" + h + b"Connection: close\r\n\r\n")
        head, _, rest = answer.partition(b"\r\n\r\n")
        assert statuses(answer, head=True) == [200] and b"Content-Length: " in head and b"Content-Length: 0" not in head and rest == b""
        assert s.request("GET", "/notifications/sandbox")[0] == 405
        assert s.request("GET", "/notifications/sandbox")[1]["allow"] == "POST"

        # Slow clients. Headers: a deadline from the connection's start, not reset by trickling bytes.
        t0 = time.monotonic()
        answer = trickle(port, b"POST /notifications/sandbox HTTP/1.1\r\nHost: x\r\n", b"X-Slow: 1234567890123456789012345678901234567890")
        took = time.monotonic() - t0
        assert statuses(answer) == [408] and error_reason(answer) == "header_timeout", answer
        # The deadlines here are 1.5 s: 30 s upper bounds (20x) that load cannot break, the reason asserted first, and
        # every read below waits 60 s, so a server that never times out fails on the bound, not on the read.
        assert 1.3 <= took < 30, took
        t0 = time.monotonic()
        assert raw(port, b"", wait=60) == b""  # a connection that sends nothing is closed, without an answer
        assert 1.3 <= time.monotonic() - t0 < 30
        # Body: a deadline from the end of the headers.
        t0 = time.monotonic()
        answer = raw(port, b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: 100\r\n\r\n0123456789", wait=60)
        assert statuses(answer) == [408] and error_reason(answer) == "body_timeout", answer
        assert 1.3 <= time.monotonic() - t0 < 30
        # Idle keep-alive: closed after the idle timeout.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"GET /healthz HTTP/1.1\r\n" + h + b"\r\n")
            time.sleep(0.3)
            first = c.recv(65536)
            assert statuses(first) == [200] and b"Connection: keep-alive" in first
            t0 = time.monotonic()
            assert read_all(c, 60) == b""
            assert 0.9 <= time.monotonic() - t0 < 30
        # Too many connections: four held open (sending nothing), the fifth answered 503 at once.
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(4)]
        try:
            time.sleep(1.0)  # the server's accept loop takes the four (they send nothing: their deadline is 1.5 s)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as fifth:
                answer = read_all(fifth, 1.0)
            assert statuses(answer) == [503] and error_reason(answer) == "too_many_connections", answer
            assert b"Retry-After: 1" in answer
        finally:
            for c in held:
                c.close()
        # The slots are free again once the server has seen the four close (waited for, not slept on).
        deadline = time.monotonic() + 30
        while s.request("GET", "/healthz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert s.request("GET", "/healthz")[0] == 200

        _, metrics = s.get("/metrics")
        for reason in ("bad_request", "header_timeout", "body_timeout", "too_many_connections", "body_too_large",
                       "header_too_large", "uri_too_long", "version_not_supported", "unsupported_transfer_encoding",
                       "expectation_failed"):
            assert metric(metrics, "appstoreserver_http_refused_total", reason=reason) >= 1, reason
        status, summary = s.get("/v1/sandbox/summary")
        assert summary["events"] == 1  # the chunked notification, nothing else
        assert s.stop() == 0
    # Every line of the log is JSON (Server._read parsed them all), refusals say why.
    assert {l["reason"] for l in s.events("refused")} >= {"bad_request", "header_timeout", "too_many_connections"}


# ---- issue 31: header bytes, bounded slots ---------------------------------------------------------------------------

def test_header_values_are_byte_ranges_and_control_characters_are_refused(pki: Path, doc: Dict[str, Any],
                                                                          tmp_path: Path) -> None:
    jws = doc["scenarios"][0]["notifications"][0]["signed"]
    body = json.dumps({"signedPayload": jws}).encode()
    with Server(*serve_args(pki, doc, tmp_path)) as s:
        h = b"Host: x\r\n"
        auth = b"Authorization: Bearer " + KEY.encode()
        # Controls: the same requests without the hostile byte are answered.
        assert statuses(raw(s.port, b"GET /v1/sandbox/summary HTTP/1.1\r\n" + h + auth + b"\r\nConnection: close\r\n\r\n")) == [200]
        assert statuses(raw(s.port, b"GET /healthz HTTP/1.1\r\n" + h + b"X: a\tb\r\nConnection: close\r\n\r\n")) == [200]  # HTAB is fine
        hostile = [
            # The reproducers: a NUL ended the value for the parser, and what followed it was ignored.
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: 2\x00 99\r\n\r\n{}",
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\x00, gzip\r\n\r\n0\r\n\r\n",
            b"GET /v1/sandbox/summary HTTP/1.1\r\n" + h + auth + b"\x00junk\r\n\r\n",
            # Every other control character but HTAB, in a value, a name, the request line.
            *[b"GET /healthz HTTP/1.1\r\n" + h + b"X: a" + bytes([c]) + b"b\r\n\r\n" for c in [*range(0, 9), *range(10, 32), 127] if c not in (10, 13)],
            b"GET /healthz HTTP/1.1\r\n" + h + b"X\x00Y: v\r\n\r\n",
            b"GET /healthz\x00 HTTP/1.1\r\n" + h + b"\r\n",
            b"GET /healthz HTTP/1.1\x00\r\n" + h + b"\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: x\x00y\r\n\r\n",
            # A chunk size line: "5\0junk" was read as 5.
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\r\n\r\n5\x00junk\r\nhello\r\n0\r\n\r\n",
            b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\r\n\r\n5;x=\x01\r\nhello\r\n0\r\n\r\n",
        ]
        for request in hostile:
            answer = raw(s.port, request)
            assert statuses(answer) == [400] and error_reason(answer) == "bad_request", (request[:80], answer[:300])
        # A NUL in a posted notification's Content-Length: nothing reached the ledger.
        answer = raw(s.port, b"POST /notifications/sandbox HTTP/1.1\r\n" + h + b"Content-Length: %d\x00 1\r\n\r\n" % len(body) + body)
        assert statuses(answer) == [400], answer[:300]
        assert s.get("/v1/sandbox/summary")[1]["events"] == 0
        assert s.stop() == 0


def test_keep_alive_connections_hold_a_slot_for_a_bounded_time(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    jws = doc["scenarios"][0]["notifications"][0]["signed"]
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"limits": {"maxConnections": 4, "maxRequestsPerConnection": 5, "idleTimeoutSeconds": 60}}))
    with Server("--config", str(config), *serve_args(pki, doc, tmp_path)) as s:
        assert (s.started["maxRequestsPerConnection"], s.started["maxConnectionSeconds"]) == (5, 60)
        # The request cap: the fifth answer on one connection says Connection: close, and the server closes.
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
            for i in range(5):
                c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                head = b""
                while b"\r\n\r\n" not in head:
                    head += c.recv(1)
                length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
                got = b""
                while len(got) < length:
                    got += c.recv(length - len(got))
                assert (b"Connection: close" in head) == (i == 4), (i, head)
            assert read_all(c, 5) == b""  # closed by the server
        assert s.stop() == 0
    life = 5.0
    config.write_text(json.dumps({"limits": {"maxConnections": 4, "maxConnectionSeconds": life, "idleTimeoutSeconds": 60}}))
    with Server("--config", str(config), *serve_args(pki, doc, tmp_path)) as s:
        assert (s.started["maxRequestsPerConnection"], s.started["maxConnectionSeconds"]) == (1000, life)
        # The reproducer: four connections each sending GET /healthz every 0.5 s (the idle timeout never passes)
        # held every slot, and a genuine notification got 503 for as long as they kept on. Now each connection
        # ends at its lifetime (5 s): a request after it is answered with Connection: close, an idle wait ends
        # there; and the notification gets through.
        stop = threading.Event()
        lifetimes: List[float] = []
        answered: List[int] = []
        lock = threading.Lock()

        def hog() -> None:
            t0 = time.monotonic()  # before connecting: the server's clock for this connection starts later
            c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            try:
                while not stop.is_set():
                    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    head = b""
                    while b"\r\n\r\n" not in head:
                        chunk = c.recv(1)
                        if not chunk:  # closed while idle at its lifetime (or right as this request arrived)
                            with lock:
                                lifetimes.append(time.monotonic() - t0)
                            return
                        head += chunk
                    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
                    while length > 0:
                        length -= len(c.recv(length))
                    with lock:
                        answered.append(1)
                    if b"Connection: close" in head:
                        with lock:
                            lifetimes.append(time.monotonic() - t0)
                        return
                    time.sleep(0.5)
            finally:
                c.close()

        hogs = [threading.Thread(target=hog) for _ in range(4)]
        for t in hogs:
            t.start()
        deadline = time.monotonic() + 30
        while len(answered) < 4:  # every hog connected and answered once: all four slots are taken
            assert time.monotonic() < deadline, answered
            time.sleep(0.05)
        try:
            with socket.create_connection(("127.0.0.1", s.port), timeout=10) as fifth:  # every slot taken
                answer = read_all(fifth, 1.0)
            assert statuses(answer) == [503] and error_reason(answer) == "too_many_connections", answer
            # Each hog is let go at its lifetime: 5 s after acceptance plus at most one 0.5 s pause. The bound
            # checked is 4x that (a loaded 2-core machine slows the hogs' turns, never the server's clock).
            for t in hogs:
                t.join(timeout=4 * (life + 0.5))
            assert len(lifetimes) == 4 and all(life <= x < 4 * (life + 0.5) for x in lifetimes), lifetimes
            status, answer = s.post("sandbox", jws)
            assert status == 200 and answer["stored"], answer
        finally:
            stop.set()
            for t in hogs:
                t.join(timeout=10)
        # A client address's cap: two connections from 127.0.0.1 at most; 127.0.0.2 (loopback too) still gets in.
        assert s.stop() == 0
    with Server(*serve_args(pki, doc, tmp_path, "--max-connections-per-address", "2", "--max-connections", "8")) as s:
        held = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(2)]
        try:
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", s.port), timeout=10) as third:
                answer = read_all(third, 1.0)
            assert statuses(answer) == [503] and error_reason(answer) == "too_many_connections_from_address", answer
            assert b"Retry-After: 1" in answer
            try:
                other = socket.create_connection(("127.0.0.1", s.port), timeout=10, source_address=("127.0.0.2", 0))
            except OSError:
                other = None  # no 127.0.0.2 on this machine's loopback: the cap alone was checked
            if other is not None:
                with other:
                    other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    assert statuses(read_all(other, 5)) == [200]
        finally:
            for c in held:
                c.close()
        deadline = time.monotonic() + 20
        while True:  # the address's slots are free again once the server has seen the two closes
            try:
                if s.request("GET", "/healthz")[0] == 200:
                    break
            except (ConnectionError, http.client.HTTPException):
                pass
            assert time.monotonic() < deadline
            time.sleep(0.1)
        _, metrics = s.get("/metrics")
        assert metric(metrics, "appstoreserver_http_refused_total", reason="too_many_connections_from_address") >= 1
        assert s.stop() == 0


# ---- queries, health, metrics, the OpenAPI description --------------------------------------------------------------

def test_query_endpoints_need_the_key(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    lc = doc["scenarios"][0]
    token = next(e["customer"] for e in lc["expect"] if "customer" in e)
    sub = next(e["subscription"] for e in lc["expect"] if "subscription" in e)
    with Server(*serve_args(pki, doc, tmp_path, key=False), env={"APPSTORE_SERVE_API_KEY": KEY}) as s:
        for n in lc["notifications"]:
            assert s.post("sandbox", n["signed"])[0] == 200
        path = f"/v1/sandbox/customers/{token}"
        status, headers, body = s.request("GET", path)
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        for wrong in (KEY[:-1] + "x", KEY[:-1], KEY + "x", "", "x" * 200):
            assert s.get(path, key=wrong)[0] == 401, wrong
        assert s.request("GET", path, headers={"Authorization": f"Basic {KEY}"})[0] == 401
        status, customer = s.get(path)
        assert status == 200 and customer["customerId"] == token.lower()
        assert s.get(f"/v1/sandbox/customers/{token.upper()}")[1]["customerId"] == token.lower()
        assert s.get(f"/v1/sandbox/subscriptions/{sub}")[1]["originalTransactionId"] == sub
        assert s.get(f"/v1/sandbox/subscriptions/{sub}?at=2025-03-03T01:00:00Z")[1]["at"] == 1740963600000
        assert s.get("/v1/sandbox/subscriptions/999")[0] == 404
        assert s.get(f"/v1/sandbox/subscriptions/{sub}?at=yesterday")[0] == 400
        for bad in ("yesterday", "-5", "0", "1960-01-01T00:00:00Z"):
            status, body = s.get(f"/v1/sandbox/customers/{token}?asOf={bad}")
            assert status == 400 and "asOf" in json.dumps(body), (bad, status, body)
        assert s.get(f"/v1/sandbox/subscriptions/{sub}?at=2025-03-03T01:00:00Z&asOf=1740963600000")[0] == 200
        assert s.get(f"/v1/sandbox/subscriptions/{sub}?when=1")[0] == 400
        assert s.get("/v1/sandbox/events?limit=0")[0] == 400
        assert s.get("/v1/sandbox/summary?x=1")[0] == 400
        assert s.get("/v1/sandbox/customers/a%2Fb")[0] == 404  # an encoded slash is no identifier
        status, r = s.get("/v1/production/summary")
        assert status == 404 and r["error"]["reason"] == "environment_not_served"
        status, health = s.get("/healthz", key=None)
        assert status == 200 and health == {"status": "ok", "environments": ["sandbox"], "version": health["version"]}
        # /metrics tells each environment's counts and the version: behind the key too (issue 31).
        status, headers, text = s.request("GET", "/metrics")
        assert status == 401 and headers["www-authenticate"].startswith("Bearer") and b"appstoreserver_" not in text
        assert s.request("GET", "/metrics", headers={"Authorization": f"Bearer {KEY[:-1]}x"})[0] == 401
        status, headers, text = s.request("GET", "/metrics", headers={"Authorization": f"Bearer {KEY}"})
        assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
        assert metric(text.decode(), "appstoreserver_http_requests_total", route="customer", code="401") == 7
        assert s.stop() == 0
    everything = "".join(s.raw_log) + s.p.stderr.read().decode()  # type: ignore[union-attr]
    assert KEY not in everything and KEY[:12] not in everything
    assert len(s.events("unauthorized")) == 5  # wrong keys are logged (without the key); missing ones are not


def test_metrics_need_the_key_unless_opened_to_loopback(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    # No key configured: /metrics is off like the query routes (it would tell counts and the version to anyone).
    with Server(*serve_args(pki, doc, tmp_path, key=False)) as s:
        status, _, text = s.request("GET", "/metrics")
        assert status == 403 and json.loads(text)["error"]["reason"] == "queries_disabled", text
        assert s.stop() == 0
    # --metrics-without-key: a scraper on loopback needs none (the test client is on loopback) ...
    with Server(*serve_args(pki, doc, tmp_path, "--metrics-without-key")) as s:
        status, headers, text = s.request("GET", "/metrics")
        assert status == 200 and b"appstoreserver_build_info" in text
        assert s.started["metricsWithoutKey"] is True
        # ... the query routes still do.
        assert s.request("GET", "/v1/sandbox/summary")[0] == 401
        assert s.stop() == 0
    # ... and one elsewhere does (ServeApp.isLoopback): a listener on every address, reached over a non-loopback one.
    import socket as _s
    try:
        probe = _s.socket(_s.AF_INET, _s.SOCK_DGRAM)
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this picks the address of the default route
        outside = probe.getsockname()[0]
        probe.close()
    except OSError:
        outside = ""
    if not outside or outside.startswith("127."):
        pytest.skip("SKIPPED: this machine has no non-loopback address to reach the server from")
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"metricsWithoutKey": True}))
    with Server("--config", str(config), *serve_args(pki, doc, tmp_path), "--listen", "0.0.0.0:0") as s:
        c = http.client.HTTPConnection(outside, s.port, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        assert r.status == 401, r.status
        r.read()
        c.close()
        assert s.stop() == 0


def test_api_key_comes_from_a_file_or_the_environment(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    args = serve_args(pki, doc, tmp_path, key=False)
    r = tool("serve", *args, "--api-key-file", KEY, "--check")
    assert r.code == USAGE and KEY not in r.err and "never given on the command line" in r.err, r
    (tmp_path / "short").write_text("secret\n")
    r = tool("serve", *args, "--api-key-file", str(tmp_path / "short"), "--check")
    assert r.code == CONFIG and "16 to 512" in r.err and "secret" not in r.err, r
    r = tool("serve", *args, "--check", env={"APPSTORE_SERVE_API_KEY": KEY})
    assert r.code == 0 and "API key set" in r.err, r
    r = tool("serve", *args, "--check")
    assert r.code == 0 and "no API key" in r.err, r


def schema_of_ledger_models(models: Dict[str, Any]) -> Dict[str, Any]:
    """The Ledger* schemas spec/serve.openapi.json must hold, derived from spec/models.json."""
    scalars = {"String": {"type": "string"}, "UUID": {"type": "string", "format": "uuid"},
               "Int64": {"type": "integer", "format": "int64"}, "Int32": {"type": "integer", "format": "int32"},
               "Bool": {"type": "boolean"},
               "Date": {"type": "integer", "format": "int64", "description": "milliseconds since 1970"}}
    names = ["LedgerIngestResult", "LedgerCustomer", "LedgerSubscription", "LedgerSummary", "LedgerEntitlement",
             "LedgerPurchase", "LedgerConsumableTotal", "LedgerDisagreement"]

    def field(t: Any) -> Dict[str, Any]:
        if isinstance(t, list):
            return {"type": "array", "items": field(t[0])}
        if t in scalars:
            return dict(scalars[t])
        if t in models["models"]:
            return {"$ref": f"#/components/schemas/{t}"}
        return {"type": "integer" if models["enums"][t]["rawType"].startswith("Int") else "string", "x-enum": t}

    out = {}
    for name in names:
        m = models["models"][name]
        props = {}
        for f in m["fields"]:
            s = field(f["type"])
            if "$ref" not in s:
                s["description"] = f["doc"] if "description" not in s else f"{f['doc']} ({s['description']})"
            props[f.get("key", f["name"])] = s
        out[name] = {"type": "object", "description": m["doc"] + " (spec/models.json)",
                     "required": [f.get("key", f["name"]) for f in m["fields"] if f.get("required")], "properties": props}
    return out


def conforms(value: Any, schema: Dict[str, Any], spec: Dict[str, Any], where: str = "$") -> List[str]:
    """A small JSON Schema check (type, required, properties, items, $ref, oneOf, enum) of what the server sent."""
    if "$ref" in schema:
        return conforms(value, spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]], spec, where)
    if "oneOf" in schema:
        return [] if any(not conforms(value, s, spec, where) for s in schema["oneOf"]) else [f"{where}: matches no oneOf"]
    types = {"object": dict, "array": list, "string": str, "boolean": bool}
    t = schema.get("type")
    if t == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{where}: not an integer: {value!r}"]
    elif t in types and not isinstance(value, types[t]):
        return [f"{where}: not {t}: {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not in {schema['enum']}"]
    problems = []
    if t == "object":
        problems += [f"{where}.{k}: missing" for k in schema.get("required", []) if k not in value]
        props = schema.get("properties", {})
        for k, v in value.items():
            if props and k not in props:
                problems.append(f"{where}.{k}: not in the schema")
            elif k in props:
                problems += conforms(v, props[k], spec, f"{where}.{k}")
    if t == "array":
        for i, item in enumerate(value):
            problems += conforms(item, schema["items"], spec, f"{where}[{i}]")
    return problems


def test_openapi_describes_the_routes(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    spec = json.loads(OPENAPI.read_text())
    routes = tool("serve", "--print-routes").json()
    served_routes = {(r["method"], r["path"]) for r in routes}
    documented = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert served_routes == documented, f"served only: {served_routes - documented}; documented only: {documented - served_routes}"
    want = schema_of_ledger_models(json.loads(MODELS.read_text()))
    for name, schema in want.items():
        assert spec["components"]["schemas"].get(name) == schema, \
            f"spec/serve.openapi.json: {name} differs from spec/models.json; it should read:\n{json.dumps(schema, indent=2)}"
    # Every operation, live: the status is one it documents, a JSON answer fits its schema.
    lc = doc["scenarios"][0]
    values = {"environment": "sandbox", "customerId": next(e["customer"] for e in lc["expect"] if "customer" in e),
              "originalTransactionId": next(e["subscription"] for e in lc["expect"] if "subscription" in e)}
    checked = 0
    with Server(*serve_args(pki, doc, tmp_path)) as s:
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                concrete = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
                body = json.dumps({"signedPayload": lc["notifications"][0]["signed"]}).encode() if method == "post" else None
                status, headers, data = s.request(method.upper(), concrete, body, {"Authorization": f"Bearer {KEY}"})
                assert str(status) in op["responses"], (method, path, status)
                content = op["responses"][str(status)].get("content", {})
                ctype = headers["content-type"].split(";")[0]
                assert ctype in content, (path, ctype)
                if ctype == "application/json":
                    problems = conforms(json.loads(data), content[ctype]["schema"], spec)
                    assert not problems, (path, problems)
                checked += 1
                for p in op.get("parameters", []):
                    p = spec["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
                    assert p["name"] in values or p["in"] == "query", p
        # The error shape, and a customer with everything in it.
        status, _, data = s.request("GET", "/v1/sandbox/customers/x")
        assert status == 401 and not conforms(json.loads(data), {"$ref": "#/components/schemas/Error"}, spec)
        for n in notifications(doc["scenarios"]):
            s.post("sandbox", n)
        for lc2 in doc["scenarios"]:
            for e in lc2["expect"]:
                if "customer" in e:
                    _, c = s.get(f"/v1/sandbox/customers/{e['customer']}?at={e['at']}")
                    assert not conforms(c, {"$ref": "#/components/schemas/LedgerCustomer"}, spec)
        assert s.stop() == 0
    assert checked == len(documented)


# ---- shutdown and crashes -----------------------------------------------------------------------------------------

def test_sigterm_finishes_what_was_begun(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    jws = doc["scenarios"][1]["notifications"][0]["signed"]
    body = json.dumps({"signedPayload": jws}).encode()
    with Server(*serve_args(pki, doc, tmp_path)) as s:
        idle = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.2)
        assert statuses(idle.recv(65536)) == [200]
        busy = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        busy.sendall(b"POST /notifications/sandbox HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:100])
        time.sleep(0.3)
        s.p.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", s.port), timeout=5)
        assert read_all(idle, 5) == b""  # the idle keep-alive connection is closed at once
        busy.sendall(body[100:])
        answer = read_all(busy, 10)
        assert statuses(answer) == [200] and b"Connection: close" in answer and b'"stored":true' in answer, answer
        assert s.p.wait(timeout=30) == 0
        s.reader.join(timeout=10)
        idle.close()
        busy.close()
    events = [l["event"] for l in s.logs]
    assert events[-1] == "stopped" and events.index("stopping") < events.index("notification")  # finished while stopping
    assert not (tmp_path / "sandbox.db-wal").exists(), "the ledger was not closed (its WAL is still there)"
    assert tool_summary(tmp_path / "sandbox.db")["events"] == 1


def payload_digest(jws: str) -> str:
    """The events table's key of a value: its payload's SHA-256 (its `signed` column holds a stored form)."""
    p = jws.split(".")[1]
    return hashlib.sha256(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))).hexdigest()


def stored_payloads(db: Path) -> set:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {row[0] for row in c.execute("SELECT payload_sha256 FROM events")}


def test_sigkill_under_load_loses_no_acknowledged_notification(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    kills = int(os.environ.get("APPSTORESERVER_SERVE_KILLS", "5"))
    rng = random.Random(int(os.environ.get("APPSTORESERVER_SERVE_SEED", "22")))
    items = notifications(doc["scenarios"] + doc["random"])
    # What every complete delivery must come to: the same notifications ingested once, in order, by the tool.
    ref = tmp_path / "reference.db"
    (tmp_path / "all.jws").write_text("".join(x + "\n" for x in items))
    r = tool("ledger", "ingest", "--db", str(ref), "--bundle-id", doc["bundleId"], "--environment", "sandbox",
             "--root", str(pki / "root.der"), str(tmp_path / "all.jws"))
    assert r.code == 0, r
    reference = tool_summary(ref)
    db = tmp_path / "sandbox.db"
    acked: set = set()
    per_round: List[int] = []
    epochs = 0
    t_start = time.monotonic()
    for round_ in range(kills + 1):
        if acked == set(items):
            # Everything acknowledged: the state is a clean ingest's. Start again on a new database, so that the
            # next kills land among first writes again (not only among duplicates).
            assert tool_summary(db) == reference
            epochs += 1
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            acked = set()
        with Server(*serve_args(pki, doc, tmp_path)) as s:
            # Apple sends again what got no 200 (here at once, in any order, four at a time), with a few
            # acknowledged ones again (a duplicate delivery).
            pending = [x for x in items if x not in acked]
            pending += [x for x in acked if rng.random() < 0.05]
            rng.shuffle(pending)
            lock = threading.Lock()
            got: List[str] = []

            def worker() -> None:
                while True:
                    with lock:
                        if not pending:
                            return
                        jws = pending.pop()
                    try:
                        status, _ = s.post("sandbox", jws)
                    except (OSError, http.client.HTTPException, ValueError):
                        return  # the server died: this one got no 200
                    if status == 200:
                        with lock:
                            got.append(jws)

            threads = [threading.Thread(target=worker) for _ in range(4)]
            for t in threads:
                t.start()
            if round_ < kills:
                time.sleep(rng.uniform(0.02, 0.4))
                s.p.kill()
                s.p.wait()
            for t in threads:
                t.join()
            if round_ == kills:
                assert s.stop() == 0
        acked |= set(got)
        per_round.append(len(got))
        # With no server running: every acknowledged notification is stored, and the database is sound.
        lost = {payload_digest(j) for j in acked} - stored_payloads(db)
        assert not lost, f"round {round_}: {len(lost)} notifications answered 200 are not in the ledger"
    assert acked == set(items)
    assert tool_summary(db) == reference
    print(f"\nserve crash run: {kills} servers killed with SIGKILL under load (4 clients), {len(items)} notifications "
          f"delivered completely {epochs + 1} times (a new database each time), 200s per round {per_round}, "
          f"none lost, every complete delivery = a clean ingest's state ({time.monotonic() - t_start:.1f} s)")


# ---- configuration ------------------------------------------------------------------------------------------------

def test_configuration_file_and_flags(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    conf_dir = tmp_path / "etc"
    conf_dir.mkdir()
    (conf_dir / "root.der").write_bytes((pki / "root.der").read_bytes())
    (conf_dir / "key").write_text(KEY)
    config = {"listen": "127.0.0.1:0", "bundleId": doc["bundleId"], "appAppleId": doc["appAppleId"],
              "roots": ["root.der"], "ledgers": {"sandbox": "data/sandbox.db"}, "apiKeyFile": "key",
              "limits": {"maxBodyBytes": 32768, "maxConnections": 8}}
    (conf_dir / "data").mkdir()
    path = conf_dir / "serve.json"
    path.write_text(json.dumps(config))
    r = subprocess.run([TOOL, "serve", "--config", str(path), "--check"], capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 0 and "configuration ok" in r.stderr and "API key set" in r.stderr, r
    assert (conf_dir / "data" / "sandbox.db").exists()  # relative to the file's folder
    jws = doc["scenarios"][0]["notifications"][0]["signed"]
    with Server("--config", str(path), "--max-connections", "3", "--log-payloads") as s:
        assert s.started["maxBodyBytes"] == 32768 and s.started["maxConnections"] == 3  # the flag wins
        assert s.post("sandbox", jws)[0] == 200
        for n in doc["scenarios"][0]["notifications"][1:3]:
            s.post("sandbox", n["signed"])
        assert len(s.get("/v1/sandbox/events")[1]["events"]) == 3
        assert s.stop() == 0
    assert s.events("notification")[0]["signedPayload"] == jws  # --log-payloads

    def check(conf: Dict[str, Any], *flags: str) -> subprocess.CompletedProcess:
        path.write_text(json.dumps(conf))
        return subprocess.run([TOOL, "serve", "--config", str(path), "--check", *flags], capture_output=True, text=True)

    r = check({**config, "limit": {}})
    assert r.returncode == CONFIG and '"limit"' in r.stderr, r
    r = check({**config, "limits": {"maxBodyBytes": 10}})
    assert r.returncode == CONFIG and "limits.maxBodyBytes" in r.stderr, r
    r = check({**config, "ledgers": {"sandbox": "same.db", "production": "same.db"}})
    assert r.returncode == CONFIG and "ledgers of their own" in r.stderr, r
    r = check({**config, "ledgers": {"production": "p.db"}, "appAppleId": None})
    assert r.returncode == CONFIG, r  # a number is expected
    no_app_id = {k: v for k, v in config.items() if k != "appAppleId"}
    r = check({**no_app_id, "ledgers": {"production": "p.db"}})
    assert r.returncode == CONFIG and "CONFIGURATION_ERROR" in r.stderr, r  # Production needs the App Apple ID
    assert check(no_app_id).returncode == 0  # Sandbox does not
    r = check({**config, "ledgers": {"staging": "s.db"}})
    assert r.returncode == CONFIG and "production or sandbox" in r.stderr, r
    r = check(config, "--ledger", "sandbox=mysql://localhost/x")
    assert r.returncode == USAGE and "unsupported ledger URL scheme" in r.stderr, r
    r = check(config, "--ledger", "production=postgresql://ledger:s3cret@127.0.0.1:1/ledger?password=s3cret2")
    assert r.returncode == CONFIG and "s3cret" not in r.stderr, r  # no server there; the password never shown
    r = check(config, "--ledger", "nonsense")
    assert r.returncode == USAGE, r
    r = check({k: v for k, v in config.items() if k != "ledgers"})
    assert r.returncode == USAGE and "no environment to serve" in r.stderr, r
    r = check({k: v for k, v in config.items() if k != "bundleId"})
    assert r.returncode == USAGE and "--bundle-id" in r.stderr, r
    path.write_text(json.dumps(config))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        r = subprocess.run([TOOL, "serve", "--config", str(path), "--listen", f"127.0.0.1:{taken.getsockname()[1]}"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == CONFIG and "cannot listen" in r.stderr, r
    assert tool("serve", "--help").code == 0
    # The README's first command names a ledger in a folder that does not exist yet: serve makes it (and its
    # parents); a folder that cannot be made is named, with the reason.
    deep = tmp_path / "var" / "lib" / "appstoreserver" / "sandbox.db"
    r = check(config, "--ledger", f"sandbox={deep}")
    assert r.returncode == 0 and deep.exists() and "made the ledger's folder" in r.stderr, r
    (tmp_path / "a-file").write_text("x")
    r = check(config, "--ledger", f"sandbox={tmp_path / 'a-file' / 'sub' / 'sandbox.db'}")
    assert r.returncode == CONFIG and f"{tmp_path / 'a-file'} is not a folder" in r.stderr, r
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        r = check(config, "--ledger", f"sandbox={locked / 'new' / 'sandbox.db'}")
        assert r.returncode == CONFIG and f"{locked / 'new'}" in r.stderr and "Permission denied" in r.stderr, r
