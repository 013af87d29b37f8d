#!/usr/bin/env python3
"""ledger_postgresql_identity.py LIBRARY TESTPKI_DIR LIFECYCLES_DIR -- PostgreSQL ledgers: schemas, identity, restarts.

On a throwaway PostgreSQL server on loopback (Tests/support/postgres_server.py; SKIPPED, exit 77, where it cannot run):
  1. identity and schemas (docs/ledger.md, "Identity"): two apps' ledgers in one database, each in its own schema
     (`?schema=NAME`), each see only their own events; a verifier of another app on a schema is refused with
     CONFIGURATION_ERROR / ledger_identity_mismatch and nothing is written; a schema name that is not a lowercase SQL
     identifier is an argument error; a 0.3.0 schema (version 1, built here from that version's SQL) is migrated in
     place with its identity taken from its events.
  2. a restart mid-ingest (docs/ledger.md, "Reconnecting"): one long-lived ledger ingests every lifecycle value while
     the server is restarted (pg_ctl restart, fast: every connection closed) twice; a value whose ingest failed
     (STORAGE_ERROR: not acknowledged) is given again, as Apple retries a notification. Afterwards every value is
     acknowledged, every acknowledged value is in the events table exactly once (psql), and the ledger's summary equals
     a single-process SQLite ledger's: the long-lived ledger reconnected by itself, with its prepared statements.
  3. a fleet mid-restart: two writers with four callers each (group commit: a batch per commit), overlapping slices,
     the server restarted once: every value acknowledged, each stored once, both writers answering the
     single-process state.
  4. a reader's cache across a restart: a purchase a long-lived reader has answered from is taken out of the tables
     (as a crash loses a commit seen before its flush) and the server restarted: the reader answers as a ledger
     opened afterwards, not from its cache.
  5. a flush that fails (docs/ledger.md, "Fleet"): every synchronous commit made to wait (a synchronous standby that
     never connects), a value A is ingested, then B about the same subscription (committed while A's flush waits,
     from the state A's commit left), then the server restarted: neither A nor B is acknowledged (STORAGE_ERROR),
     both given again are acknowledged and stored once, and the ledger answers as one opened afterwards.
  6. another process's event between two of this one's about the same subscription: ledger A ingests a subscription's
     first notification, ledger B its second, A its third (a write prepared from A's cached state, which lacks the
     second): A's result, both ledgers' answers and the summary (the verdicts A recorded) are a fresh ledger's.
  7. a failover onto other data: a ledger caches a subscription's first notification, its connection is lost and comes
     back on a copy without it; the renewal it then stores gets the verdict of the data it now talks to.
The library is loaded through the Python binding (bindings/python), with APPSTORESERVER_LIB.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
sys.path.insert(0, HERE)

SKIP = 77


def psql(url, sql):
    # On stdin, in one transaction: the statements can be longer than a command line.
    r = subprocess.run([shutil.which("psql") or "psql", url, "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-1"],
                       input=sql, capture_output=True, text=True, check=True)
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def sha_of(jws):
    import base64
    seg = jws.split(".")[1]
    return hashlib.sha256(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))).hexdigest()


def until_acknowledged(attempt, failed):
    """attempt() until it returns, as Apple retries a delivery: a STORAGE_ERROR (the server away) is noted in `failed`
    and retried for up to 120 s (a restart takes ~1 s; Apple retries for days); any other error is raised."""
    from appstoreserver.ledger import LedgerError
    deadline = time.monotonic() + 120
    while True:
        try:
            return attempt()
        except LedgerError as e:
            failed.append(e.message)
            if e.appstore_status.name != "STORAGE_ERROR" or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def failover_onto_other_data(url, pki, check):
    """7. A failover onto other data (docs/ledger.md, "Reconnecting": after a reconnection the ledger trusts nothing it
    cached). Guards the fix of 8173bc5: a one-round-trip write is prepared from the cached states, and was sent on
    the connection re-established on the way, with verdicts from the lost server's data. The loss is noticed while
    the database is gone (renamed away after a restart: the reconnection fails, one is pending), then the database
    comes back as a copy made before the subscription's first notification (a replica that lagged). The
    renewal given next must be judged on that copy: a DID_RENEW signed before its period's purchaseDate, with no
    earlier period known, is INCOMPLETE_HISTORY (docs/ledger.md, "Disagreements"); from the stale cache it was AGREES."""
    import random
    import lifecycles as L
    from ledger_values import open_ledger
    from appstoreserver.ledger import LedgerError
    base = url.rsplit("/", 1)[0]

    def admin(sql):
        # Not psql()'s transaction: CREATE/ALTER DATABASE run outside one.
        subprocess.run([shutil.which("psql") or "psql", url, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True, check=True)

    def verdict_of(database, uuid):
        return psql(f"{base}/{database}", "SELECT verdict FROM appstore_ledger.notifications "
                                          f"WHERE notification_uuid = '{uuid}'")

    w = L.World(L.Signer(pki), random.Random(7), "failover")
    sub = L.Subscription(w, None)
    first = sub.buy(L.T0)
    # Signed 33 s before the new period's purchaseDate, as Apple signs a DID_RENEW (docs/ledger.md, "Disagreements").
    second = sub.renew(at=sub.tx["expiresDate"] - 33_000)
    admin("CREATE DATABASE failover")
    open_ledger(f"{base}/failover", pki).close()  # the schema, no event
    admin("CREATE DATABASE failover_replica TEMPLATE failover")  # the lagging copy
    led = open_ledger(f"{base}/failover", pki)
    r = led.ingest_notification(first["signed"]).to_dict()
    check(r.get("verdict") == "AGREES", f"failover: the first notification agrees ({r.get('verdict')})")  # its period starts
    url.restart()  # every connection closed; the ledger, idle, does not know yet
    admin("ALTER DATABASE failover RENAME TO failover_lost")
    try:
        led.ingest_notification(second["signed"])
        check(False, "failover setup: the renewal sent while the database is gone fails")
        return
    except LedgerError as e:
        if e.appstore_status.name != "STORAGE_ERROR":
            raise
    admin("ALTER DATABASE failover_replica RENAME TO failover")
    # Given again until acknowledged, as Apple retries (the flush connection, lost too, fails an attempt or two).
    failed = []
    r = until_acknowledged(lambda: led.ingest_notification(second["signed"]).to_dict(), failed)
    print(f"failover: the renewal acknowledged after {len(failed)} more failed attempts: "
          f"{[m[:90] for m in failed]}", flush=True)
    check(verdict_of("failover", first["uuid"]) == [] and verdict_of("failover_lost", first["uuid"]) == [["AGREES"]],
          "failover setup: the first notification is in the lost database only")
    check(verdict_of("failover", second["uuid"]) == [["INCOMPLETE_HISTORY"]],
          f"failover: the renewal's stored verdict is the new data's, INCOMPLETE_HISTORY "
          f"({verdict_of('failover', second['uuid'])})")
    check(r.get("verdict") == "INCOMPLETE_HISTORY", f"failover: the acknowledged result says so too ({r.get('verdict')})")
    led.close()


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    lib, pki, lifecycles = argv[1:4]
    os.environ["APPSTORESERVER_LIB"] = os.path.abspath(lib)
    from postgres_server import Unavailable, postgres
    from ledger_postgresql import ingest, open_ledger, values_of
    from ledger030 import postgres_schema_v1
    from appstoreserver.ledger import Ledger, LedgerError
    from appstoreserver.models.Environment import Environment
    from appstoreserver.signed_data_verifier import SignedDataVerifier

    with open(os.path.join(lifecycles, "lifecycles.json"), encoding="utf-8") as f:
        values = values_of(json.load(f))
    distinct = {j for _, j in values}
    with open(os.path.join(pki, "root.der"), "rb") as f:
        root = f.read()
    other_app = SignedDataVerifier([root], False, Environment.SANDBOX, "com.example.other")
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures.append(what)

    if not shutil.which("psql"):
        print("*** SKIPPED: PostgreSQL identity and reconnection tests: psql not found ***", flush=True)
        return SKIP
    work = tempfile.mkdtemp(prefix="appstoreserver-ledger-pg-id-")
    try:
        reference = open_ledger(f"sqlite:{os.path.join(work, 'reference.db')}", pki)
        for k, j in values:
            ingest(reference, k, j)
        want = reference.summary().to_dict()
        try:
            server = postgres()
            url = server.__enter__()
        except Unavailable as e:
            print(f"*** SKIPPED: PostgreSQL identity and reconnection tests: {e} ***", flush=True)
            return SKIP
        try:
            # 1. two apps in one database, one schema each
            a_url, b_url = url + "?schema=app_a", url + "?schema=app_b"
            a = open_ledger(a_url, pki)
            for k, j in values[:40]:
                ingest(a, k, j)
            b = Ledger.open(b_url, other_app)
            check(b.summary().events == 0 and a.summary().events == len({j for _, j in values[:40]}),
                  "two schemas in one database: each ledger sees only its own events")
            before = psql(url, "SELECT count(*) FROM app_a.events")
            try:
                Ledger.open(a_url, other_app)
                check(False, "another app's verifier on app_a is refused")
            except LedgerError as e:
                check(e.appstore_status.name == "CONFIGURATION_ERROR" and e.reason.name == "LEDGER_IDENTITY_MISMATCH"
                      and "com.example.other" in e.message, f"another app's verifier on app_a: {e.reason!s}: {e.message}")
            check(psql(url, "SELECT count(*) FROM app_a.events") == before, "the refused open wrote nothing")
            try:
                Ledger.open(url + "?schema=Bad-Name", other_app)
                check(False, "a schema name that is not an identifier is refused")
            except ValueError as e:
                check("schema" in str(e), f"a bad schema name: {e}")
            # A 0.3.0 schema: version 1's SQL in the default schema name, with its rows, then opened.
            rows = ",".join(f"('{k}', '{sha_of(j)}', '{j}', 0)" for k, j in values[:30])
            psql(url, postgres_schema_v1("legacy") +
                 f"INSERT INTO legacy.events (kind, payload_sha256, signed, received_at) VALUES {rows} "
                 "ON CONFLICT DO NOTHING")
            try:
                Ledger.open(url + "?schema=legacy", other_app)
                check(False, "a 0.3.0 schema of another app is refused")
            except LedgerError as e:
                check(e.reason.name == "LEDGER_IDENTITY_MISMATCH", f"a 0.3.0 schema, another app: {e.message}")
            check(psql(url, "SELECT version FROM legacy.schema_version") == [["1"]], "... and left at version 1")
            legacy = open_ledger(url + "?schema=legacy", pki)
            check(legacy.summary().events == len({j for _, j in values[:30]}) and
                  psql(url, "SELECT count(*) FROM legacy.events WHERE bundle_id = 'com.example.testpki' "
                            "AND environment = 'Sandbox'") == [[str(len({j for _, j in values[:30]}))]],
                  "a 0.3.0 schema is migrated in place, its identity from its events")
            for led in (a, b, legacy):
                led.close()

            # 2. restarts mid-ingest
            ledger = open_ledger(url + "?schema=restarts", pki)
            acknowledged, failed = [], []
            progress = threading.Event()

            # The first time, the ingests wait at a quarter of the values until the server is down, so they meet
            # it down however fast the machine is; the second, a restart races the ingests in flight.
            resume = threading.Event()

            def run():
                for i, (k, j) in enumerate(values):
                    until_acknowledged(lambda: ingest(ledger, k, j), failed)
                    acknowledged.append(j)
                    if i in (len(values) // 4, len(values) // 2):
                        progress.set()
                    if i == len(values) // 4:
                        resume.wait(300)

            t = threading.Thread(target=run)
            t.start()
            progress.wait(300)
            progress.clear()
            url.stop()
            resume.set()
            deadline = time.monotonic() + 300
            while not failed and time.monotonic() < deadline:
                time.sleep(0.05)
            url.start()
            print(f"stopped the server after {len(acknowledged)} acknowledgements; started it after "
                  f"{len(failed)} failed attempts", flush=True)
            check(len(failed) > 0, "ingests met the server down (and were given again)")
            progress.wait(300)
            url.restart()
            print(f"restarted the server after {len(acknowledged)} acknowledgements", flush=True)
            t.join(600)
            check(not t.is_alive() and len(acknowledged) == len(values),
                  f"every value acknowledged ({len(acknowledged)}/{len(values)}; {len(failed)} failed attempts "
                  f"given again: {failed[:2]})")
            rows = psql(url, "SELECT payload_sha256, count(*) FROM restarts.events GROUP BY payload_sha256")
            counts = {sha: int(n) for sha, n in rows}
            check(all(n == 1 for n in counts.values()) and set(counts) == {sha_of(j) for j in distinct},
                  f"every acknowledged value stored exactly once ({len(counts)} rows, {len(distinct)} distinct values)")
            check(ledger.summary().to_dict() == want, "the long-lived ledger's state equals the single-process one")
            ledger.close()

            # 3. a fleet mid-restart: two writers (two ledgers, two connections, as two processes have) with four
            # callers each, so that commits carry batches (one multi-row statement each), overlapping 70 % slices,
            # the server restarted once mid-ingest; a failed ingest is given again, as Apple retries.
            writers = [open_ledger(url + "?schema=fleet_restarts", pki) for _ in range(2)]
            cut = len(values) * 3 // 10
            queues = [list(values[:len(values) - cut]), list(values[cut:])]
            lock = threading.Lock()
            acked, attempts, errors = [], [], []
            halfway, resume = threading.Event(), threading.Event()

            def caller(w, queue):
                while True:
                    with lock:
                        if not queue:
                            return
                        k, j = queue.pop(0)
                    try:
                        until_acknowledged(lambda: ingest(w, k, j), attempts)
                    except LedgerError as e:
                        errors.append(e.message)
                        return
                    with lock:
                        acked.append(j)
                        if len(acked) >= len(values) // 3:
                            halfway.set()
                    if halfway.is_set():
                        resume.wait(300)  # until the server is down: the callers' next ingests meet it down

            threads = [threading.Thread(target=caller, args=(w, q)) for w, q in zip(writers, queues) for _ in range(4)]
            for t in threads:
                t.start()
            halfway.wait(300)
            url.stop()
            acked_while_down = len(acked)
            resume.set()
            deadline = time.monotonic() + 300
            while not attempts and time.monotonic() < deadline:
                time.sleep(0.05)
            url.start()
            print(f"stopped the server after {len(acked)} acknowledgements by two writers x 4 callers; started it "
                  f"after {len(attempts)} failed attempts", flush=True)
            check(len(attempts) > 0 and acked_while_down < 2 * (len(values) - cut), "fleet: ingests met the server down")
            for t in threads:
                t.join(600)
            check(not errors and not any(t.is_alive() for t in threads)
                  and len(acked) == 2 * (len(values) - cut),
                  f"fleet: every value acknowledged ({len(acked)}; {len(attempts)} failed attempts given again; "
                  f"errors: {errors[:2]})")
            rows = psql(url, "SELECT payload_sha256, count(*) FROM fleet_restarts.events GROUP BY payload_sha256")
            counts = {sha: int(n) for sha, n in rows}
            check(all(n == 1 for n in counts.values()) and set(counts) == {sha_of(j) for j in distinct},
                  f"fleet: every acknowledged value stored exactly once ({len(counts)} rows, {len(distinct)} distinct)")
            check(all(w.summary().to_dict() == want for w in writers),
                  "fleet: both writers answer the single-process state after the restart")
            for w in writers:
                w.close()

            # 4. a reader's cache does not outlive its connection. A commit is visible to the other processes a
            # flush before it is acknowledged (docs/ledger.md, "Fleet"), so a server lost in that moment can take
            # with it an event a reader has already seen. Simulated: a purchase a long-lived reader has answered
            # from is deleted from the tables (as such a crash loses it), then the server is restarted; the reader
            # must answer as a ledger opened afterwards does, not from what it cached.
            def body(jws):
                import base64
                seg = jws.split(".")[1]
                return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
            kind, jws = next((k, j) for k, j in values if k == "TRANSACTION" and body(j).get("appAccountToken"))
            customer, at = body(jws)["appAccountToken"].lower(), body(jws)["purchaseDate"] + 1
            writer, reader = open_ledger(url + "?schema=lost", pki), open_ledger(url + "?schema=lost", pki)
            ingest(writer, kind, jws)
            seen = reader.customer(customer, at=at).to_dict()
            psql(url, "DELETE FROM lost.transactions; DELETE FROM lost.event_keys; DELETE FROM lost.ledger_versions; "
                      "DELETE FROM lost.events")
            url.restart()
            fresh = open_ledger(url + "?schema=lost", pki)
            now = fresh.customer(customer, at=at).to_dict()
            check(now != seen, "lost: the purchase taken away changes the customer's answer")
            check(reader.customer(customer, at=at).to_dict() == now,
                  "lost: after the restart the long-lived reader answers from the database, not from its cache")
            for led in (writer, reader, fresh):
                led.close()

            # 5. a flush that fails. A batch's COMMIT is asynchronous and its flush (a synchronous commit on a
            # connection of its own) is awaited outside the commit slot: the next batch commits meanwhile, from the
            # state the first one left (docs/ledger.md, "Fleet"). With synchronous_standby_names naming a standby that
            # never connects, every synchronous commit waits (the ledger's asynchronous ones do not), so no flush
            # returns until the server is restarted, which ends it with the connection: each batch waiting for one
            # must fail, the later one built on the first too.
            def subscription_of(jws):
                b = body(jws)
                info = b.get("data", {}).get("signedTransactionInfo")
                return body(info).get("originalTransactionId") if info else None
            by_sub = {}
            for k, j in values:
                if k == "NOTIFICATION" and subscription_of(j):
                    by_sub.setdefault(subscription_of(j), []).append(j)
            sub, (a_jws, b_jws) = next((o, js[:2]) for o, js in sorted(by_sub.items()) if len(js) >= 2)
            led = open_ledger(url + "?schema=flush_fails", pki)
            warm = next(j for k, j in values if k == "NOTIFICATION" and subscription_of(j) != sub)
            ingest(led, "NOTIFICATION", warm)  # opened, with its flush connection
            plain = [shutil.which("psql") or "psql", url, "-At", "-v", "ON_ERROR_STOP=1"]
            subprocess.run(plain + ["-c", "ALTER SYSTEM SET synchronous_standby_names = 'appstoreserver_absent_standby'",
                                    "-c", "SELECT pg_reload_conf()"], capture_output=True, text=True, check=True)
            # The setting reaches the server's processes asynchronously: wait until a synchronous commit waits (a
            # probe that does not return within its 3 s: it stays waiting until the restart below).
            waiting = False
            for _ in range(100):
                try:
                    subprocess.run(plain + ["-c", "SELECT pg_logical_emit_message(true, 'probe', '')"],
                                   capture_output=True, text=True, timeout=3, check=True)
                    time.sleep(0.1)
                except subprocess.TimeoutExpired:
                    waiting = True
                    break
            check(waiting, "flush fails: synchronous commits wait for the absent standby")
            outcomes = {}

            def give(name, jws):
                try:
                    outcomes[name] = ingest(led, "NOTIFICATION", jws)
                except LedgerError as e:
                    outcomes[name] = e

            def stored(jws):
                return psql(url, f"SELECT count(*) FROM flush_fails.events WHERE payload_sha256 = '{sha_of(jws)}'") == [["1"]]

            def poll(condition):
                for _ in range(600):  # 60 s: a commit takes milliseconds; a bound only against hanging forever
                    if condition():
                        return True
                    time.sleep(0.1)
                return False
            callers = []
            for name, jws in (("A", a_jws), ("B", b_jws)):
                callers.append(threading.Thread(target=give, args=(name, jws)))
                callers[-1].start()
                check(poll(lambda: stored(jws)), f"flush fails: {name}'s commit is visible while its flush waits")
            check(not outcomes, f"flush fails: nothing acknowledged before the flush ({outcomes})")
            subprocess.run(plain + ["-c", "ALTER SYSTEM RESET synchronous_standby_names"], capture_output=True, text=True,
                           check=True)
            url.restart()
            for t in callers:
                t.join(120)
            for name in ("A", "B"):
                o = outcomes.get(name)
                check(isinstance(o, LedgerError) and o.appstore_status.name == "STORAGE_ERROR",
                      f"flush fails: {name} (its flush ended by the restart) is not acknowledged: {o!r}")
            for name, jws in (("A", a_jws), ("B", b_jws)):
                deadline = time.monotonic() + 120  # a restart takes ~1 s; Apple retries for days
                while True:
                    try:
                        ingest(led, "NOTIFICATION", jws)
                        break
                    except LedgerError as e:
                        if e.appstore_status.name != "STORAGE_ERROR" or time.monotonic() > deadline:
                            check(False, f"flush fails: {name} given again: {e.message}")
                            break
                        time.sleep(0.05)
            check(stored(a_jws) and stored(b_jws), "flush fails: A and B, given again, are stored once each")
            fresh = open_ledger(url + "?schema=flush_fails", pki)
            t = 4102444800000  # 2100-01-01: one instant for both (the default, now, is read by each call)
            mine, theirs = led.subscription(sub, t, as_of=t).to_dict(), fresh.subscription(sub, t, as_of=t).to_dict()
            check(mine == theirs and led.summary().to_dict() == fresh.summary().to_dict(),
                  "flush fails: the ledger answers as one opened afterwards"
                  + ("" if mine == theirs else f" (differs: {sorted(k for k in mine if mine[k] != theirs.get(k))}: "
                     f"{ {k: (mine[k], theirs.get(k)) for k in mine if mine[k] != theirs.get(k)} })"))
            for x in (led, fresh):
                x.close()

            # 6. another process's event under a subscription between two of this process's (docs/ledger.md, "Fleet"):
            # a batch is evaluated before its one-round-trip write from the subscription's cached state, and that
            # write must find the event B stored since (A has not looked since its last commit), write nothing and be
            # done again from the stored state: else A records the third notification's verdict and caches its
            # state without the second, and answers from that.
            # Two renewals in a row: the first alone entitles while its period runs (A's state without it says expired).
            js = next(js[i - 1:i + 2] for o, js in sorted(by_sub.items()) for i in range(1, len(js) - 1)
                      if [body(j).get("notificationType") for j in js[i:i + 2]] == ["DID_RENEW", "DID_RENEW"])
            sub = subscription_of(js[0])
            a, b = (open_ledger(url + "?schema=interleaved", pki) for _ in range(2))
            ingest(a, "NOTIFICATION", js[0])  # A caches the subscription's state
            ingest(b, "NOTIFICATION", js[1])
            third = ingest(a, "NOTIFICATION", js[2]).to_dict()
            fresh = open_ledger(url + "?schema=interleaved", pki)
            again = ingest(fresh, "NOTIFICATION", js[2]).to_dict()
            check(third.get("stored") is True and again.get("stored") is False and {**third, "stored": False} == again,
                  f"interleaved: A's result for the third notification is the stored state's ({third} / {again})")
            # At the end, and while the first renewal's period ran.
            for at in (t, body(js[1])["signedDate"] + 1):
                for name, led in (("A", a), ("B", b)):
                    mine, theirs = led.subscription(sub, at, as_of=t).to_dict(), fresh.subscription(sub, at, as_of=t).to_dict()
                    check(mine == theirs, f"interleaved: {name} answers as a ledger opened afterwards at {at} ({mine} / {theirs})")
            one = open_ledger("sqlite::memory:", pki)  # the same three, in order, by one process
            for j in js[:3]:
                ingest(one, "NOTIFICATION", j)
            check(a.summary().to_dict() == one.summary().to_dict(),
                  f"interleaved: the verdicts A recorded are one process's ({a.summary().to_dict()} / {one.summary().to_dict()})")
            for x in (a, b, fresh, one):
                x.close()

            failover_onto_other_data(url, pki, check)
        finally:
            server.__exit__(None, None, None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"ledger postgresql identity/reconnect: {'FAILED: ' + '; '.join(failures) if failures else 'passed'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
