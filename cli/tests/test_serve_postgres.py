"""Two `appstoreserver serve` processes on one PostgreSQL ledger (issue 22): overlapping deliveries, the same state
as one process.

A throwaway PostgreSQL server on loopback (Tests/support/postgres_server.py, Debian's `postgresql`; SKIPPED loudly
where it cannot run). Two serve processes with the same `--ledger sandbox=postgresql://...` are posted at, at the same
time, by three clients each: every notification of Tests/support/lifecycles.py (13 scenarios, 40 random lifecycles,
own PKI), server A the first 70 % and server B the last 70 % (40 % delivered to both, racing), each stream shuffled
with a fifth of it sent again. Then:

- every post answered 200, and each distinct notification stored exactly once (`"stored": true` from one of the two
  servers; the metrics of both agree); every notification answered 200 is a row of appstore_ledger.events (psql);
- the state equals one serve process's fed the same notifications once, in order (SQLite): the summary, every
  subscription and customer at several instants through both servers' query routes (each catching up with the
  other's writes), `ledger show` on both databases, the readable tables row by row (psql against sqlite3), and a
  third serve process opened afterwards on the same URL;
- each scenario's expectations (written from Apple's documentation in lifecycles.py) hold on both servers, and both
  list the same stored events (`GET /v1/sandbox/events`).
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import pytest

from test_cli import SUPPORT, tool
from test_ledger_cli import as_of, doc, mismatches, pki  # noqa: F401  (module fixtures: the test PKI, the lifecycles)
from test_serve import KEY, Server, metric, notifications, payload_digest

sys.path.insert(0, str(SUPPORT))
from postgres_server import Unavailable, postgres  # noqa: E402


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    try:
        server = postgres()
        url = server.__enter__()
    except Unavailable as e:
        pytest.skip(f"*** SKIPPED: serve on PostgreSQL: {e} ***")
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


def psql() -> str:
    found = shutil.which("psql") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"), reverse=True)), None)
    if not found:
        pytest.fail("psql not found next to initdb (Debian postgresql-client, a dependency of postgresql)")
    return found


def sql(url: str, query: str) -> List[List[str]]:
    r = subprocess.run([psql(), url, "-At", "-F", "\t", "-c", query], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def payload(jws: str) -> Dict[str, Any]:
    seg = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


def serve_args(pki: Path, doc: Dict[str, Any], ledger: str, tmp: Path) -> List[str]:
    (tmp / "api-key").write_text(KEY + "\n")
    return ["--bundle-id", doc["bundleId"], "--root", str(pki / "root.der"), "--ledger", f"sandbox={ledger}",
            "--api-key-file", str(tmp / "api-key")]


def deliver(servers: List[Tuple[Server, List[str]]], clients: int) -> List[Tuple[int, str, Dict[str, Any]]]:
    """Posts each server's stream with `clients` threads per server, all at once: (status, jws, answer) of every post."""
    results: List[Tuple[int, str, Dict[str, Any]]] = []
    lock = threading.Lock()
    start = threading.Barrier(len(servers) * clients)

    def worker(s: Server, queue: List[str]) -> None:
        start.wait()
        while True:
            with lock:
                if not queue:
                    return
                jws = queue.pop()
            status, answer = s.post("sandbox", jws)
            with lock:
                results.append((status, jws, answer))

    threads = [threading.Thread(target=worker, args=(s, q)) for s, q in servers for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def readable_rows(url: Optional[str], db: Optional[Path], table: str, key: str) -> List[Tuple[str, str, str]]:
    """(key, signed_date, md5 of the payload) of every row, by key: the newest version of each, as the upserts keep it."""
    if url:
        rows = sql(url, f'SELECT {key}, signed_date, md5(payload) FROM appstore_ledger.{table} ORDER BY {key} COLLATE "C"')
        return [tuple(r) for r in rows]  # type: ignore[misc]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        rows = c.execute(f"SELECT {key}, signed_date, payload FROM {table} ORDER BY {key}").fetchall()
    return [(k, str(d), hashlib.md5(p.encode()).hexdigest()) for k, d, p in rows]


def answers(s: Server, subs: List[str], customers: List[str], instants: List[int]) -> List[Any]:
    out = []
    for t in instants:
        for sub in subs:
            status, a = s.get(f"/v1/sandbox/subscriptions/{sub}?at={t}")
            assert status in (200, 404), (sub, t, status, a)
            out.append(a if status == 200 else None)
        for c in customers:
            status, a = s.get(f"/v1/sandbox/customers/{c}?at={t}")
            assert status == 200, (c, t, status, a)
            out.append(a)
    return out


def test_two_servers_on_one_postgresql(pki: Path, doc: Dict[str, Any], pg_url: str, tmp_path: Path) -> None:
    items = notifications(doc["scenarios"] + doc["random"])
    distinct = set(items)
    n = len(items)
    rng = random.Random(2222)
    streams = []
    for lo, hi in ((0, int(n * 0.7)), (int(n * 0.3), n)):
        stream = items[lo:hi]
        stream += [x for x in stream if rng.random() < 0.2]  # Apple's retries, and replays
        rng.shuffle(stream)
        streams.append(stream)
    both = set(items[int(n * 0.3):int(n * 0.7)])
    sent = sum(len(s) for s in streams)

    with Server(*serve_args(pki, doc, pg_url, tmp_path)) as a, Server(*serve_args(pki, doc, pg_url, tmp_path)) as b:
        assert a.started["ledgers"]["sandbox"] == pg_url  # no password in this URL; serve shows it as given
        results = deliver([(a, list(streams[0])), (b, list(streams[1]))], clients=3)
        refused = [(status, answer) for status, _, answer in results if status != 200]
        assert not refused, refused[:3]
        assert len(results) == sent
        stored = [jws for _, jws, answer in results if answer["stored"]]
        assert len(stored) == len(set(stored)) == len(distinct) and set(stored) == distinct, \
            f"{len(stored)} stored answers for {len(distinct)} distinct notifications (each must be stored exactly once)"
        assert all(answer.get("agrees", True) for _, _, answer in results)
        # Both servers' counters: together, each notification stored once, everything else a duplicate.
        m = [s.get("/metrics")[1] for s in (a, b)]
        assert sum(metric(x, "appstoreserver_notifications_received_total", environment="sandbox") for x in m) == sent
        assert sum(metric(x, "appstoreserver_notifications_stored_total", environment="sandbox") for x in m) == len(distinct)
        assert sum(metric(x, "appstoreserver_notifications_duplicates_total", environment="sandbox") for x in m) == sent - len(distinct)
        raced = sum(1 for x in m if metric(x, "appstoreserver_notifications_stored_total", environment="sandbox") > 0)
        assert raced == 2, "one server stored everything: the deliveries did not overlap"

        # Every notification answered 200 is stored, once.
        rows = sql(pg_url, "SELECT kind, payload_sha256 FROM appstore_ledger.events")
        in_db = [digest for kind, digest in rows]
        assert all(kind == "NOTIFICATION" for kind, _ in rows)
        assert len(in_db) == len(set(in_db)) == len(distinct)
        acked = {payload_digest(jws) for status, jws, _ in results if status == 200}
        assert acked - set(in_db) == set(), f"{len(acked - set(in_db))} notifications answered 200 are not in the database"

        # One process, the same notifications once, in order: the reference.
        ref_db = tmp_path / "reference.db"
        with Server(*serve_args(pki, doc, str(ref_db), tmp_path)) as ref:
            for jws in items:
                status, answer = ref.post("sandbox", jws)
                assert status == 200 and answer["stored"], answer
            want = ref.get("/v1/sandbox/summary")[1]
            assert want["events"] == len(distinct) and want["disagreements"] == [], want
            for s in (a, b):
                assert s.get("/v1/sandbox/summary") == (200, want)
            # Both servers list the same events from the database: each notification once, whoever stored it.
            def all_events(s: Server) -> List[Dict[str, Any]]:
                out: List[Dict[str, Any]] = []
                query = "limit=1000"
                while True:
                    page = s.get(f"/v1/sandbox/events?{query}")[1]
                    out += page["events"]
                    if "nextBefore" not in page:
                        return out
                    query = f"limit=1000&before={page['nextBefore']}"

            listed = [all_events(s) for s in (a, b)]
            assert listed[0] == listed[1] and len(listed[0]) == len(distinct)
            assert {e["result"]["notificationUUID"] for e in listed[0]} == {payload(x)["notificationUUID"] for x in distinct}

            # Every subscription and customer, at instants through the lifecycles and now, from each server.
            subs: Set[str] = set()
            customers: Set[str] = set()
            dates = []
            for jws in items:
                data = payload(jws)
                dates.append(data["signedDate"])
                tx = data.get("data", {}).get("signedTransactionInfo")
                if tx:
                    t = payload(tx)
                    subs.add(t["originalTransactionId"])
                    customers.add(t.get("appAccountToken") or t["originalTransactionId"])
            dates.sort()
            instants = dates[:: max(1, len(dates) // 6)] + [2_000_000_000_000]
            expected = answers(ref, sorted(subs), sorted(customers), instants)
            for s in (a, b):
                got = answers(s, sorted(subs), sorted(customers), instants)
                same = sum(1 for x, y in zip(got, expected) if x == y)
                assert got == expected, f"{same} of {len(expected)} answers equal the single process's"
            assert ref.stop() == 0

        # Each scenario's expectations (from Apple's documentation), on both servers.
        failures, checked = [], 0
        for lc in doc["scenarios"]:
            for e in lc["expect"]:
                if "notifications" not in (e.get("deliveries") or ["notifications"]):
                    continue
                path = (f"/v1/sandbox/subscriptions/{e['subscription']}" if "subscription" in e
                        else f"/v1/sandbox/customers/{e['customer']}") + f"?at={e['at']}"
                path += f"&asOf={as_of(e)[1]}" if "asOf" in e else ""
                for s in (a, b):
                    status, answer = s.get(path)
                    checked += 1
                    failures += [f"{lc['name']} at {e['at']} ({e['rule']}): {p}"
                                 for p in mismatches(answer if status == 200 else None, e)]
        assert not failures, "\n".join(failures)
        assert checked >= 80
        # The events route reads the shared ledger: both servers list the same events, whichever stored them.
        pages = [s.get("/v1/sandbox/events?limit=50") for s in (a, b)]
        assert pages[0][0] == 200 and pages[0] == pages[1] and len(pages[0][1]["events"]) == 50, pages[0]
        assert a.stop() == 0 and b.stop() == 0

    # The databases, read afresh: by the tool, row by row, and by a third server.
    assert tool("ledger", "show", "--db", pg_url).json() == tool("ledger", "show", "--db", str(ref_db)).json() == want
    for table, key in (("transactions", "transaction_id"), ("renewal_infos", "original_transaction_id"),
                       ("notifications", "notification_uuid")):
        pg, lite = readable_rows(pg_url, None, table, key), readable_rows(None, ref_db, table, key)
        assert pg == lite, f"{table}: {len(pg)} rows in PostgreSQL, {len(lite)} in the single process's SQLite"
    with Server(*serve_args(pki, doc, pg_url, tmp_path)) as c:
        assert c.get("/v1/sandbox/summary") == (200, want)
        status, answer = c.post("sandbox", items[0])
        assert status == 200 and answer["stored"] is False
        assert c.stop() == 0
    print(f"\nserve on PostgreSQL: 2 servers, {sent} posts ({len(both)} notifications delivered to both, the rest "
          f"to one; {sent - len(distinct)} duplicates), {len(distinct)} stored once each; {len(expected)} answers "
          f"from each server equal to one process's, {checked} expectations")


def test_a_database_restart_mid_ingest(pki: Path, doc: Dict[str, Any], pg_url: str, tmp_path: Path) -> None:
    """issue 31: the database stopped and started while one serve process is being posted at. A post answered 5xx is
    posted again (Apple retries); afterwards every notification is acknowledged (200), each distinct one is a row of
    the ledger's events exactly once (psql), /healthz is 200 again by itself (the ledger reconnected: before, it
    answered 503 for as long as it ran), and the summary equals one SQLite serve process's. The poster waits at a
    third of the stream until the server is down, so posts meet it down (503) however fast the machine is."""
    stream = notifications(doc["scenarios"] + doc["random"][:15])
    url = pg_url + "?schema=restart_test"
    acknowledged: List[str] = []
    retried = [0]
    halfway, resume = threading.Event(), threading.Event()
    with Server(*serve_args(pki, doc, url, tmp_path)) as s:
        # The whole stream takes seconds and a restart about one; 300 s is far above both on a loaded machine, and
        # bounds the test when the server never recovers (before issue 31: 503 for as long as it ran).
        deadline = time.monotonic() + 300

        def post_all() -> None:
            for i, jws in enumerate(stream):
                while time.monotonic() < deadline:
                    status, _ = s.post("sandbox", jws)
                    if status == 200:
                        acknowledged.append(jws)
                        break
                    assert status == 503, status
                    retried[0] += 1
                    time.sleep(0.05)
                if i == len(stream) // 3:
                    halfway.set()
                    resume.wait(300)

        t = threading.Thread(target=post_all)
        t.start()
        assert halfway.wait(300)
        pg_url.stop()  # type: ignore[attr-defined]
        resume.set()
        while retried[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        pg_url.start()  # type: ignore[attr-defined]
        t.join(600)
        assert not t.is_alive() and len(acknowledged) == len(stream), (len(acknowledged), len(stream))
        assert retried[0] > 0 and len(stream) // 3 + 1 < len(stream), retried  # posts met the server down
        status, health = s.get("/healthz", key=None)
        assert status == 200, health
        rows = sql(url.split("?")[0], "SELECT payload_sha256, count(*) FROM restart_test.events GROUP BY payload_sha256")
        distinct = {hashlib.sha256(base64.urlsafe_b64decode(j.split(".")[1] + "=" * (-len(j.split(".")[1]) % 4))).hexdigest()
                    for j in stream}
        assert {sha for sha, _ in rows} == distinct and all(n == "1" for _, n in rows), (len(rows), len(distinct))
        _, summary = s.get("/v1/sandbox/summary")
    with Server(*serve_args(pki, doc, f"sqlite:{tmp_path / 'reference.db'}", tmp_path)) as ref:
        for jws in dict.fromkeys(stream):
            assert ref.post("sandbox", jws)[0] == 200
        _, want = ref.get("/v1/sandbox/summary")
    assert summary == want
    print(f"serve on PostgreSQL: stopped and started mid-ingest; {len(stream)} posts acknowledged, {retried[0]} answered 503 "
          "and posted again", flush=True)


def test_disagreements_paged_on_postgresql(pki: Path, doc: Dict[str, Any], pg_url: str, tmp_path: Path) -> None:
    """`ledger disagreements`, `ledger subscriptions` and `ledger customers` on PostgreSQL (their keyset queries compare
    text in the C collation): the pages test_serve.py reads on SQLite, from the same two notifications, ingested by the
    tool."""
    from test_ledger_cli import ingest
    from test_serve import assert_paged_disagreements, assert_paged_ids, incomplete_and_contradicting
    renew, fail = incomplete_and_contradicting(pki, doc)
    jws = tmp_path / "notifications.jws"
    jws.write_text(renew + "\n" + fail + "\n")
    db = pg_url + "?schema=paged_test"
    r = ingest(db, pki, doc, "--kind", "notification", str(jws))
    assert r.code == 0, r
    assert_paged_disagreements(db)
    assert_paged_ids(db)
    # The same in a database of another collation than C (the tests' cluster is made with --no-locale): the ids'
    # pages compare in the database's collation, the disagreements' as bytes.
    sql(pg_url, "CREATE DATABASE collated TEMPLATE template0 LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'")
    collated = pg_url.rsplit("/", 1)[0] + "/collated"
    assert sql(collated, "SHOW lc_collate") == [["C.UTF-8"]]
    assert ingest(collated, pki, doc, "--kind", "notification", str(jws)).code == 0
    assert_paged_disagreements(collated)
    assert_paged_ids(collated)
