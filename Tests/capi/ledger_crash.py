#!/usr/bin/env python3
"""ledger_crash.py WRITER TESTPKI_DIR LIFECYCLES_DIR WORK_DIR [--kills N] [--seed S] -- kill a ledger writer with
SIGKILL mid-stream, again and again, and check that no acknowledged event is lost and the database stays consistent.

Each round starts the writer (Tests/capi/ledger_crash_writer.c) at the first value not yet acknowledged, lets it
acknowledge a random number of values (0-40) or run a random 0-30 ms, and kills it (SIGKILL: no handler, no flush, no
close). After every kill, with no writer running, the database is opened with Python's own sqlite3 and checked:
PRAGMA integrity_check is "ok", the schema version is this source's (Tests/support/ledger030.py: schema_version), every acknowledged value's payload is in `events` (no
acknowledged event lost), every readable-table row points at a stored event. At the end the writer runs to completion,
and the rebuilt state's summary must equal that of a clean, uninterrupted ingest into a fresh database.
Exit status 0 when every check passed."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ledger030 import schema_version  # noqa: E402

SCHEMA_VERSION = schema_version()


def payload_sha256(jws: str) -> str:
    seg = jws.split(".")[1]
    return hashlib.sha256(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))).hexdigest()


def values(doc):
    out = []
    for group in ("scenarios", "random"):
        for lc in doc[group]:
            out += [n["signed"] for n in lc["notifications"]]
            out += [t for p in lc["history"]["pages"] for t in p["signedTransactions"]]
            out += lc["history"]["signedRenewalInfos"]
    return out


def check_db(path, acked, digests):
    problems = []
    con = sqlite3.connect(path)
    try:
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("integrity_check failed")
        if con.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            problems.append(f"schema version is not {SCHEMA_VERSION}")
        stored = {r[0] for r in con.execute("SELECT payload_sha256 FROM events")}
        lost = [i for i in acked if digests[i] not in stored]
        if lost:
            problems.append(f"{len(lost)} acknowledged events lost, e.g. #{lost[0]}")
        for table in ("transactions", "renewal_infos", "notifications"):
            orphans = con.execute(f"SELECT count(*) FROM {table} WHERE event_id NOT IN (SELECT id FROM events)").fetchone()[0]
            if orphans:
                problems.append(f"{orphans} {table} rows without their event")
    finally:
        con.close()
    return problems


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--"))
    writer, pki, lcdir, work = args
    kills, rng = int(opts.get("kills", "25")), random.Random(int(opts.get("seed", "1")))
    with open(os.path.join(lcdir, "lifecycles.json"), encoding="utf-8") as f:
        vals = values(json.load(f))
    digests = [payload_sha256(v) for v in vals]
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "crash.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    acked: set[int] = set()
    problems = []
    next_index, killed_mid = 0, 0
    started = time.monotonic()
    for k in range(kills):
        p = subprocess.Popen([writer, pki, lcdir, db, "write", str(next_index % len(vals))], stdout=subprocess.PIPE, text=True)
        budget, deadline = rng.randrange(0, 41), time.monotonic() + rng.uniform(0, 0.03)
        seen = 0
        for line in p.stdout:
            if line.startswith("ACK "):
                i = int(line.split()[1])
                acked.add(i)
                next_index = i + 1
                seen += 1
                if seen >= budget or time.monotonic() >= deadline:
                    break
            if line.startswith("DONE"):
                break
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed_mid += 1
        p.wait()
        p.stdout.close()
        for problem in check_db(db, acked, digests):
            problems.append(f"after kill {k + 1}: {problem}")
    # Finish, then compare with a clean run.
    subprocess.run([writer, pki, lcdir, db, "write", "0"], stdout=subprocess.DEVNULL, check=True)
    clean = os.path.join(work, "clean.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(clean + suffix):
            os.remove(clean + suffix)
    subprocess.run([writer, pki, lcdir, clean, "write", "0"], stdout=subprocess.DEVNULL, check=True)
    crashed_summary = subprocess.run([writer, pki, lcdir, db, "summary"], capture_output=True, text=True, check=True).stdout
    clean_summary = subprocess.run([writer, pki, lcdir, clean, "summary"], capture_output=True, text=True, check=True).stdout
    if json.loads(crashed_summary) != json.loads(clean_summary):
        problems.append(f"final state differs from a clean ingest:\n  {crashed_summary}  {clean_summary}")
    problems += check_db(db, set(range(len(vals))), digests)
    for p in problems:
        print("FAIL " + p)
    print(f"ledger crash: {kills} rounds, {killed_mid} writers killed mid-stream, {len(acked)} acknowledged values "
          f"of {len(vals)}, {'no acknowledged event lost, integrity ok, final state identical to a clean ingest' if not problems else f'{len(problems)} problems'} "
          f"({time.monotonic() - started:.1f} s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
