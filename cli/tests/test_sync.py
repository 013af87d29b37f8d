"""`appstoreserver sync` (docs/serve.md, "sync") against Tests/support/mock_history.py on loopback, which serves Get
Notification History and Get Transaction History pages of Tests/support/lifecycles.py's signed lifecycles (own PKI)
and checks the bearer token of every request:

- missed notifications recovered: the ledger afterwards, read with `ledger show` / `ledger entitlements`, against
  each scenario's expectations (written in lifecycles.py from Apple's documentation, never from the ledger);
- the cursor: persisted after the run; the next run asks from its end minus the overlap, recovers a notification
  listed late inside the overlap and a new one, and stores nothing twice;
- a sync killed with SIGKILL while a later page is delayed, then run again: it resumes at that page (same window,
  same token) and ends in the state of an uninterrupted run, with no duplicate;
- HTTP 429 with Retry-After: the retry waits (the mock's arrival times show it); with --retries 0 the call fails
  (exit 2), the cursor stays before the page, and the next run finishes;
- forged, wrong-app and malformed items: rejected with their reasons (exit 1), nothing of them in the ledger;
- Get Transaction History from the stored revision: the second run asks with the revision of the first's last page
  and gets only what was added.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from test_cli import ISSUER, KEY_ID, SUPPORT, TOOL, USAGE, keys, ocsp, payload_json, tool  # noqa: F401
from test_ledger_cli import as_of, doc, mismatches, pki  # noqa: F401
from served import served

DAY = 86_400_000
HOUR = 3_600_000


def now_ms() -> int:
    return int(time.time() * 1000)


class Mock:
    """mock_history.py with a feed file the test rewrites between runs."""

    def __init__(self, folder: Path, url: str) -> None:
        self.feed_path, self.url = folder / "feed.json", url

    def feed(self, **feed: Any) -> None:
        tmp = self.feed_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(feed))
        os.replace(tmp, self.feed_path)

    def requests(self, endpoint: str = "/inApps/v1/notifications/history") -> List[Dict[str, Any]]:
        import urllib.request
        with urllib.request.urlopen(f"{self.url}/mock/requests", timeout=10) as r:
            return [q for q in json.load(r)["requests"] if q["path"].startswith(endpoint)]


@pytest.fixture
def mock(keys: Path, doc: Dict[str, Any], tmp_path: Path) -> Iterator[Mock]:  # noqa: F811
    folder = tmp_path / "mock"
    folder.mkdir()
    (folder / "feed.json").write_text("{}")
    with served("mock_history.py", "--feed", str(folder / "feed.json"), "--public-key", str(keys / "p256_public.pem"),
                "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", doc["bundleId"]) as ports:
        yield Mock(folder, f"http://127.0.0.1:{int(ports[0])}")


def sync_args(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock, db: Path, *extra: str) -> List[str]:  # noqa: F811
    return ["sync", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
            "--bundle-id", doc["bundleId"], "--environment", "sandbox", "--app-apple-id", str(doc["appAppleId"]),
            "--root", str(pki / "root.der"), "--db", str(db), "--base-url", mock.url, "--compact", *extra]


def history(lcs: List[Dict[str, Any]], start: int, step: int = 60_000) -> List[Dict[str, Any]]:
    """The lifecycles' notifications as Apple's history lists them: first send attempts `step` apart from `start`."""
    signed = [n["signed"] for lc in lcs for n in lc["notifications"]]
    return [{"signedPayload": s, "firstSendAttemptDate": start + i * step} for i, s in enumerate(signed)]


def check_expectations(db: Path, lcs: List[Dict[str, Any]], delivery: str) -> int:
    """Every expectation that holds for `delivery` (lifecycles.py: by default the notifications before historyDate,
    both deliveries from it on), read back with the tool; the number checked."""
    failures, checked = [], 0
    for lc in lcs:
        for e in lc["expect"]:
            default = ["notifications", "history"] if e["at"] >= lc["historyDate"] else ["notifications"]
            if delivery not in (e.get("deliveries") or default):
                continue
            when = ["--at", str(e["at"]), *as_of(e)]
            if "subscription" in e:
                r = tool("ledger", "show", "--db", str(db), e["subscription"], *when)
            else:
                r = tool("ledger", "entitlements", "--db", str(db), e["customer"], *when)
            assert r.code == 0, r
            checked += 1
            failures += [f"{lc['name']} at {e['at']} ({e['rule']}): {p}" for p in mismatches(r.json(), e)]
    assert not failures, "\n".join(failures)
    return checked


def ledger_summary(db: Path) -> Dict[str, Any]:
    r = tool("ledger", "show", "--db", str(db))
    assert r.code == 0, r
    return r.json()


def cursor(db: Path) -> Dict[str, Any]:
    return json.loads(Path(str(db) + ".sync.json").read_text())


def token_offset(token: str) -> int:
    import base64
    seg = token[3:]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))["offset"]


# ---- notification history -------------------------------------------------------------------------------------------

def test_missed_notifications_recovered_then_the_cursor_moves_on(keys: Path, pki: Path, doc: Dict[str, Any],  # noqa: F811
                                                                  mock: Mock, tmp_path: Path) -> None:
    lcs = doc["scenarios"]
    held = next(lc for lc in lcs if lc["name"] == "renewals-voluntary-expiry")
    late = held["notifications"][-2:]  # AUTO_RENEW_DISABLED and EXPIRED: listed after the first sync
    feed = history(lcs, now_ms() - 10 * DAY)
    late_signed = {n["signed"] for n in late}
    first = [f for f in feed if f["signedPayload"] not in late_signed]
    mock.feed(notifications=first, pageSize=7)
    db = tmp_path / "ledger.db"
    before = now_ms()
    r = tool(*sync_args(keys, pki, doc, mock, db))
    after = now_ms()
    assert r.code == 0, r
    s = r.json()
    assert (s["notifications"], s["stored"], s["duplicates"], s["rejected"]) == (len(first), len(first), 0, 0), s
    assert s["pages"] == -(-len(first) // 7) and s["ok"] is True and s["errors"] == []
    # The first window reaches back as far as Apple allows (180 days, less the margin) and ends now.
    w = s["notificationHistory"]
    assert before - 180 * DAY < w["startDate"] <= before - 180 * DAY + HOUR and before <= w["endDate"] <= after
    c = cursor(db)
    assert c["notificationHistory"] == {"syncedThrough": w["endDate"]} and c["bundleId"] == doc["bundleId"], c
    assert s["cursor"]["notificationHistory"] == c["notificationHistory"]
    requests = mock.requests()
    assert len(requests) == s["pages"] and all(q["status"] == 200 for q in requests)
    assert requests[0]["query"] == [] and all(q["query"][0][0] == "paginationToken" for q in requests[1:])
    # What the ledger knows now, expectation by expectation, except the two notifications still missing.
    complete = [lc for lc in lcs if lc is not held]
    assert check_expectations(db, complete, "notifications") >= 30
    assert ledger_summary(db)["events"] == len(first)

    # Two more listed: one late, with a first attempt inside the last window (within the overlap), one new.
    end1 = w["endDate"]
    late_feed = [{"signedPayload": late[0]["signed"], "firstSendAttemptDate": end1 - HOUR},
                 {"signedPayload": late[1]["signed"], "firstSendAttemptDate": now_ms() - 1000}]
    mock.feed(notifications=first + late_feed, pageSize=7)
    r2 = tool(*sync_args(keys, pki, doc, mock, db))
    assert r2.code == 0, r2
    s2 = r2.json()
    new_requests = mock.requests()[len(requests):]
    assert new_requests[0]["body"]["startDate"] == end1 - 6 * HOUR, new_requests[0]  # the default overlap: 6 hours
    assert s2["notificationHistory"]["startDate"] == end1 - 6 * HOUR and s2["notificationHistory"]["resumed"] is False
    assert (s2["notifications"], s2["stored"], s2["duplicates"]) == (2, 2, 0), s2
    assert cursor(db)["notificationHistory"] == {"syncedThrough": s2["notificationHistory"]["endDate"]}
    assert check_expectations(db, lcs, "notifications") >= 35
    summary = ledger_summary(db)
    assert summary["events"] == len(feed) and summary["disagreements"] == []

    # Nothing new: nothing stored, the window moves on.
    r3 = tool(*sync_args(keys, pki, doc, mock, db, "--overlap", "0"))
    assert r3.code == 0, r3
    s3 = r3.json()
    assert (s3["pages"], s3["notifications"], s3["stored"]) == (1, 0, 0), s3
    assert s3["notificationHistory"]["startDate"] == s2["notificationHistory"]["endDate"]
    assert ledger_summary(db)["events"] == len(feed)


def test_resumed_after_sigkill_ends_as_an_uninterrupted_run(keys: Path, pki: Path, doc: Dict[str, Any],  # noqa: F811
                                                            mock: Mock, tmp_path: Path) -> None:
    lcs = doc["scenarios"]
    feed = history(lcs, now_ms() - 3 * DAY)
    size = 5
    # The first request for page 3 is held for a minute: the sync is killed while it waits.
    mock.feed(notifications=feed, pageSize=size, delay={"endpoint": "notifications", "page": 3, "seconds": 60, "times": 1})
    db = tmp_path / "killed.db"
    p = subprocess.Popen([TOOL, *sync_args(keys, pki, doc, mock, db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={k: v for k, v in os.environ.items() if not k.startswith("APPSTORE_")})
    try:
        deadline = time.monotonic() + 60
        while len(mock.requests()) < 3:
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "page 3 was never asked for"
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    c = cursor(db)["notificationHistory"]
    w = c["window"]
    page3 = mock.requests()[2]
    assert c["syncedThrough"] is None and w["pages"] == 2 and token_offset(w["paginationToken"]) == 2 * size, c
    assert page3["query"] == [["paginationToken", w["paginationToken"]]], page3
    assert ledger_summary(db)["events"] == 2 * size

    r = tool(*sync_args(keys, pki, doc, mock, db))
    assert r.code == 0, r
    s = r.json()
    resumed = mock.requests()[3]
    assert resumed["body"] == {"startDate": w["startDate"], "endDate": w["endDate"]} and resumed["query"] == page3["query"]
    assert s["notificationHistory"]["resumed"] is True
    assert (s["stored"], s["duplicates"], s["rejected"]) == (len(feed) - 2 * size, 0, 0), s
    assert cursor(db)["notificationHistory"] == {"syncedThrough": w["endDate"]}

    # The same as one uninterrupted run of the same history into another ledger.
    mock.feed(notifications=feed, pageSize=size)
    clean = tmp_path / "clean.db"
    rc = tool(*sync_args(keys, pki, doc, mock, clean))
    assert rc.code == 0 and rc.json()["stored"] == len(feed), rc
    assert ledger_summary(db) == ledger_summary(clean)
    assert ledger_summary(db)["events"] == len(feed)
    for lc in lcs:
        for e in lc["expect"]:
            args = ["show", e["subscription"]] if "subscription" in e else ["entitlements", e["customer"]]
            a = tool("ledger", *args, "--db", str(db), "--at", str(e["at"]))
            b = tool("ledger", *args, "--db", str(clean), "--at", str(e["at"]))
            assert a.code == 0 and a.out == b.out, (lc["name"], a, b)
    assert check_expectations(db, lcs, "notifications") >= 35


def test_killed_at_random_instants_converges(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                            tmp_path: Path) -> None:
    """SIGKILL at random instants (in a call, in an ingest, in a cursor write), then again, until a run finishes: the
    ledger holds every notification and transaction once, as one uninterrupted run's."""
    import random
    rng = random.Random(int(os.environ.get("APPSTORESERVER_SYNC_SEED", "22")))
    lcs = doc["scenarios"]
    feed = history(lcs, now_ms() - 2 * DAY)
    lc = next(x for x in lcs if x["name"] == "consumables")
    txs = [t for page in lc["history"]["pages"] for t in page["signedTransactions"]]
    tid = payload_json(txs[0])["transactionId"]
    customers = [{"ids": [tid], "signedTransactions": txs}]
    mock.feed(notifications=feed, pageSize=4, pageDelay=0.03, customers=customers, historyPageSize=1)
    db = tmp_path / "killed.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("APPSTORE_")}
    args = [TOOL, *sync_args(keys, pki, doc, mock, db, "--transaction-id", tid)]
    kills = 0
    for _ in range(30):
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            out, err = p.communicate(timeout=rng.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.communicate()
            kills += 1
            continue
        assert p.returncode == 0, (out, err)
        break
    else:
        raise AssertionError("30 runs, none finished")
    assert kills >= 3, f"only {kills} kills: the runs are too fast for this test"
    summary = ledger_summary(db)
    assert summary["events"] == len(feed) + len(txs), summary
    assert cursor(db)["notificationHistory"].get("window") is None
    assert cursor(db)["transactionHistory"][tid]["revision"] == f"rev-{len(txs)}"
    mock.feed(notifications=feed, pageSize=4, customers=customers, historyPageSize=1)
    clean = tmp_path / "clean.db"
    rc = tool(*sync_args(keys, pki, doc, mock, clean, "--transaction-id", tid))
    assert rc.code == 0, rc
    assert ledger_summary(db) == ledger_summary(clean)
    assert check_expectations(db, lcs, "notifications") >= 35
    print(f"\nsync: {kills} runs killed at random instants, then one finished: the state of an uninterrupted run")


def test_429_with_retry_after_is_waited_for(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                            tmp_path: Path) -> None:
    feed = history(doc["scenarios"][:3], now_ms() - DAY)
    mock.feed(notifications=feed, pageSize=3, rateLimit={"endpoint": "notifications", "page": 2, "retryAfter": 2, "times": 1})
    db = tmp_path / "ledger.db"
    r = tool(*sync_args(keys, pki, doc, mock, db))
    assert r.code == 0, r
    assert r.json()["stored"] == len(feed)
    q = mock.requests()
    limited = [i for i, x in enumerate(q) if x["status"] == 429]
    assert len(limited) == 1, q
    i = limited[0]
    assert q[i + 1]["query"] == q[i]["query"] and q[i + 1]["status"] == 200
    waited = q[i + 1]["t"] - q[i]["t"]
    # The lower bound is the code's promise; the upper one only says the retry came (40 s: 20x, load cannot break it).
    assert 1.9 <= waited < 40, f"the retry came {waited:.3f} s after the 429 with Retry-After: 2"

    # Without retries the 429 is the API's error (exit 2); the cursor stays at the page not read.
    # (page 3: the mock counts a rule's requests over every window, and page 2's was used up above)
    db2 = tmp_path / "noretry.db"
    mock.feed(notifications=feed, pageSize=3, rateLimit={"endpoint": "notifications", "page": 3, "retryAfter": 2, "times": 1})
    r2 = tool(*sync_args(keys, pki, doc, mock, db2, "--retries", "0"))
    assert r2.code == 2, r2
    s2 = r2.json()
    assert s2["ok"] is False and s2["errors"][0]["reason"] == "rate_limited" and s2["stored"] == 6, s2
    assert "error: " in r2.err and "rate_limited" in r2.err
    w = cursor(db2)["notificationHistory"]["window"]
    assert w["pages"] == 2 and token_offset(w["paginationToken"]) == 6
    r3 = tool(*sync_args(keys, pki, doc, mock, db2))
    assert r3.code == 0, r3
    assert (r3.json()["stored"], r3.json()["duplicates"]) == (len(feed) - 6, 0)
    assert ledger_summary(db2)["events"] == len(feed)


def test_forged_and_wrong_app_items_are_rejected_with_their_reasons(keys: Path, pki: Path, doc: Dict[str, Any],  # noqa: F811
                                                                    mock: Mock, tmp_path: Path) -> None:
    bad = {b["name"]: b for b in doc["bad"]}
    good = history(doc["scenarios"][:2], now_ms() - 2 * DAY)
    t = now_ms() - DAY
    items = good + [{"signedPayload": bad[n]["signed"], "firstSendAttemptDate": t + i}
                    for i, n in enumerate(("forged-chain", "wrong-bundle", "malformed", "tampered-signature"))]
    lc = next(x for x in doc["scenarios"] if x["name"] == "one-time-charges")
    txs = [s for page in lc["history"]["pages"] for s in page["signedTransactions"]]
    tid = payload_json(txs[0])["transactionId"]
    mock.feed(notifications=items, pageSize=4,
              customers=[{"ids": [tid], "signedTransactions": txs + [bad["transaction-wrong-bundle"]["signed"]]}])
    db = tmp_path / "ledger.db"
    r = tool(*sync_args(keys, pki, doc, mock, db, "--transaction-id", tid))
    assert r.code == 1, r
    s = r.json()
    reasons = sorted((x["status"], x["reason"]) for x in s["rejections"])
    assert reasons == sorted([("VERIFICATION_FAILURE", "untrusted_chain"), ("INVALID_APP_IDENTIFIER", "wrong_bundle"),
                              ("INVALID_JWT_FORMAT", "malformed"), ("VERIFICATION_FAILURE", "bad_signature"),
                              ("INVALID_APP_IDENTIFIER", "wrong_bundle")]), s["rejections"]
    assert s["rejected"] == 5 and s["stored"] == len(good) + len(txs) and s["errors"] == []
    assert any(x["source"].startswith(f"transactionHistory {tid}") for x in s["rejections"])
    assert r.err.count("rejected: ") == 5
    assert ledger_summary(db)["events"] == len(good) + len(txs)
    # Rejected for good: the cursor moved past them, and the next run does not meet them again.
    assert cursor(db)["notificationHistory"]["syncedThrough"] == s["notificationHistory"]["endDate"]
    r2 = tool(*sync_args(keys, pki, doc, mock, db, "--transaction-id", tid, "--overlap", "0"))
    assert r2.code == 0 and r2.json()["rejected"] == 0, r2


# ---- transaction history --------------------------------------------------------------------------------------------

def test_transaction_history_from_the_stored_revision(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                                      tmp_path: Path) -> None:
    lcs = [x for x in doc["scenarios"] if x["name"] in ("consumables", "one-time-charges")]
    customers, ids = [], []
    for lc in lcs:
        txs = [s for page in lc["history"]["pages"] for s in page["signedTransactions"]]
        ids.append(payload_json(txs[-1])["transactionId"])  # any id of the customer's will do
        customers.append({"ids": [ids[-1]], "signedTransactions": txs})
    held = customers[0]["signedTransactions"].pop()  # the refunded consumable: listed after the first sync
    mock.feed(customers=customers, historyPageSize=2)
    db = tmp_path / "ledger.db"
    args = sync_args(keys, pki, doc, mock, db, "--no-notification-history", "--transaction-id", ids[0],
                     "--transaction-id", ids[1])
    r = tool(*args)
    assert r.code == 0, r
    s = r.json()
    n0, n1 = len(customers[0]["signedTransactions"]), len(customers[1]["signedTransactions"])
    assert s["notificationHistory"] is None and s["stored"] == n0 + n1 and s["pages"] == -(-n0 // 2) + -(-n1 // 2), s
    assert [(h["transactionId"], h["revision"]) for h in s["transactionHistory"]] == [(ids[0], f"rev-{n0}"), (ids[1], f"rev-{n1}")]
    assert {k: v["revision"] for k, v in cursor(db)["transactionHistory"].items()} == {ids[0]: f"rev-{n0}", ids[1]: f"rev-{n1}"}
    assert mock.requests("/inApps/v2/history/")[0]["query"] == []

    customers[0]["signedTransactions"].append(held)
    mock.feed(customers=customers, historyPageSize=2)
    before = len(mock.requests("/inApps/v2/history/"))
    r2 = tool(*args)
    assert r2.code == 0, r2
    s2 = r2.json()
    asked = mock.requests("/inApps/v2/history/")[before:]
    assert [q["query"] for q in asked] == [[["revision", f"rev-{n0}"]], [["revision", f"rev-{n1}"]]], asked
    assert (s2["transactions"], s2["stored"], s2["duplicates"]) == (1, 1, 0), s2
    assert cursor(db)["transactionHistory"][ids[0]]["revision"] == f"rev-{n0 + 1}"
    assert check_expectations(db, lcs, "history") >= 2
    assert ledger_summary(db)["events"] == n0 + n1 + 1

    # --known-subscriptions: every subscription the ledger knows (none here: these are one-time purchases).
    r3 = tool(*sync_args(keys, pki, doc, mock, db, "--no-notification-history", "--known-subscriptions"))
    assert r3.code == 0 and r3.json()["transactionHistory"] == [], r3


def test_known_subscriptions_and_an_unknown_customer(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                                     tmp_path: Path) -> None:
    lc = next(x for x in doc["scenarios"] if x["name"] == "resubscribe")
    txs = [s for page in lc["history"]["pages"] for s in page["signedTransactions"]]
    otid = payload_json(txs[0])["originalTransactionId"]
    mock.feed(notifications=history([lc], now_ms() - DAY), customers=[{"ids": [otid], "signedTransactions": txs}])
    db = tmp_path / "ledger.db"
    r = tool(*sync_args(keys, pki, doc, mock, db, "--known-subscriptions", "--transaction-id", "9999"))
    assert r.code == 2, r  # 9999 is unknown to "Apple": its call fails, the others go on
    s = r.json()
    assert [h["transactionId"] for h in s["transactionHistory"]] == ["9999", otid], s
    assert s["errors"][0]["source"] == "transactionHistory 9999" and s["errors"][0]["reason"] == "api_error"
    # The notifications stored the subscription; its history gives the same transactions again (newer signedDate).
    assert s["stored"] >= len(lc["notifications"]) and s["rejected"] == 0
    assert otid in cursor(db)["transactionHistory"] and "9999" not in cursor(db)["transactionHistory"]


# ---- usage and configuration ----------------------------------------------------------------------------------------

def test_usage_and_configuration_errors(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                        tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    base = sync_args(keys, pki, doc, mock, db)
    r = tool(*[a for a in base if a not in ("--environment", "sandbox")])
    assert r.code == USAGE and "--environment" in r.error_line(), r
    r = tool(*base, "--no-notification-history")
    assert r.code == USAGE and "nothing to read" in r.err, r
    r = tool(*base, "--since", "yesterday")
    assert r.code == USAGE and "--since" in r.error_line(), r
    # A PostgreSQL ledger needs no --state (its cursor is in the database: test_sync_postgres.py); this one is down.
    r = tool(*[a if a != str(db) else "postgresql://u@127.0.0.1:1/x" for a in base])
    assert r.code == 78 and "cannot connect" in r.error_line(), r
    # A cursor of another app is not followed.
    Path(str(db) + ".sync.json").write_text(json.dumps({"format": 1, "bundleId": "com.example.other", "environment": "Sandbox",
                                                        "notificationHistory": {"syncedThrough": None}, "transactionHistory": {}}))
    r = tool(*base)
    assert r.code == 78 and "com.example.other" in r.error_line(), r
    Path(str(db) + ".sync.json").write_text("{not json")
    r = tool(*base)
    assert r.code == 78 and "not a JSON object" in r.error_line(), r


# ---- serve --sync-interval ------------------------------------------------------------------------------------------

def test_serve_sync_interval(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock, tmp_path: Path) -> None:  # noqa: F811
    from test_serve import KEY, Server, metric, serve_args
    lcs = doc["scenarios"][:4]
    feed = history(lcs, now_ms() - DAY)
    held = feed.pop()
    mock.feed(notifications=feed, pageSize=4)
    api = ["--sync-interval", "1", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
           "--api-base-url", mock.url]
    with Server(*serve_args(pki, doc, tmp_path, *api)) as s:
        def syncs() -> List[Dict[str, Any]]:
            return s.events("sync")

        deadline = time.monotonic() + 60
        while not syncs():
            assert time.monotonic() < deadline and s.p.poll() is None, s.raw_log
            time.sleep(0.1)
        first = syncs()[0]
        assert first["environment"] == "sandbox" and first["outcome"] == "ok", first
        assert (first["notifications"], first["stored"], first["duplicates"]) == (len(feed), len(feed), 0), first
        # A notification listed later is picked up by a later run (the window overlaps the last one's end).
        mock.feed(notifications=feed + [dict(held, firstSendAttemptDate=now_ms() - 1000)], pageSize=4)
        while sum(l["stored"] for l in syncs()) < len(feed) + 1:
            assert time.monotonic() < deadline, syncs()
            time.sleep(0.1)
        status, summary = s.get("/v1/sandbox/summary")
        assert status == 200 and summary["events"] == len(feed) + 1, summary
        status, _, text = s.request("GET", "/metrics", headers={"Authorization": f"Bearer {KEY}"})
        metrics = text.decode()
        runs = syncs()
        assert metric(metrics, "appstoreserver_sync_stored_total", environment="sandbox") >= len(feed) + 1
        assert metric(metrics, "appstoreserver_sync_runs_total", environment="sandbox", outcome="ok") >= len(runs)
        assert metric(metrics, "appstoreserver_sync_last_success_seconds", environment="sandbox") > time.time() - 60
        assert s.stop() == 0
    assert s.events("stopped") and all(l["outcome"] == "ok" for l in s.events("sync"))
    assert sum(l["stored"] for l in s.events("sync")) == len(feed) + 1  # nothing stored twice
    assert cursor(tmp_path / "sandbox.db")["notificationHistory"]["syncedThrough"] == s.events("sync")[-1]["endDate"]
    assert not any("eyJ" in line for line in s.raw_log), "a signed payload (or part of one) in the logs"
    assert "PRIVATE KEY" not in "".join(s.raw_log)


def test_serve_sync_interval_configuration(keys: Path, pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    from test_serve import serve_args
    r = tool("serve", *serve_args(pki, doc, tmp_path, "--key-id", KEY_ID, "--check"))
    assert r.code == USAGE and "are for --sync-interval" in r.error_line(), r
    r = tool("serve", *serve_args(pki, doc, tmp_path, "--sync-interval", "60", "--key-id", KEY_ID, "--issuer-id", ISSUER,
                                  "--check"))
    assert r.code == 78 or r.code == USAGE, r  # no key: before anything is served
    assert "key" in r.error_line().lower(), r
    # A PostgreSQL ledger is synced too (its cursor in the database: test_sync_postgres.py); --check opens nothing.
    r = tool("serve", "--bundle-id", doc["bundleId"], "--ledger", "sandbox=postgresql://u@127.0.0.1:1/x",
             "--sync-interval", "60", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--check")
    assert r.code == 78 and "cannot connect" in r.error_line(), r


# ---- hostile cursors (issue 31) -------------------------------------------------------------------------------------

def cursor_text(doc: Dict[str, Any], history_: Dict[str, Any], transactions: Optional[Dict[str, Any]] = None) -> str:
    return json.dumps({"format": 1, "bundleId": doc["bundleId"], "environment": "Sandbox",
                       "notificationHistory": history_, "transactionHistory": transactions or {}})


def hostile_cursors(doc: Dict[str, Any]) -> Dict[str, str]:
    """Tampered cursors that once crashed `sync` (overflowing arithmetic: SIGILL) or would ask Apple for nonsense."""
    now = now_ms()
    ok_window = {"startDate": now - DAY, "endDate": now, "paginationToken": None, "pages": 0}
    return {
        "pages 2^63-1": cursor_text(doc, {"syncedThrough": now - 2 * DAY, "window": dict(ok_window, pages=2**63 - 1)}),
        "syncedThrough -2^63": cursor_text(doc, {"syncedThrough": -2**63}),
        "syncedThrough 2^63-1": cursor_text(doc, {"syncedThrough": 2**63 - 1}),
        "window from -2^63": cursor_text(doc, {"syncedThrough": None, "window": dict(ok_window, startDate=-2**63)}),
        "window to 2^63-1": cursor_text(doc, {"syncedThrough": None, "window": dict(ok_window, endDate=2**63 - 1)}),
        "window reversed": cursor_text(doc, {"syncedThrough": None, "window": dict(ok_window, startDate=now, endDate=now - DAY)}),
        "window of 400 days": cursor_text(doc, {"syncedThrough": None, "window": dict(ok_window, startDate=now - 400 * DAY)}),
        "negative pages": cursor_text(doc, {"syncedThrough": None, "window": dict(ok_window, pages=-1)}),
        "a date in 1970": cursor_text(doc, {"syncedThrough": 0}),
        "a date next year": cursor_text(doc, {"syncedThrough": now + 365 * DAY}),
        "a fraction": cursor_text(doc, {"syncedThrough": 1.5e12 + 0.5}),
        "2^64": cursor_text(doc, {"syncedThrough": 2**64}),
        "syncedAt -2^63": cursor_text(doc, {"syncedThrough": None}, {"2000000000000001": {"revision": "r", "syncedAt": -2**63}}),
        "an id that is no id": cursor_text(doc, {"syncedThrough": None}, {"../x": {"revision": "r", "syncedAt": now}}),
        "an empty token": cursor_text(doc, {"syncedThrough": None, "window": dict(ok_window, paginationToken="")}),
    }


def test_a_tampered_cursor_is_refused_not_a_crash(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                                  tmp_path: Path) -> None:
    mock.feed(notifications=history(doc["scenarios"][:1], now_ms() - DAY))
    db = tmp_path / "ledger.db"
    state = Path(str(db) + ".sync.json")
    for name, text in hostile_cursors(doc).items():
        state.write_text(text)
        r = tool(*sync_args(keys, pki, doc, mock, db))
        # 78 (configuration) with a reason, never a signal (SIGILL was -4) or a crash report.
        assert r.code == 78, (name, r)
        assert "the sync cursor" in r.error_line() and "move it away" in r.error_line(), (name, r)
        assert state.read_text() == text, name  # left as it was, for a human to look at
    assert mock.requests() == [], "a refused cursor must not lead to a call"
    # A sound cursor is still followed.
    state.write_text(cursor_text(doc, {"syncedThrough": now_ms() - 2 * DAY}))
    r = tool(*sync_args(keys, pki, doc, mock, db))
    assert r.code == 0, r


def test_serve_logs_a_tampered_cursor_and_keeps_serving(keys: Path, pki: Path, doc: Dict[str, Any], mock: Mock,  # noqa: F811
                                                        tmp_path: Path) -> None:
    from test_serve import Server, serve_args
    cursors = hostile_cursors(doc)
    Path(str(tmp_path / "sandbox.db") + ".sync.json").write_text(cursors["window from -2^63"])
    api = ["--sync-interval", "1", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
           "--api-base-url", mock.url]
    with Server(*serve_args(pki, doc, tmp_path, *api)) as s:
        deadline = time.monotonic() + 60
        while len(s.events("sync")) < 2:  # two runs: the refusal is logged each time, and the server lives on
            assert time.monotonic() < deadline and s.p.poll() is None, s.raw_log
            time.sleep(0.1)
        for run in s.events("sync")[:2]:
            assert run["outcome"] == "failed_invalid_argument" and run["level"] == "error", run
            assert "the sync cursor" in run["message"] and "window.startDate" in run["message"], run
        assert s.request("GET", "/healthz")[0] == 200
        assert s.stop() == 0


def test_cursor_temporary_and_lock_files_do_not_follow_symlinks(keys: Path, pki: Path, doc: Dict[str, Any],  # noqa: F811
                                                                mock: Mock, tmp_path: Path) -> None:
    mock.feed(notifications=history(doc["scenarios"][:1], now_ms() - DAY))
    db = tmp_path / "ledger.db"
    state = Path(str(db) + ".sync.json")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # FILE.tmp is a symlink to another file: the cursor is written, the other file untouched.
    os.symlink(victim, str(state) + ".tmp")
    r = tool(*sync_args(keys, pki, doc, mock, db))
    assert r.code == 0, r
    assert victim.read_text() == "precious\n"
    assert json.loads(state.read_text())["notificationHistory"]["syncedThrough"] == r.json()["notificationHistory"]["endDate"]
    assert not os.path.islink(str(state) + ".tmp")
    # FILE.lock is a symlink (to a file that exists, and to one that does not): refused, neither followed nor made.
    missing = tmp_path / "made-by-the-lock.txt"
    for target in (victim, missing):
        lock = Path(str(state) + ".lock")
        lock.unlink()
        os.symlink(target, lock)
        r = tool(*sync_args(keys, pki, doc, mock, db))
        assert r.code == 78 and ".lock" in r.error_line(), r
        assert victim.read_text() == "precious\n" and not missing.exists()


# ---- values that could not be verified yet (issue 31): the cursor never passes them ------------------------------

def ocsp_notification(case: Dict[str, Any], uuid: str) -> str:
    """A notification in the OCSP harness's PKI: signed by the case's leaf, its transaction the case's own JWS."""
    import base64
    import uuid as uuidlib  # noqa: F401
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    def b64u(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    tx = Path(case["jws"][0]).read_text().strip()
    setup_dir = Path(case["leaf"]).parent
    x5c = [base64.b64encode(Path(p).read_bytes()).decode() for p in (case["leaf"], case["intermediate"], setup_dir / "root.der")]
    payload = {"notificationType": "ONE_TIME_CHARGE", "notificationUUID": uuid, "version": "2.0", "signedDate": now_ms() - 1000,
               "data": {"bundleId": "com.example.ocsp", "environment": "Sandbox", "signedTransactionInfo": tx}}
    header = {"alg": "ES256", "x5c": x5c, "typ": "JWT"}
    signing_input = b64u(json.dumps(header).encode()) + "." + b64u(json.dumps(payload).encode())
    key = serialization.load_pem_private_key(Path(case["leafKey"]).read_bytes(), None)
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))  # type: ignore[union-attr]
    return signing_input + "." + b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def ocsp_feed(cases: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Three notifications a page apart: online checks pass for the first and the third; the second's OCSP
    responder cannot be reached (a genuine notification whose revocation status cannot be learnt yet)."""
    t = now_ms() - DAY
    return [{"signedPayload": ocsp_notification(cases["good"], "00000000-0000-4000-8000-000000000001"), "firstSendAttemptDate": t},
            {"signedPayload": ocsp_notification(cases["responder_down"], "d0d0d0d0-0000-4000-8000-000000000002"),
             "firstSendAttemptDate": t + 1},
            {"signedPayload": ocsp_notification(cases["good"], "00000000-0000-4000-8000-000000000003"), "firstSendAttemptDate": t + 2}]


def test_serve_sync_never_passes_a_notification_it_could_not_verify(keys: Path, ocsp, tmp_path: Path) -> None:  # noqa: F811
    """The reproducer: `serve --online-checks --sync-interval`, the OCSP responder unreachable. A direct post of the
    genuine notification is 503 ocsp_unreachable; the sync must not count it as refused and move past it."""
    from test_serve import KEY, Server, metric
    cases = ocsp["cases"]
    folder = tmp_path / "mock"
    folder.mkdir()
    (folder / "feed.json").write_text("{}")
    items = ocsp_feed(cases)
    with served("mock_history.py", "--feed", str(folder / "feed.json"), "--public-key", str(keys / "p256_public.pem"),
                "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", ocsp["bundleId"]) as ports:
        mock = Mock(folder, f"http://127.0.0.1:{int(ports[0])}")
        mock.feed(notifications=items, pageSize=1)
        (tmp_path / "api-key").write_text(KEY + "\n")
        args = ["--bundle-id", ocsp["bundleId"], "--root", ocsp["root"], "--ledger", f"sandbox={tmp_path / 'sandbox.db'}",
                "--api-key-file", str(tmp_path / "api-key"), "--online-checks", "--sync-interval", "1",
                "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER, "--api-base-url", mock.url]
        with Server(*args) as s:
            status, answer = s.post("sandbox", items[1]["signedPayload"])
            assert status == 503 and answer["error"]["reason"] == "ocsp_unreachable", answer
            deadline = time.monotonic() + 90
            while len(s.events("sync")) < 3:
                assert time.monotonic() < deadline and s.p.poll() is None, s.raw_log
                time.sleep(0.1)
            runs = s.events("sync")[:3]
            for run in runs:
                assert run["outcome"] == "unverified" and run["unverified"] == 1 and run["rejected"] == 0, json.dumps(run)
                assert run["level"] == "error" and [u["reason"] for u in run["unverifiedValues"]] == ["ocsp_unreachable"], run
            assert sum(r["stored"] for r in runs) == 1  # the first page's notification, once
            # Every run asked for the held page again, and none asked for the page after it.
            offsets = [token_offset(dict(q["query"])["paginationToken"]) if q["query"] else 0 for q in mock.requests()]
            assert 2 not in offsets and offsets.count(1) >= 3, offsets
            c = cursor(tmp_path / "sandbox.db")
            assert c["notificationHistory"].get("syncedThrough") is None and token_offset(c["notificationHistory"]["window"]["paginationToken"]) == 1, c
            _, metrics = s.get("/metrics")
            assert metric(metrics, "appstoreserver_sync_unverified_total", environment="sandbox", reason="ocsp_unreachable") >= 3
            assert metric(metrics, "appstoreserver_sync_rejected_total", environment="sandbox", reason="ocsp_unreachable") == 0
            assert s.stop() == 0


def test_a_value_not_verified_yet_holds_the_cursor(keys: Path, ocsp, tmp_path: Path) -> None:  # noqa: F811
    cases = ocsp["cases"]
    folder = tmp_path / "mock"
    folder.mkdir()
    (folder / "feed.json").write_text("{}")
    items = ocsp_feed(cases)
    down_tx = Path(cases["responder_down"]["jws"][0]).read_text().strip()
    with served("mock_history.py", "--feed", str(folder / "feed.json"), "--public-key", str(keys / "p256_public.pem"),
                "--key-id", KEY_ID, "--issuer-id", ISSUER, "--bundle-id", ocsp["bundleId"]) as ports:
        mock = Mock(folder, f"http://127.0.0.1:{int(ports[0])}")
        mock.feed(notifications=items, pageSize=1, customers=[{"ids": ["3000000000000000"], "signedTransactions": [down_tx]}],
                  historyPageSize=1)
        db = tmp_path / "ledger.db"

        def run(*extra: str):
            return tool("sync", "--key", str(keys / "p256.p8"), "--key-id", KEY_ID, "--issuer-id", ISSUER,
                        "--bundle-id", ocsp["bundleId"], "--environment", "sandbox", "--root", ocsp["root"], "--db", str(db),
                        "--base-url", mock.url, "--compact", "--transaction-id", "3000000000000000", *extra)

        # The OCSP responder of the second notification (and of the transaction) cannot be reached: not a verdict.
        r = run("--online-checks", "--ocsp-timeout", "3")
        assert r.code == 3, r
        s = r.json()
        assert s["ok"] is False and s["unverified"] == 2 and s["rejected"] == 0 and s["stored"] == 1, s
        assert {(u["status"], u["reason"]) for u in s["unverifiedValues"]} == {("RETRYABLE_VERIFICATION_FAILURE", "ocsp_unreachable")}
        assert "could not be verified yet" in r.err and "2 value(s)" in r.err, r.err
        c = cursor(db)
        # The window is held at the page of the unverified notification; the third page was never read.
        assert "syncedThrough" not in c["notificationHistory"] or c["notificationHistory"]["syncedThrough"] is None, c
        w = c["notificationHistory"]["window"]
        assert w["pages"] == 1 and token_offset(w["paginationToken"]) == 1, c
        assert len(mock.requests()) == 2 and c["transactionHistory"] == {}, (mock.requests(), c)
        # Run again: the same page is asked for again (never the next one), and still not passed.
        before = len(mock.requests())
        r2 = run("--online-checks", "--ocsp-timeout", "3")
        assert r2.code == 3 and r2.json()["unverified"] == 2, r2
        again = mock.requests()[before:]
        assert [token_offset(dict(q["query"])["paginationToken"]) for q in again] == [1], again
        assert cursor(db) == c
        assert len(mock.requests("/inApps/v2/history/")) == 2
        assert all(q["query"] == [] for q in mock.requests("/inApps/v2/history/")), "the revision moved past the transaction"
        # Once it verifies (here: offline, the chain being sound), it is stored and the cursor moves on.
        r3 = run()
        assert r3.code == 0, r3
        s3 = r3.json()
        # The held notification, the third, and the transaction (which the held notification may have stored already).
        assert s3["unverified"] == 0 and s3["stored"] >= 2 and s3["stored"] + s3["duplicates"] == 3, s3
        c3 = cursor(db)
        assert c3["notificationHistory"]["syncedThrough"] == s3["notificationHistory"]["endDate"] and "window" not in c3["notificationHistory"]
        assert c3["transactionHistory"]["3000000000000000"]["revision"] == "rev-1"
    assert ledger_summary(db)["notifications"] == 3
