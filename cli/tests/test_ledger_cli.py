"""`appstoreserver ledger ingest|show|entitlements` over Tests/support/lifecycles.py's signed lifecycles:

- every scenario's expectations (written there from Apple's documentation, never from the ledger's output), with
  the notifications (JSON lines of notification bodies) and the history catch-up (Get Transaction History pages,
  a Get All Subscription Statuses answer) ingested through the tool, read back with `show` and `entitlements`;
- the oracle over every lifecycle (zero disagreements), idempotence (everything again: stored false);
- refused input: the verifier's status and reason on stderr, exit 1, the other values recorded, nothing else changed;
- usage: --db and its environment variable, a missing identity, --at, an unknown subscription, --summary lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List

import pytest

from test_cli import SUPPORT, USAGE, Run, tool

SKIP = {"at", "asOf", "subscription", "customer", "rule", "deliveries"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ledger-testpki")
    subprocess.run([sys.executable, str(SUPPORT / "testpki.py"), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def doc(pki: Path, tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    out = tmp_path_factory.mktemp("lifecycles")
    subprocess.run([sys.executable, str(SUPPORT / "lifecycles.py"), str(pki), str(out)], check=True, capture_output=True)
    return json.loads((out / "lifecycles.json").read_text())


def identity(pki: Path, doc: Dict[str, Any]) -> List[str]:
    return ["--bundle-id", doc["bundleId"], "--environment", "sandbox", "--root", str(pki / "root.der")]


def files_for(lc: Dict[str, Any], folder: Path) -> List[str]:
    """A lifecycle as a user would have it on disk: notification bodies as JSON lines, each history page as Apple
    answers it, the renewal infos as a Get All Subscription Statuses answer."""
    folder.mkdir(parents=True, exist_ok=True)
    notes = folder / "notifications.jsonl"
    notes.write_text("".join(json.dumps({"signedPayload": n["signed"]}) + "\n" for n in lc["notifications"]))
    paths = [str(notes)]
    for i, page in enumerate(lc["history"]["pages"]):
        p = folder / f"history-{i}.json"
        p.write_text(json.dumps({"revision": str(i), "hasMore": False, "bundleId": "x", "environment": "Sandbox",
                                 "signedTransactions": page["signedTransactions"]}))
        paths.append(str(p))
    statuses = folder / "statuses.json"
    statuses.write_text(json.dumps({"environment": "Sandbox", "data": [{"subscriptionGroupIdentifier": "g",
        "lastTransactions": [{"status": 1, "originalTransactionId": "x", "signedRenewalInfo": r}
                             for r in lc["history"]["signedRenewalInfos"]]}]}))
    paths.append(str(statuses))
    return paths


def mismatches(answer: Any, want: Dict[str, Any]) -> List[str]:
    """The expectation's fields are a subset of the answer ("absent": missing; lists matched by productId)."""
    if answer is None:
        return ["no answer (null)"]
    problems = []
    for key, w in want.items():
        if key in SKIP:
            continue
        got = answer.get(key)
        if w == "absent":
            if key in answer:
                problems.append(f"{key}: expected absent, got {got!r}")
        elif isinstance(w, list):
            if not isinstance(got, list) or len(got) != len(w):
                problems.append(f"{key}: expected {len(w)} entries, got {got!r}")
                continue
            for x in w:
                same = [g for g in got if g.get("productId") == x.get("productId")]
                if not same:
                    problems.append(f"{key}: no entry for {x.get('productId')}")
                for g in same:
                    problems += [f"{key}[{x.get('productId')}].{p}" for p in mismatches(g, x)]
        elif got != w:
            problems.append(f"{key}: expected {w!r}, got {got!r}")
    return problems


