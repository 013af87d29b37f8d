#!/usr/bin/env python3
"""ledger_scale.py WORK [--events=N] [--queries=N] [--postgresql=URL] -- benchmarks/run ledger's scale lines.

Signs lifecycles over the test PKI (Tests/support/testpki.py, lifecycles.py) until there are N signed values (default
BENCH_LEDGER_SCALE or 100,000; notifications and history), ingests them into WORK/scale-N.db (16 callers, durable;
kept between runs: a file that already holds N events is reused), then, each in a fresh process through the Python
binding (APPSTORESERVER_LIB):

  empty   open an empty ledger: the resident size to compare with
  scale   open the N-event ledger and answer one customer (open_s: both, the issue's "open and answer"), then
          --queries (default 2,000) random subscription and customer queries at random instants (query_p99_ms),
          the resident size's peak minus the empty one's (rss_mib_over_empty), and the file (file_mib, with its WAL)

    scale sqlite events=N open_s=X rss_mib_over_empty=X query_p99_ms=X file_mib=X ingest_per_s=X

Targets (issue 30, at 1,000,000 events): open_s <= 1, rss_mib_over_empty <= 200, query_p99_ms <= 2 (PostgreSQL 5),
file_mib <= 3,000. A benchmark, not a test: it prints, it does not judge.
"""
from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))


from ledger_values import open_ledger, payload, values_of  # noqa: E402


def rss_kib(field="VmRSS"):
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def measure(url, pki, ids_path, queries):
    """A fresh process: open + one answer, then `queries` random ones; times and the resident size."""
    with open(ids_path, encoding="utf-8") as f:
        ids = json.load(f)
    import appstoreserver.ledger  # noqa: F401 - the library loaded before the clock starts
    t0 = time.perf_counter()
    ledger = open_ledger(url, pki)
    if ids["customers"]:
        ledger.customer(ids["customers"][0], at=ids["instants"][-1])
    open_s = time.perf_counter() - t0
    rng = random.Random(30)
    times = []
    for _ in range(queries):
        at = rng.choice(ids["instants"])
        if rng.random() < 0.5 and ids["subs"]:
            s = rng.choice(ids["subs"])
            t = time.perf_counter()
            ledger.subscription(s, at=at)
        else:
            c = rng.choice(ids["customers"])
            t = time.perf_counter()
            ledger.customer(c, at=at)
        times.append(time.perf_counter() - t)
    times.sort()
    p99 = times[int(len(times) * 0.99) - 1] * 1000 if times else 0.0
    return {"open_s": open_s, "p99_ms": p99, "rss_kib": rss_kib("VmHWM")}


def main(argv):
    if len(argv) >= 2 and argv[1] == "--measure":
        url, pki, ids_path, queries = argv[2:6]
        print("MEASURED " + json.dumps(measure(url, pki, ids_path, int(queries))))
        return 0
    if len(argv) >= 2 and argv[1] == "--empty":
        url, pki = argv[2:4]
        import appstoreserver.ledger  # noqa: F401
        ledger = open_ledger(url, pki)
        ledger.summary()
        print("MEASURED " + json.dumps({"rss_kib": rss_kib("VmHWM")}))
        return 0
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    work = os.path.abspath(args[0])
    n = int(opts.get("events", os.environ.get("BENCH_LEDGER_SCALE", "100000")))
    queries = int(opts.get("queries", 2000))
    os.makedirs(work, exist_ok=True)
    pki, lc = os.path.join(work, "pki"), os.path.join(work, f"lifecycles-{n}")
    if not os.path.exists(os.path.join(pki, "root.der")):
        subprocess.run([sys.executable, os.path.join(REPO, "Tests", "support", "testpki.py"), pki], check=True,
                       stdout=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(lc, "lifecycles.json")):
        subprocess.run([sys.executable, os.path.join(REPO, "Tests", "support", "lifecycles.py"), pki, lc,
                        f"--random={n // 14 + 50}", "--seed=30"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(lc, "lifecycles.json"), encoding="utf-8") as f:
        values = values_of(json.load(f))[:n]
    subs, customers, instants = set(), set(), []
    for kind, jws in values:
        p = payload(jws)
        instants.append(p.get("signedDate", 0))
        if kind == "NOTIFICATION":
            continue
        o = p.get("originalTransactionId")
        if kind == "RENEWAL_INFO" or p.get("type") == "Auto-Renewable Subscription":
            subs.add(o)
        customers.add(p["appAccountToken"].lower() if p.get("appAccountToken") else o)
    instants.sort()
    ids_path = os.path.join(work, f"ids-{n}.json")
    with open(ids_path, "w", encoding="utf-8") as f:
        json.dump({"subs": sorted(subs), "customers": sorted(customers),
                   "instants": instants[:: max(1, len(instants) // 200)] + [instants[-1] + 86_400_000]}, f)

    db = os.path.join(work, f"scale-{n}.db")
    url = "sqlite:" + db
    ingest_rate = 0.0
    ledger = open_ledger(url, pki)
    have = ledger.summary().events
    if have < len(values):
        todo = values  # stored ones again are `stored: false` (a resumed fill)
        errors = []

        def run(part):
            try:
                for kind, jws in part:
                    {"TRANSACTION": ledger.ingest_transaction, "RENEWAL_INFO": ledger.ingest_renewal_info}.get(
                        kind, ledger.ingest_notification)(jws)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=run, args=(todo[i::16],)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        ingest_rate = len(todo) / (time.perf_counter() - t0)
    events = ledger.summary().events
    ledger.close()

    def child(*a):
        out = subprocess.run([sys.executable, __file__, *a], check=True, capture_output=True, text=True).stdout
        return json.loads(next(x for x in out.splitlines() if x.startswith("MEASURED "))[len("MEASURED "):])

    empty_db = os.path.join(work, "empty.db")
    empty = child("--empty", "sqlite:" + empty_db, pki)
    m = child("--measure", url, pki, ids_path, str(queries))
    size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    print(f"scale sqlite events={events} open_s={m['open_s']:.3f} "
          f"rss_mib_over_empty={(m['rss_kib'] - empty['rss_kib']) / 1024:.1f} query_p99_ms={m['p99_ms']:.3f} "
          f"file_mib={size / 1048576:.0f} ingest_per_s={ingest_rate:.0f}"
          + ("" if ingest_rate else " (file reused)"))
    sys.stdout.flush()
    pg = opts.get("postgresql")
    if pg:
        ledger = open_ledger(pg, pki)
        have = ledger.summary().events
        if have < len(values):
            for kind, jws in values[have:]:
                {"TRANSACTION": ledger.ingest_transaction, "RENEWAL_INFO": ledger.ingest_renewal_info}.get(
                    kind, ledger.ingest_notification)(jws)
        events = ledger.summary().events
        ledger.close()
        m = child("--measure", pg, pki, ids_path, str(queries))
        print(f"scale postgresql events={events} open_s={m['open_s']:.3f} "
              f"rss_mib_over_empty={(m['rss_kib'] - empty['rss_kib']) / 1024:.1f} query_p99_ms={m['p99_ms']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
