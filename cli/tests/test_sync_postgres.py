"""`sync` and `serve --sync-interval` on a PostgreSQL ledger shared by a fleet (docs/ledger.md, "Fleet"; issue 30):
the cursor lives in the ledger's schema (`sync_cursor`, no file), and one process syncs at a time (a PostgreSQL
advisory lock, released by the server when the holder's connection ends).

A throwaway PostgreSQL server on loopback (Tests/support/postgres_server.py; SKIPPED loudly where it cannot run) and
Tests/support/mock_history.py as the App Store Server API (own PKI; lifecycles.py's signed notifications):

- one-shot `sync`: the cursor is the database's (its JSON has the file's format; the summary names the table; no
  .sync.json anywhere); a second `sync` while the first waits on a delayed page exits 75 (SYNC_IN_PROGRESS) having
  read and written nothing; the first one killed (SIGKILL), the next `sync` takes the lock at once and resumes at the
  page the killed one was on; a 0.3.0 cursor file given with --state is imported once;
- two `serve --sync-interval 1` processes on one ledger: exactly one syncs (the other logs `standby` runs, and no
  two runs of different processes overlap), the cursor in the database; the syncing one killed (SIGKILL), the other
  takes the lease over and syncs from where it stopped (a notification listed afterwards is stored once);
- a sync whose lease connection is cut mid-page (pg_terminate_backend): a successor takes the lease and finishes; the
  cut one fails its cursor write (exit 74) and the cursor stays the successor's (fencing by generation).
No timing is asserted: the waits below only bound a hang (generous deadlines, 4x and more what a loaded machine needs).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

from test_cli import ISSUER, KEY_ID, TOOL, keys, tool  # noqa: F401
from test_ledger_cli import doc, pki  # noqa: F401
from test_serve_postgres import pg_url, sql  # noqa: F401  (module fixture: the throwaway server)
from test_sync import DAY, Mock, history, mock, now_ms, sync_args  # noqa: F401

BUSY = 75


def schema_url(pg_url: str, schema: str) -> str:  # noqa: F811
    return f"{pg_url}?schema={schema}"


def db_cursor(pg_url: str, schema: str) -> Dict[str, Any]:  # noqa: F811
    rows = sql(pg_url, f"SELECT generation, holder, cursor FROM {schema}.sync_cursor")
    assert len(rows) == 1, rows
    generation, holder, text = rows[0]
    return {"generation": int(generation), "holder": holder, "cursor": json.loads(text) if text else None}


def wait_for(what: str, check, seconds: float = 120) -> Any:
    """Polls `check` until it returns something true; fails after `seconds` (a hang guard, not a timing check)."""
    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.1)


def test_sync_keeps_its_cursor_in_the_database_and_runs_one_at_a_time(keys: Path, pki: Path, doc: Dict[str, Any],  # noqa: F811
                                                                       mock: Mock, pg_url: str,  # noqa: F811
                                                                       tmp_path: Path) -> None:
    url = schema_url(pg_url, "sync_oneshot")
    feed = history(doc["scenarios"], now_ms() - 10 * DAY)
    mock.feed(notifications=feed, pageSize=5)
    os.chdir(tmp_path)
    r = tool(*sync_args(keys, pki, doc, mock, url))  # type: ignore[arg-type]
    assert r.code == 0, r
    s = r.json()
    assert (s["stored"], s["duplicates"]) == (len(feed), 0), s
    assert "file" not in s["cursor"] and "sync_oneshot.sync_cursor" in s["cursor"]["database"], s["cursor"]
    c = db_cursor(pg_url, "sync_oneshot")
    assert c["generation"] == 1 and c["cursor"]["notificationHistory"] == {"syncedThrough": s["notificationHistory"]["endDate"]}, c
    assert c["cursor"]["bundleId"] == doc["bundleId"] and c["cursor"]["environment"] == "Sandbox", c
    assert not list(tmp_path.rglob("*.sync.json")), "a cursor file was written"

    # A sync held on its second page (the mock delays it); a second sync meanwhile is refused, touching nothing.
    new = [dict(f, firstSendAttemptDate=now_ms() - 60_000 + i) for i, f in enumerate(history(doc["random"][:3], 0))]
    assert len(new) >= 3, "three lifecycles make at least two pages of two"
    mock.feed(notifications=feed + new, pageSize=2, delay={"endpoint": "notifications", "page": 2, "seconds": 120, "times": 1})
    first = subprocess.Popen([TOOL, *sync_args(keys, pki, doc, mock, url)], stdout=subprocess.PIPE,  # type: ignore[arg-type]
                             stderr=subprocess.PIPE)
    try:
        before = len(mock.requests())
        wait_for("the held sync's second page", lambda: len(mock.requests()) >= before + 2 or first.poll() is not None)
        assert first.poll() is None, first.communicate()
        asked = len(mock.requests())
        r = tool(*sync_args(keys, pki, doc, mock, url))  # type: ignore[arg-type]
        assert r.code == BUSY, r
        assert r.error_line().startswith("error: SYNC_IN_PROGRESS (sync_in_progress): another process syncs this ledger ("), r
        assert f"pid {first.pid}" in r.error_line(), r
        assert len(mock.requests()) == asked, "the refused sync called the API"
        assert db_cursor(pg_url, "sync_oneshot")["generation"] == 2
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # The killed sync's connection is gone, and with it its lock: the next one takes over from its cursor (the
    # window it had opened, at the page it was on), and stores only what is new.
    held = db_cursor(pg_url, "sync_oneshot")["cursor"]
    assert held["notificationHistory"].get("window"), held
    r = tool(*sync_args(keys, pki, doc, mock, url))  # type: ignore[arg-type]
    assert r.code == 0, r
    s = r.json()
    assert s["notificationHistory"]["resumed"] is True and s["notificationHistory"]["startDate"] == held["notificationHistory"]["window"]["startDate"], s
    c = db_cursor(pg_url, "sync_oneshot")
    assert c["generation"] == 3 and c["cursor"]["notificationHistory"] == {"syncedThrough": s["notificationHistory"]["endDate"]}, c
    events = int(sql(pg_url, "SELECT count(*) FROM sync_oneshot.events")[0][0])
    assert events == len({f["signedPayload"] for f in feed + new}), events


def test_a_030_cursor_file_is_imported_once(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                            pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    url = schema_url(pg_url, "sync_import")
    through = now_ms() - 2 * DAY
    state = tmp_path / "old.sync.json"
    state.write_text(json.dumps({"format": 1, "bundleId": doc["bundleId"], "environment": "Sandbox",
                                 "notificationHistory": {"syncedThrough": through}, "transactionHistory": {}}))
    mock.feed(notifications=history(doc["scenarios"][:2], now_ms() - DAY), pageSize=50)
    r = tool(*sync_args(keys, pki, doc, mock, url), "--state", str(state), "--overlap", "0")  # type: ignore[arg-type]
    assert r.code == 0, r
    # The window started where the file's cursor ended: it was read from the file, then kept in the database.
    assert r.json()["notificationHistory"]["startDate"] == through, r.json()
    end = r.json()["notificationHistory"]["endDate"]
    assert db_cursor(pg_url, "sync_import")["cursor"]["notificationHistory"] == {"syncedThrough": end}
    assert json.loads(state.read_text())["notificationHistory"] == {"syncedThrough": through}, "the file was written"
    r = tool(*sync_args(keys, pki, doc, mock, url), "--state", str(state), "--overlap", "0")  # type: ignore[arg-type]
    assert r.code == 0 and r.json()["notificationHistory"]["startDate"] == end, r.json()


def test_two_serve_processes_one_syncs_and_the_other_takes_over(keys: Path, pki: Path, doc: Dict[str, Any],  # noqa: F811
                                                                 mock: Mock, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    from test_serve import Server, serve_args
    url = schema_url(pg_url, "sync_fleet")
    started = now_ms()
    feed = history(doc["scenarios"][:4], now_ms() - DAY)
    late = feed.pop()
    mock.feed(notifications=feed, pageSize=4, pageDelay=0.05)
    api = ["--sync-interval", "1", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
           "--api-base-url", mock.url]

    def args(name: str) -> List[str]:
        folder = tmp_path / name
        folder.mkdir()
        a = serve_args(pki, doc, folder, *api)
        i = a.index("--ledger") if "--ledger" in a else -1
        if i >= 0:
            a[i + 1] = f"sandbox={url}"
        else:
            a += ["--ledger", f"sandbox={url}"]
        return a

    with Server(*args("a")) as a, Server(*args("b")) as b:
        servers = {a.p.pid: a, b.p.pid: b}

        def leader() -> Any:
            got = [s for s in servers.values() if s.events("sync_lease")]
            return got[0] if got else None
        first = wait_for("a process taking the sync lease", leader)
        other = b if first is a else a
        wait_for("the first sync", lambda: [l for l in first.events("sync") if l["outcome"] == "ok"])
        wait_for("the other process standing by twice", lambda: len(other.events("sync")) >= 2)
        assert all(l["outcome"] == "standby" for l in other.events("sync")), other.events("sync")
        assert not other.events("sync_lease")
        assert f"pid {first.p.pid}" in other.events("sync")[0]["holder"], other.events("sync")[0]
        c = db_cursor(pg_url, "sync_fleet")
        assert c["generation"] == 1 and f"pid {first.p.pid}" in c["holder"], c
        assert c["cursor"]["notificationHistory"].get("syncedThrough"), c
        assert not list(tmp_path.rglob("*.sync.json")), "a cursor file was written"
        stored_by_first = sum(l.get("stored", 0) for l in first.events("sync"))
        assert stored_by_first == len(feed), first.events("sync")

        first.p.send_signal(signal.SIGKILL)
        first.p.wait()
        mock.feed(notifications=feed + [dict(late, firstSendAttemptDate=now_ms() - 1000)], pageSize=4)
        wait_for("the other process taking over", lambda: other.events("sync_lease"))
        wait_for("the notification listed after the failover",
                 lambda: sum(l.get("stored", 0) for l in other.events("sync")) >= 1)
        c = db_cursor(pg_url, "sync_fleet")
        assert c["generation"] == 2 and f"pid {other.p.pid}" in c["holder"], c
        # Taking over from the cursor: every run after the failover reads from the killed one's cursor (a window
        # starting within the overlap of its end, or the window it left open), not from 180 days back (which would
        # read the whole feed again as duplicates), and only the new notification is stored.
        ran = [l for l in other.events("sync") if l["outcome"] != "standby"]
        assert all(l["outcome"] == "ok" for l in ran) and sum(l["stored"] for l in ran) == 1, ran
        assert all(l["startDate"] >= started - 7 * 3_600_000 for l in ran), ran
        status, summary = other.get("/v1/sandbox/summary")
        assert status == 200 and summary["events"] == len(feed) + 1, summary
        assert other.stop() == 0
    assert int(sql(pg_url, "SELECT count(*) FROM sync_fleet.events")[0][0]) == len(feed) + 1


def lease_key(schema: str) -> int:
    """The sync lease's advisory lock key (PostgresSyncLease.swift: FNV-1a of "appstoreserver sync <schema>")."""
    h = 0xcbf29ce484222325
    for b in f"appstoreserver sync {schema}".encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def test_a_sync_whose_lease_connection_is_cut_cannot_overwrite_its_successor(keys: Path, pki: Path,  # noqa: F811
                                                                              doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                                                              pg_url: str) -> None:  # noqa: F811
    """The lease's connection cut mid-sync (the server ends its backend, as a network cut or a failover would): the
    lock is gone, another sync takes the lease and finishes; the cut one, when its page arrives, fails its cursor write
    (exit 74, "was lost"), and the cursor is its successor's (the generation fences it)."""
    schema = "sync_fenced"
    url = schema_url(pg_url, schema)
    feed = history(doc["scenarios"], now_ms() - 10 * DAY)
    # The first page is held long enough for the successor to take the lease first: 20 s, where taking it takes a
    # process start and an open (well under 5 s even on a loaded machine).
    mock.feed(notifications=feed, pageSize=5, delay={"endpoint": "notifications", "page": 1, "seconds": 20, "times": 1})
    first = subprocess.Popen([TOOL, *sync_args(keys, pki, doc, mock, url)], stdout=subprocess.PIPE,  # type: ignore[arg-type]
                             stderr=subprocess.PIPE)
    try:
        wait_for("the first sync's first page", lambda: len(mock.requests()) >= 1 or first.poll() is not None)
        assert first.poll() is None, first.communicate()
        key = lease_key(schema)
        holders = wait_for("the lease's backend", lambda: sql(pg_url, (
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            f"AND classid::bigint = {key >> 32} AND objid::bigint = {key & 0xFFFFFFFF}")))
        assert len(holders) == 1, holders
        assert sql(pg_url, f"SELECT pg_terminate_backend({holders[0][0]})") == [["t"]]
        r = tool(*sync_args(keys, pki, doc, mock, url))  # type: ignore[arg-type]
        assert r.code == 0, r
        successor = r.json()["notificationHistory"]["endDate"]
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 74, (first.returncode, err)
    assert b"was lost" in err, err
    c = db_cursor(pg_url, schema)
    assert c["generation"] == 2 and c["cursor"]["notificationHistory"] == {"syncedThrough": successor}, c
    assert int(sql(pg_url, f"SELECT count(*) FROM {schema}.events")[0][0]) == len({f["signedPayload"] for f in feed})
