#!/usr/bin/env python3
"""ledger_postgresql.py LIBRARY TESTPKI_DIR LIFECYCLES_DIR -- the ledger on a real PostgreSQL server, several writers.

Starts PostgreSQL from Debian's packages on loopback in a temporary directory (Tests/support/postgres_server.py), then:
  1. two processes ingest overlapping streams at the same time: every signed value of Tests/support/lifecycles.py
     (notifications and history), writer A the first 70 % and writer B the last 70 % (40 % ingested by both), each in
     its own shuffled order;
  2. the state read from PostgreSQL (by a ledger opened before the writers started, which must catch up, and by a
     fresh one) must equal the single-process state: the same values ingested by one process into SQLite. Compared:
     the summary (counts, oracle), every subscription and customer at the signedDate of every value and at the end,
     and the readable tables row by row (transactions, renewal_infos, notifications: the newest version of each, as
     the conditional upserts on signedDate keep it; psql against Python's sqlite3);
  3. duplicates are one event each; a second open finds the schema made; an unreachable server is a storage error
     naming the URL without its password; a libpq-less library path is not needed (libpq is loaded on demand).
Where PostgreSQL cannot run (no initdb, or no way to run it as a non-root user), it prints a SKIPPED line and exits 77
(ctest: SKIP_RETURN_CODE). The library is loaded through the Python binding (bindings/python), with APPSTORESERVER_LIB.
"""
from __future__ import annotations

import base64
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

SKIP = 77


from ledger_values import open_ledger, payload, values_of  # noqa: E402


def ingest(ledger, kind, jws):
    if kind == "TRANSACTION":
        return ledger.ingest_transaction(jws)
    if kind == "RENEWAL_INFO":
        return ledger.ingest_renewal_info(jws)
    return ledger.ingest_notification(jws)


def writer(url, pki, lifecycles, start, stop, seed, go_at):
    """One writer process: its slice of the values, shuffled, after the common start time."""
    with open(os.path.join(lifecycles, "lifecycles.json"), encoding="utf-8") as f:
        values = values_of(json.load(f))[start:stop]
    random.Random(seed).shuffle(values)
    ledger = open_ledger(url, pki)
    while time.time() < go_at:
        time.sleep(0.001)
    t0 = time.time()
    stored = sum(1 for k, j in values if ingest(ledger, k, j).stored)
    print(f"WRITER {len(values)} {stored} {time.time() - t0:.3f}", flush=True)
    ledger.close()
    return 0


def answers(ledger, subs, customers, instants):
    out = []
    for t in instants:
        for s in subs:
            a = ledger.subscription(s, at=t)
            out.append(None if a is None else a.to_dict())
        for c in customers:
            out.append(ledger.customer(c, at=t).to_dict())
    return out


def crafted_customer(pki, doc):
    """(token, t0, [(kind, JWS)]): a subscription's transaction with an appAccountToken, and its renewal info without
    one (auto-renew turned off), so only the original transaction ties the renewal info to the customer."""
    import lifecycles as L
    signer = L.Signer(str(pki))
    day, t0 = L.D, L.T0 + 50 * L.D
    token = "6b0404f2-b094-40b8-ab01-a1c12a3a2107"
    t = {"transactionId": "8300000000000001", "originalTransactionId": "8300000000000001", "bundleId": doc["bundleId"],
         "productId": L.PRODUCTS["basic"], "purchaseDate": t0 - 10 * day, "expiresDate": t0 + 20 * day, "quantity": 1,
         "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "environment": "Sandbox",
         "signedDate": t0 - 10 * day, "appAccountToken": token}
    ri = {"originalTransactionId": "8300000000000001", "autoRenewProductId": L.PRODUCTS["basic"],
          "productId": L.PRODUCTS["basic"], "autoRenewStatus": 0, "environment": "Sandbox", "signedDate": t0 - 5 * day}
    return token, t0, [("TRANSACTION", signer.sign(t)), ("RENEWAL_INFO", signer.sign(ri))]