def as_of(e: Dict[str, Any]) -> List[str]:
    """An expectation's knowledge time as the tool's option: none (the default, now), the current time given
    explicitly ("now"), or that time."""
    if "asOf" not in e:
        return []
    if e["asOf"] == "now":
        return ["--as-of", datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")]
    return ["--as-of", str(e["asOf"])]


def ingest(db: str, pki: Path, doc: Dict[str, Any], *files: str) -> Run:
    return tool("ledger", "ingest", "--db", db, *identity(pki, doc), *files)


def results(r: Run) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in r.out.splitlines() if line.strip()]


def test_scenarios_through_the_tool(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.db")
    stored = 0
    for lc in doc["scenarios"]:
        r = ingest(db, pki, doc, *files_for(lc, tmp_path / lc["name"]))
        assert r.code == 0, r
        rs = results(r)
        assert all(x["stored"] for x in rs), r
        assert all(x.get("agrees", True) for x in rs), r
        stored += len(rs)
        assert "0 refused; 0 contradicting" in r.err
    failures = []
    checked = 0
    for lc in doc["scenarios"]:
        for e in lc["expect"]:
            when = ["--at", str(e["at"]), *as_of(e)]
            if "subscription" in e:
                r = tool("ledger", "show", "--db", f"sqlite:{db}", e["subscription"], *when)
            else:
                r = tool("ledger", "entitlements", "--db", db, e["customer"], *when)
            assert r.code == 0, r
            checked += 1
            failures += [f"{lc['name']} at {e['at']} ({e['rule']}): {p}" for p in mismatches(r.json(), e)]
    assert not failures, "\n".join(failures)
    assert checked >= 40
    summary = tool("ledger", "show", "--db", db).json()
    assert summary["events"] == stored and summary["disagreements"] == []


def test_oracle_and_idempotence(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    everything = doc["scenarios"] + doc["random"]
    # Every lifecycle's notifications in one file of bare JWS lines, the kinds told from the payloads.
    bare = tmp_path / "all.jws"
    bare.write_text("".join(n["signed"] + "\n" for lc in everything for n in lc["notifications"]))
    db = f"sqlite:{tmp_path / 'ledger.db'}"
    first = ingest(db, pki, doc, str(bare))
    assert first.code == 0, first
    rs = results(first)
    assert len(rs) == sum(len(lc["notifications"]) for lc in everything)
    assert all(x["stored"] and x["kind"] == "NOTIFICATION" for x in rs)
    summary = tool("ledger", "show", "--db", db).json()
    assert summary["disagreements"] == [] and summary["checkedNotifications"] > 300, summary
    again = ingest(db, pki, doc, str(bare))
    assert again.code == 0 and not any(x["stored"] for x in results(again)), again
    assert f"{len(rs)} already there" in again.err
    assert tool("ledger", "show", "--db", db).json() == summary


def test_refused_input(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.db")
    first = doc["scenarios"][0]
    assert ingest(db, pki, doc, *files_for(first, tmp_path / "first")).code == 0
    before = tool("ledger", "show", "--db", db).json()
    bad = [b for b in doc["bad"] if "signed" in b]
    assert len(bad) >= 8
    for b in bad:
        f = tmp_path / f"{b['name']}.jws"
        f.write_text(b["signed"] + "\n")
        kind = {"NOTIFICATION": "notification", "TRANSACTION": "transaction"}[b["kind"]]
        r = tool("ledger", "ingest", "--db", db, *identity(pki, doc), "--kind", kind, str(f))
        assert r.code == 1, (b["name"], r)
        assert r.error_line().startswith(f"error: {b['status']} ({b['reason']}): "), (b["name"], r)
        assert r.out == "" and "1 refused" in r.err
    # A refused value among good ones: the good ones are recorded, the exit status says one was refused.
    good = doc["scenarios"][1]["notifications"][0]["signed"]
    mixed = tmp_path / "mixed.jws"
    mixed.write_text(bad[0]["signed"] + "\n" + good + "\n")
    r = tool("ledger", "ingest", "--db", db, *identity(pki, doc), str(mixed))
    assert r.code == 1 and len(results(r)) == 1 and results(r)[0]["stored"], r
    assert f"{mixed}:1" in r.error_line()
    after = tool("ledger", "show", "--db", db).json()
    assert after["events"] == before["events"] + 1


def test_bitemporal(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """docs/ledger.md, "Bitemporal queries", through `--as-of`: each delivery of each bitemporal lifecycle (a refund
    signed three days after its revocationDate, a backfill signed months after the purchases, a billing failure signed
    after the period ended) in a ledger of its own; asked now (no --as-of, and --as-of the current time) and as known
    then (--as-of equal to --at)."""
    checked, failures = 0, []
    for lc in doc["bitemporal"]:
        files = files_for(lc, tmp_path / lc["name"])
        for delivery, given in (("notifications", files[:1]), ("history", files[1:]), ("both", files)):
            db = str(tmp_path / f"{lc['name']}-{delivery}.db")
            r = ingest(db, pki, doc, *given)
            assert r.code == 0 and "0 refused" in r.err, r
            for e in lc["expect"]:
                if delivery not in e["deliveries"]:
                    continue
                when = ["--at", str(e["at"]), *as_of(e)]
                if "subscription" in e:
                    r = tool("ledger", "show", "--db", db, e["subscription"], *when)
                else:
                    r = tool("ledger", "entitlements", "--db", db, e["customer"], *when)
                assert r.code == 0, r
                checked += 1
                failures += [f"{lc['name']} [{delivery}] at {e['at']} as of {e.get('asOf', 'default')} ({e['rule']}): {p}"
                             for p in mismatches(r.json(), e)]
    assert not failures, "\n".join(failures)
    assert checked >= 20
    # Bad knowledge times are usage errors; --as-of without a subscription too; --as-of before --at is answered.
    lc = doc["bitemporal"][0]
    db = str(tmp_path / f"{lc['name']}-notifications.db")
    sub = next(e for e in lc["expect"] if "subscription" in e)
    for bad in ("yesterday", "-5", "0", "1960-01-01T00:00:00Z"):
        r = tool("ledger", "show", "--db", db, sub["subscription"], "--as-of", bad)
        assert r.code == USAGE and "--as-of" in r.err, (bad, r)
    r = tool("ledger", "show", "--db", db, "--as-of", "2025-01-01T00:00:00Z")
    assert r.code == USAGE and "--as-of is for a subscription" in r.err, r
    early = tool("ledger", "show", "--db", db, sub["subscription"], "--at", str(sub["at"]),
                 "--as-of", str(sub["at"] - 2 * 86_400_000)).json()
    assert early["status"] == 1 and "revocationDate" not in early  # the REFUND signed later is unknown then (S2)
    help_ = tool("ledger", "show", "--help")
    assert help_.code == 0 and "--as-of" in help_.out


def test_usage(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    s = doc["scenarios"][0]
    db = str(tmp_path / "ledger.db")
    notes = files_for(s, tmp_path / "s")[0]
    assert tool("ledger", "ingest", *identity(pki, doc), notes).code == USAGE  # no --db
    r = tool("ledger", "ingest", *identity(pki, doc), notes, env={"APPSTORE_LEDGER": db})
    assert r.code == 0, r
    assert tool("ledger", "ingest", "--db", db, "--bundle-id", doc["bundleId"], notes).code == USAGE  # no environment
    r = tool("ledger", "ingest", "--db", db, "--root", str(pki / "root.der"), notes,
             env={"APPSTORE_BUNDLE_ID": doc["bundleId"], "APPSTORE_ENVIRONMENT": "sandbox"})
    assert r.code == 0 and "4 already there" in r.err, r
    r = tool("ledger", "ingest", "--db", db, "--bundle-id", doc["bundleId"], "--environment", "sandbox", notes)
    assert r.code == 1 and "untrusted_chain" in r.err, r  # the bundled Apple root does not anchor the test PKI
    assert tool("ledger", "show", "--db", "mysql://localhost/x").code == USAGE
    assert tool("ledger", "show", "--db", db, "1", "--at", "yesterday").code == USAGE
    assert tool("ledger", "show", "--db", db, "--at", "2025-01-01T00:00:00Z").code == USAGE
    empty = tmp_path / "empty.json"
    empty.write_text('{"nothing": 1}')
    assert tool("ledger", "ingest", "--db", db, *identity(pki, doc), str(empty)).code == 66
    unknown = tool("ledger", "show", "--db", db, "no-such-subscription")
    assert unknown.code == 0 and unknown.out.strip() == "null" and "knows no transaction" in unknown.err
    e = next(x for x in s["expect"] if "customer" in x and x.get("entitlements"))
    iso = tool("ledger", "entitlements", "--db", db, e["customer"], "--at", "2025-04-17T00:00:00Z").json()
    ms = tool("ledger", "entitlements", "--db", db, e["customer"], "--at", "1744848000000").json()
    assert iso == ms and iso["at"] == 1744848000000
    lines = tool("ledger", "entitlements", "--db", db, e["customer"], "--at", str(e["at"]), "--summary")
    assert lines.code == 0
    for want in e["entitlements"]:
        assert any(l.split()[:2] == [want["productId"], want["reason"]] for l in lines.out.splitlines()), lines
    nothing = tool("ledger", "entitlements", "--db", db, "no-such-customer", "--summary")
    assert nothing.out.startswith("no entitlements at "), nothing
    help_ = tool("ledger", "--help")
    assert help_.code == 0 and "ingest" in help_.out and "entitlements" in help_.out


def test_postgresql(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """The same ledger on a throwaway PostgreSQL server (Tests/support/postgres_server.py): libpq loaded by the tool
    when the URL is postgresql://; answers equal to the SQLite ledger's."""
    sys.path.insert(0, str(SUPPORT))
    from postgres_server import Unavailable, postgres
    s = doc["scenarios"][0]
    files = files_for(s, tmp_path / "s")
    try:
        server = postgres()
        url = server.__enter__()
    except Unavailable as e:
        pytest.skip(f"*** SKIPPED: PostgreSQL: {e} ***")
    try:
        r = ingest(url, pki, doc, *files)
        assert r.code == 0 and "0 refused" in r.err, r
        lite = str(tmp_path / "ledger.db")
        assert ingest(lite, pki, doc, *files).code == 0
        assert tool("ledger", "show", "--db", url).json() == tool("ledger", "show", "--db", lite).json()
        for e in s["expect"]:
            args = ["show", e["subscription"]] if "subscription" in e else ["entitlements", e["customer"]]
            got = tool("ledger", args[0], "--db", url, args[1], "--at", str(e["at"]))
            assert got.code == 0 and got.json() == tool("ledger", args[0], "--db", lite, args[1], "--at", str(e["at"])).json()
            assert not mismatches(got.json(), e), (e, got)
    finally:
        server.__exit__(None, None, None)


def test_identity_migration_and_reverify(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """A ledger is bound to its app and environment (docs/ledger.md, "Identity"): ingesting into a Sandbox ledger
    with --environment production is refused (exit 78, ledger_identity_mismatch) and writes nothing; `show` opens a
    ledger with the identity it records; a 0.3.0 file (Tests/support/ledger030.py) is migrated in place; `reverify`
    checks every stored value again (exit 1 when any is refused)."""
    from test_cli import CONFIG
    sys.path.insert(0, str(SUPPORT))
    import ledger030
    s = doc["scenarios"][0]
    db = str(tmp_path / "ledger.db")
    files = files_for(s, tmp_path / "s")
    assert ingest(db, pki, doc, *files).code == 0
    before = tool("ledger", "show", "--db", db).json()
    prod = tool("ledger", "ingest", "--db", db, "--bundle-id", doc["bundleId"], "--environment", "production",
                "--app-apple-id", "1234", "--root", str(pki / "root.der"), files[0])
    assert prod.code == CONFIG and "ledger_identity_mismatch" in prod.err and "Sandbox" in prod.err, prod
    other = tool("ledger", "ingest", "--db", db, "--bundle-id", "com.example.other", "--environment", "sandbox",
                 "--root", str(pki / "root.der"), files[0])
    assert other.code == CONFIG and "ledger_identity_mismatch" in other.err, other
    assert tool("ledger", "show", "--db", db).json() == before

    ok = tool("ledger", "reverify", "--db", db, "--root", str(pki / "root.der"))
    assert ok.code == 0 and ok.json() == {"checked": before["events"], "refused": []}, ok
    apple = tool("ledger", "reverify", "--db", db)  # the bundled Apple root does not anchor the test PKI
    assert apple.code == 1 and len(apple.json()["refused"]) == before["events"], apple
    assert {r["reason"] for r in apple.json()["refused"]} == {"untrusted_chain"}

    values = [("NOTIFICATION", n["signed"]) for n in s["notifications"]]
    old = tmp_path / "old.db"
    ledger030.write(old, values)
    shown = tool("ledger", "show", "--db", str(old))
    assert shown.code == 0 and shown.json()["events"] == len({j for _, j in values}), shown
    fresh = tool("ledger", "show", "--db", str(tmp_path / "new.db"))
    assert fresh.code == CONFIG and "records no app or environment" in fresh.err, fresh


def test_storage_failure_exits_74(tmp_path: Path) -> None:
    """A database that fails (not a database, a server that cannot be reached) is STORAGE_ERROR and exit 74
    (EX_IOERR), distinct from an internal failure (70), so that a timer retries on it alone."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database: the SQLite header is missing from these bytes " * 8)
    r = tool("ledger", "show", "--db", str(junk))
    assert r.code == 74 and r.error_line().startswith("error: STORAGE_ERROR (storage_failed): "), r
    help_ = tool("--help")
    assert any(l.split()[:1] == ["74"] and "storage" in l for l in help_.out.splitlines()), help_.out


# ---- bulk import, check (docs/ledger.md, "Bulk import", "Storage layout") ---------------------------------------


def import_lines(doc: Dict[str, Any]) -> List[str]:
    """Every value of every lifecycle as the import's JSON lines (duplicates included: a backfill has them)."""
    lines = []
    for lc in doc["scenarios"] + doc["random"]:
        lines += [json.dumps({"notification": n["signed"]}) for n in lc["notifications"]]
        lines += [json.dumps({"transaction": t}) for p in lc["history"]["pages"] for t in p["signedTransactions"]]
        lines += [json.dumps({"renewalInfo": r}) for r in lc["history"]["signedRenewalInfos"]]
    return lines


def payload_digest(line: str) -> str:
    import base64
    import hashlib
    jws = next(iter(json.loads(line).values()))
    p = jws.split(".")[1]
    return hashlib.sha256(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))).hexdigest()


def stored_counts(db: Path) -> Dict[str, int]:
    import sqlite3
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return dict(c.execute("SELECT payload_sha256, count(*) FROM events GROUP BY payload_sha256").fetchall())


def test_import_killed_and_resumed(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """`ledger import` killed with SIGKILL mid-import, then run again: every line's value is stored exactly once, the
    second run counts what the first stored as already present, and a refused line is reported by number (exit 1).
    The first run reads a FIFO that is given the first 25 lines only, so it is killed mid-import however fast or
    slow the machine is (after its first batches are committed, before the rest exists)."""
    import os
    import signal
    import sqlite3
    import time
    from test_cli import TOOL
    lines = import_lines(doc)
    lines.insert(10, '{"transaction": "not.a.jws"}')  # line 11
    src = tmp_path / "backfill.jsonl"
    src.write_text("\n".join(lines) + "\n")
    want = {payload_digest(l) for i, l in enumerate(lines) if i != 10}
    assert len(lines) > 50
    db = tmp_path / "ledger.db"
    fifo = tmp_path / "first-lines.fifo"
    os.mkfifo(fifo)
    p = subprocess.Popen([TOOL, "ledger", "import", "--db", str(db), *identity(pki, doc), "--batch-size", "10", str(fifo)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    at_kill = 0
    # Opened once the import has opened it (ENXIO until then); a tool that ends before that fails the test, not hangs it.
    deadline = time.monotonic() + 120
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            import errno
            assert e.errno == errno.ENXIO and p.poll() is None and time.monotonic() < deadline, (e, p.poll())
            time.sleep(0.02)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "w") as feed:
        feed.write("\n".join(lines[:25]) + "\n")
        feed.flush()
        deadline = time.monotonic() + 300
        while p.poll() is None and time.monotonic() < deadline:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
                    at_kill = c.execute("SELECT count(*) FROM events").fetchone()[0]
            except sqlite3.Error:
                at_kill = 0  # not created yet
            if at_kill > 0:
                break
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    assert p.returncode == -signal.SIGKILL, f"the import ended by itself ({p.returncode}) before it could be killed"
    assert 0 < at_kill <= 24, at_kill  # a batch or two of the lines given (one of them refused)
    r = tool("ledger", "import", "--db", str(db), *identity(pki, doc), str(src))
    assert r.code == 1, r  # the refused line
    result = r.json()
    assert result["read"] == len(lines)
    assert result["refusedCount"] == 1 and result["refused"][0]["line"] == 11, result
    assert f"{src}:11: " in r.err
    assert result["alreadyPresent"] >= at_kill
    assert result["stored"] + result["alreadyPresent"] == len(lines) - 1
    counts = stored_counts(db)
    assert set(counts) == want and set(counts.values()) == {1}
    # A third run: everything already present, nothing verified or stored.
    again = tool("ledger", "import", "--db", str(db), *identity(pki, doc), str(src)).json()
    assert (again["stored"], again["alreadyPresent"]) == (0, len(lines) - 1)
    assert tool("ledger", "show", "--db", str(db)).json()["events"] == len(want)


def test_import_on_a_full_disk_exits_74_and_resumes(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """`ledger import` when the disk fills (a file size limit just above the database stands in for it: SQLite's
    write fails with EFBIG as it would with ENOSPC): exit 74, STORAGE_ERROR; the file passes SQLite's integrity check;
    run again without the limit, it stores the rest, each value once."""
    import resource
    import signal
    import sqlite3
    from test_cli import TOOL
    lines = import_lines({"scenarios": doc["scenarios"], "random": doc["random"][:10]})
    want = {payload_digest(l) for l in lines}
    src = tmp_path / "backfill.jsonl"
    src.write_text("\n".join(lines) + "\n")
    first = tmp_path / "first.jsonl"
    first.write_text("\n".join(lines[:5]) + "\n")
    db = tmp_path / "ledger.db"
    assert tool("ledger", "import", "--db", str(db), *identity(pki, doc), str(first)).code == 0
    limit = db.stat().st_size + 48 * 1024

    def full_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run([TOOL, "ledger", "import", "--db", str(db), *identity(pki, doc), "--batch-size", "10", str(src)],
                       capture_output=True, text=True, timeout=300, preexec_fn=full_disk)
    assert p.returncode == 74 and "error: STORAGE_ERROR (storage_failed): " in p.stderr, (p.returncode, p.stderr[-600:])
    with sqlite3.connect(str(db)) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        partial = c.execute("SELECT count(*) FROM events").fetchone()[0]
    assert partial < len(want), partial
    r = tool("ledger", "import", "--db", str(db), *identity(pki, doc), str(src))
    assert r.code == 0 and r.json()["stored"] + r.json()["alreadyPresent"] == len(lines), r
    counts = stored_counts(db)
    assert set(counts) == want and set(counts.values()) == {1}


def test_import_progress_only_on_a_terminal(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    import os
    import pty
    from test_cli import TOOL
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(import_lines({"scenarios": doc["scenarios"][:2], "random": []})) + "\n")
    plain = tool("ledger", "import", "--db", str(tmp_path / "a.db"), *identity(pki, doc), str(src))
    assert plain.code == 0 and "\r" not in plain.err, plain
    master, slave = pty.openpty()
    p = subprocess.run([TOOL, "ledger", "import", "--db", str(tmp_path / "b.db"), *identity(pki, doc), str(src)],
                       stdout=subprocess.PIPE, stderr=slave, timeout=120)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert p.returncode == 0 and b"\rledger import: " in shown, shown


def test_check_lists_corrupt_rows(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """`ledger check`: exit 0 on a sound ledger; a row whose certificate chain is missing is listed by id (exit 74),
    and a query that reads it names it as a storage error."""
    import sqlite3
    db = tmp_path / "ledger.db"
    assert ingest(str(db), pki, doc, *files_for(doc["scenarios"][0], tmp_path / "s")).code == 0
    ok = tool("ledger", "check", "--db", str(db))
    assert ok.code == 0 and ok.json()["problems"] == [] and ok.json()["checked"] > 0, ok
    with sqlite3.connect(db) as c:
        (victim,) = c.execute("SELECT min(id) FROM events").fetchone()
        c.execute("UPDATE events SET signed = '~1.' || ? || substr(signed, 47) WHERE id = ?", ("A" * 43, victim))
    bad = tool("ledger", "check", "--db", str(db))
    assert bad.code == 74 and [p["eventId"] for p in bad.json()["problems"]] == [victim], bad
    assert f"event {victim}: " in bad.err
    # Opening reads no event (per-key queries); a query that reads the row names it.
    with sqlite3.connect(db) as c:
        (subscription,) = c.execute("SELECT k.key FROM event_keys k WHERE k.kind = 's' AND k.event_id = ?",
                                    (victim,)).fetchone()
    assert tool("ledger", "show", "--db", str(db)).code == 0
    shown = tool("ledger", "show", "--db", str(db), subscription)
    assert shown.code == 74 and f"event {victim}" in shown.err, shown


def test_postgresql_import_check_and_layout(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """On PostgreSQL: `ledger import` twice (nothing stored twice), every event stored in the compact form with one
    jws_headers row, every value verified again from what was stored (byte for byte, or its signature would fail),
    `ledger check` clean, and a deleted chain listed by `check` (exit 74)."""
    sys.path.insert(0, str(SUPPORT))
    from postgres_server import Unavailable, postgres
    from test_serve_postgres import sql
    try:
        server = postgres()
        url = server.__enter__()
    except Unavailable as e:
        pytest.skip(f"*** SKIPPED: PostgreSQL: {e} ***")
    try:
        lines = import_lines({"scenarios": doc["scenarios"][:3], "random": []})
        src = tmp_path / "in.jsonl"
        src.write_text("\n".join(lines) + "\n")
        want = {payload_digest(l) for l in lines}
        first = tool("ledger", "import", "--db", url, *identity(pki, doc), "--batch-size", "7", str(src))
        assert first.code == 0 and first.json()["stored"] == len(want), first
        again = tool("ledger", "import", "--db", url, *identity(pki, doc), str(src))
        assert again.code == 0 and (again.json()["stored"], again.json()["alreadyPresent"]) == (0, len(lines)), again
        rows = sql(url, "SELECT payload_sha256, signed LIKE '~1.%' FROM appstore_ledger.events")
        assert {r[0] for r in rows} == want and len(rows) == len(want) and {r[1] for r in rows} == {"t"}, rows[:3]
        assert sql(url, "SELECT count(*) FROM appstore_ledger.jws_headers") == [["1"]]
        ok = tool("ledger", "reverify", "--db", url, "--root", str(pki / "root.der"))
        assert ok.code == 0 and ok.json() == {"checked": len(want), "refused": []}, ok
        assert tool("ledger", "check", "--db", url).code == 0
        assert_export_moves_the_ledger(url, lines, pki, doc, tmp_path)
        sql(url, "DELETE FROM appstore_ledger.jws_headers")
        bad = tool("ledger", "check", "--db", url)
        assert bad.code == 74 and len(bad.json()["problems"]) == len(want), bad
        assert all("missing from jws_headers" in p["message"] for p in bad.json()["problems"])
    finally:
        server.__exit__(None, None, None)


def assert_export_moves_the_ledger(db: str, lines: List[str], pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """`ledger export` of a ledger that imported `lines`: the first line of each distinct payload, in order, byte for
    byte (as compact JSON); `-` writes the same to stdout; imported into a new SQLite file, the same ledger."""
    seen, want = set(), []
    for line in lines:
        if payload_digest(line) not in seen:
            seen.add(payload_digest(line))
            want.append(json.dumps(json.loads(line), separators=(",", ":")))
    out = tmp_path / "export.jsonl"
    r = tool("ledger", "export", "--db", db, str(out))
    assert r.code == 0 and r.json()["exported"] == len(want), r
    assert out.read_text().splitlines() == want
    assert out.stat().st_mode & 0o777 == 0o600
    stdout = tool("ledger", "export", "--db", db, "-")
    assert stdout.code == 0 and stdout.out == out.read_text() and f'"exported":{len(want)}' in stdout.err, stdout.err
    moved = str(tmp_path / "moved.db")
    i = tool("ledger", "import", "--db", moved, *identity(pki, doc), str(out))
    assert i.code == 0 and i.json()["stored"] == len(want), i
    assert tool("ledger", "show", "--db", moved).json() == tool("ledger", "show", "--db", db).json()
    bad = tool("ledger", "export", "--db", db, str(tmp_path / "missing-dir" / "x.jsonl"))
    assert bad.code != 0 and "cannot create the export file" in bad.err, bad


def test_export_from_sqlite(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    lines = import_lines({"scenarios": doc["scenarios"][:4], "random": []})
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "ledger.db")
    assert tool("ledger", "import", "--db", db, *identity(pki, doc), str(src)).code == 0
    assert_export_moves_the_ledger(db, lines, pki, doc, tmp_path)


def test_import_bad_lines_are_reported_never_a_crash(pki: Path, doc: Dict[str, Any], tmp_path: Path) -> None:
    """A line that is not JSON, an object of another shape, a line larger than the verifier's limit (refused without
    being read into memory), and a file that does not exist: each reported with its line number and reason."""
    good = import_lines({"scenarios": doc["scenarios"][:1], "random": []})
    first = next(iter(json.loads(good[0]).values())).split(".")
    other = next(iter(json.loads(good[1]).values())).split(".")
    forged = json.dumps({"notification": ".".join(first[:2] + other[2:])})  # a stored payload, another's signature
    lines = good[:2] + ["{not json", json.dumps({"transaction": "a", "renewalInfo": "b"}),
                        "A" * (2 * 1024 * 1024), "[]"] + good[2:4] + [forged]
    src = tmp_path / "bad.jsonl"
    src.write_text("\n".join(lines))  # no final newline: the last line still counts
    r = tool("ledger", "import", "--db", str(tmp_path / "l.db"), *identity(pki, doc), str(src))
    assert r.code == 1, r
    got = {x["line"]: x["reason"] for x in r.json()["refused"]}
    assert got == {3: "malformed", 4: "malformed", 5: "input_too_large", 6: "malformed", 9: "bad_signature"}, got
    assert r.json()["read"] == len(lines) and r.json()["stored"] + r.json()["alreadyPresent"] == 4
    # Again: the stored values are skipped; the forged one, whose payload is stored now, is still verified and refused.
    again = tool("ledger", "import", "--db", str(tmp_path / "l.db"), *identity(pki, doc), str(src))
    assert again.code == 1 and again.json()["alreadyPresent"] == 4, again
    assert {x["line"]: x["reason"] for x in again.json()["refused"]} == got
    missing = tool("ledger", "import", "--db", str(tmp_path / "l.db"), *identity(pki, doc), str(tmp_path / "nope.jsonl"))
    assert missing.code == USAGE and "cannot open the import file" in missing.err, missing