def psql_rows(url, table, key):
    psql = shutil.which("psql")
    if not psql:
        return None
    r = subprocess.run([psql, url, "-At", "-F", "\t", "-c",
                        f"SELECT {key}, signed_date, md5(payload) FROM appstore_ledger.{table} ORDER BY {key} COLLATE \"C\""],
                       capture_output=True, text=True, check=True)
    return [tuple(line.split("\t")) for line in r.stdout.splitlines() if line]


def sqlite_rows(path, table, key):
    import hashlib
    db = sqlite3.connect(path)
    rows = db.execute(f"SELECT {key}, signed_date, payload FROM {table} ORDER BY {key}").fetchall()
    db.close()
    return [(k, str(d), hashlib.md5(p.encode()).hexdigest()) for k, d, p in rows]


def main(argv):
    if len(argv) >= 2 and argv[1] == "--writer":
        url, pki, lifecycles, start, stop, seed, go_at = argv[2:9]
        return writer(url, pki, lifecycles, int(start), int(stop), int(seed), float(go_at))
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    lib, pki, lifecycles = argv[1:4]
    os.environ["APPSTORESERVER_LIB"] = os.path.abspath(lib)
    from postgres_server import Unavailable, postgres
    from appstoreserver.ledger import LedgerError

    with open(os.path.join(lifecycles, "lifecycles.json"), encoding="utf-8") as f:
        doc = json.load(f)
    values = values_of(doc)
    n = len(values)
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures.append(what)

    # The single-process reference: everything, in order, into SQLite.
    work = tempfile.mkdtemp(prefix="appstoreserver-ledger-pg-")
    try:
        ref_path = os.path.join(work, "reference.db")
        reference = open_ledger(f"sqlite:{ref_path}", pki)
        for k, j in values:
            ingest(reference, k, j)

        # Unreachable server: a storage error, the password not shown.
        try:
            open_ledger("postgresql://someone:s3cret@127.0.0.1:1/ledger?connect_timeout=3", pki)
            check(False, "an unreachable server is refused")
        except LedgerError as e:
            check("s3cret" not in e.message and "127.0.0.1" in e.message, f"unreachable server: {e.message}")

        try:
            server = postgres()
            url = server.__enter__()
        except Unavailable as e:
            print(f"*** SKIPPED: PostgreSQL ledger tests: {e} ***", flush=True)
            return SKIP
        try:
            early = open_ledger(url, pki)  # made the schema; must catch up with the writers' events later
            check(early.summary().events == 0, "a new PostgreSQL ledger is empty")
            go_at = time.time() + 1.5
            a, b = (0, int(n * 0.7)), (int(n * 0.3), n)
            procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", url, pki, lifecycles,
                                       str(lo), str(hi), str(seed), str(go_at)], stdout=subprocess.PIPE, text=True,
                                      env=dict(os.environ))
                     for (lo, hi), seed in ((a, 1), (b, 2))]
            outs = [p.communicate(timeout=900)[0] for p in procs]
            for p, o in zip(procs, outs):
                check(p.returncode == 0, f"writer exited {p.returncode}: {o.strip()}")
            stats = [line.split() for o in outs for line in o.splitlines() if line.startswith("WRITER ")]
            if len(stats) == 2:
                total = sum(int(s[1]) for s in stats)
                stored = sum(int(s[2]) for s in stats)
                secs = max(float(s[3]) for s in stats)
                distinct = len(set(j for _, j in values))
                check(stored == distinct, f"two writers: {total} ingests, {stored} stored = {distinct} distinct values "
                                          f"(each stored exactly once)")
                print(f"postgresql: 2 processes ingested {total} values ({stored} stored) in {secs:.2f} s: "
                      f"{total / secs:,.0f}/s together", flush=True)

            fresh = open_ledger(url, pki)
            want = reference.summary().to_dict()
            check(fresh.summary().to_dict() == want, f"summary equals the single-process one: {want}")
            check(early.summary().to_dict() == want, "a ledger opened before the writers caught up with them")

            subs, customers = set(), set()
            instants = set()
            for k, j in values:
                p = payload(j)
                if k == "NOTIFICATION":
                    instants.add(p["signedDate"])
                    continue
                subs.add(p["originalTransactionId"])
                if k == "TRANSACTION":
                    customers.add(p.get("appAccountToken") or p["originalTransactionId"])
            instants = sorted(instants)[::7] + [2_000_000_000_000]
            subs, customers = sorted(subs), sorted(customers)
            got, expected = answers(fresh, subs, customers, instants), answers(reference, subs, customers, instants)
            same = sum(1 for x, y in zip(got, expected) if x == y)
            check(got == expected, f"{len(expected)} answers ({len(subs)} subscriptions, {len(customers)} customers "
                                   f"at {len(instants)} instants): {same} equal")
            check(answers(early, subs[:20], customers[:20], instants[-3:]) ==
                  answers(reference, subs[:20], customers[:20], instants[-3:]), "the early ledger answers the same")

            again = sum(1 for k, j in values[:50] if ingest(fresh, k, j).stored)
            check(again == 0 and fresh.summary().events == want["events"], "ingesting again stores nothing")

            for table, key in (("transactions", "transaction_id"), ("renewal_infos", "original_transaction_id"),
                               ("notifications", "notification_uuid")):
                pg = psql_rows(url, table, key)
                if pg is None:
                    print("*** SKIPPED: psql not found: the readable tables were not compared ***", flush=True)
                    break
                lite = sqlite_rows(ref_path, table, key)
                check(pg == lite, f"{table}: {len(pg)} rows, each the newest version, as in SQLite")
            for led in (early, fresh):
                led.close()

            # A customer whose subscription's renewal info does not carry its appAccountToken: the customer's answer
            # includes it through the original transaction (docs/ledger.md, "Queries": a customer is the events that
            # name it and every event of the original transactions they name), read in the same round trip on
            # PostgreSQL (`customer_events`): autoRenewStatus 0 is the renewal info's (Apple: auto-renew turned off).
            token, t0, crafted = crafted_customer(pki, doc)
            mixed, lite = open_ledger(url + "?schema=mixed", pki), open_ledger("sqlite::memory:", pki)
            for k, j in crafted:
                ingest(mixed, k, j)
                ingest(lite, k, j)
            got, expected = mixed.customer(token, at=t0).to_dict(), lite.customer(token, at=t0).to_dict()
            check(got == expected and [x.get("autoRenewStatus") for x in got["subscriptions"]] == [0],
                  f"a renewal info without the customer's token is the customer's through its original transaction, "
                  f"as in SQLite: {got['subscriptions']}")
            mixed.close()
            lite.close()

            # A server whose transactions default to SERIALIZABLE (an operator's setting): the ledger's writes run at
            # READ COMMITTED all the same. Otherwise a writer waiting for the lock holds a snapshot from before the
            # commit it waited for: its writes fail to serialize, or miss the other's events.
            strict = url + "?schema=strict&options=-c%20default_transaction_isolation%3Dserializable"
            go_at = time.time() + 1.5
            procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", strict, pki, lifecycles,
                                       str(lo), str(hi), str(seed), str(go_at)], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
                     for (lo, hi), seed in ((a, 3), (b, 4))]
            outs = [p.communicate(timeout=900)[0] for p in procs]
            check(all(p.returncode == 0 for p in procs),
                  "serializable by default: both writers ingested everything" +
                  "".join(f"\n  writer exited {p.returncode}: {o.strip()[-600:]}" for p, o in zip(procs, outs) if p.returncode))
            seen = open_ledger(strict, pki)
            check(seen.summary().to_dict() == want, "serializable by default: the summary equals the single-process one")
            seen.close()
        finally:
            server.__exit__(None, None, None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"ledger postgresql: {'FAILED: ' + '; '.join(failures) if failures else 'passed'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
