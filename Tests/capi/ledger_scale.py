#!/usr/bin/env python3
"""ledger_scale.py LIBRARY TESTPKI_DIR WORK_DIR [--small=N] [--large=N] -- the ledger's memory does not grow with its
history (docs/ledger.md, "Queries"; the CI smoke of issue 30's "memory bounded, open instant").

Signs lifecycles (Tests/support/lifecycles.py) until there are LARGE (default 50,000) signed values, ingests the first
SMALL (default 5,000) into a SQLite file, measures, ingests the rest into the same file, and measures again. Each
measurement is a fresh process (the Python binding on LIBRARY) that opens the ledger with `?cache_mib=8` and asks
about every subscription of the first SMALL values and as many customers, at two instants:

    scale events=N open_malloc=BYTES query_malloc=BYTES

open_malloc is malloc's in-use bytes after open minus before it (appstore_debug_malloc_in_use, the library's own
counter; never the resident size), query_malloc the same after the queries. The state of the whole history would
cost about 2.3 KB per event (issue 30: 2,298 MiB at 1,000,000): (LARGE - SMALL) x 2.3 KB = 100+ MiB here. The test
passes when the large ledger's open_malloc is within 1 MiB of the small one's (open reads no event) and its
query_malloc within the cache budget + 16 MiB of the small one's: linear growth is four times that margin, so load
cannot make it flake and a whole-history state cannot pass. The answers of both ledgers about the same ids at an
instant before every value of the second part are compared too (the same facts, the same answers).
"""
from __future__ import annotations

import base64
import ctypes
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

CACHE_MIB = 8


from ledger_values import open_ledger, payload, values_of  # noqa: E402


def ingest_all(url, pki, values, threads=8):
    """Ingests `values` with `threads` callers (they share commits: group commit)."""
    ledger = open_ledger(url, pki)
    errors = []

    def run(part):
        try:
            for kind, jws in part:
                if kind == "TRANSACTION":
                    ledger.ingest_transaction(jws)
                elif kind == "RENEWAL_INFO":
                    ledger.ingest_renewal_info(jws)
                else:
                    ledger.ingest_notification(jws)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(values[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ledger.close()
    if errors:
        raise errors[0]


def ids_of(values):
    subs, customers = [], []
    for kind, jws in values:
        p = payload(jws)
        if kind == "NOTIFICATION":
            continue
        o = p.get("originalTransactionId")
        if kind == "RENEWAL_INFO" or p.get("type") == "Auto-Renewable Subscription":
            subs.append(o)
        customers.append((p.get("appAccountToken") or o).lower() if p.get("appAccountToken") else o)
    return sorted(set(subs)), sorted(set(customers))


def measure(url, pki, subs, customers, instants):
    """In this (fresh) process: malloc after open and after the queries, and the answers."""
    lib = ctypes.CDLL(os.environ["APPSTORESERVER_LIB"])
    lib.appstore_debug_malloc_in_use.restype = ctypes.c_int64
    from appstoreserver.ledger import Ledger  # noqa: F401 - loaded before the first sample
    open_ledger("sqlite::memory:", pki).close()  # the library's one-time allocations, before the first sample
    before = lib.appstore_debug_malloc_in_use()
    ledger = open_ledger(url + f"?cache_mib={CACHE_MIB}", pki)
    opened = lib.appstore_debug_malloc_in_use()
    answers = []
    for at in instants:
        for s in subs:
            r = ledger.subscription(s, at=at)
            answers.append(None if r is None else (r.status, r.entitled, r.transactionId))
        for c in customers:
            r = ledger.customer(c, at=at)
            answers.append(sorted((e.productId, e.transactionId) for e in r.entitlements))
    queried = lib.appstore_debug_malloc_in_use()
    return {"open": opened - before, "query": queried - before, "answers": answers}


def main(argv):
    if len(argv) >= 2 and argv[1] == "--measure":
        url, pki, spec = argv[2:5]
        with open(spec, encoding="utf-8") as f:
            s = json.load(f)
        print("MEASURED " + json.dumps(measure(url, pki, s["subs"], s["customers"], s["instants"])))
        return 0
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    lib, pki, work = args
    small, large = int(opts.get("small", 5000)), int(opts.get("large", 50000))
    os.environ["APPSTORESERVER_LIB"] = os.path.abspath(lib)
    os.makedirs(work, exist_ok=True)
    lc = os.path.join(work, "lifecycles")
    # About 16 values per random lifecycle (notifications and history).
    subprocess.run([sys.executable, os.path.join(REPO, "Tests", "support", "lifecycles.py"), pki, lc,
                    f"--random={large // 14 + 50}", "--seed=30"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(lc, "lifecycles.json"), encoding="utf-8") as f:
        values = values_of(json.load(f))
    if len(values) < large:
        print(f"ledger_scale: FAIL only {len(values)} values signed, {large} wanted")
        return 1
    values = values[:large]
    db = os.path.join(work, "scale.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    url = "sqlite:" + db
    subs, customers = ids_of(values[:small])
    customers = customers[:len(subs)]
    first_of_large = min(payload(j).get("signedDate", 0) for _, j in values[small:])
    instants = [first_of_large - 1]
    spec = os.path.join(work, "ids.json")
    with open(spec, "w", encoding="utf-8") as f:
        json.dump({"subs": subs, "customers": customers, "instants": instants}, f)

    results = {}
    for n, part in ((small, values[:small]), (large, values[small:])):
        ingest_all(url, pki, part)
        r = subprocess.run([sys.executable, __file__, "--measure", url, pki, spec], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"ledger_scale: FAIL the measuring process failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
            return 1
        out = r.stdout
        m = json.loads(next(line for line in out.splitlines() if line.startswith("MEASURED "))[len("MEASURED "):])
        results[n] = m
        print(f"scale events={n} open_malloc={m['open']} query_malloc={m['query']} "
              f"(subscriptions={len(subs)} customers={len(customers)})")
    a, b = results[small], results[large]
    failures = []
    if b["open"] - a["open"] > 1 << 20:
        failures.append(f"open allocates {b['open'] - a['open']} bytes more at {large} events than at {small}")
    margin = (CACHE_MIB + 16) << 20
    if b["query"] - a["query"] > margin:
        failures.append(f"queries hold {b['query'] - a['query']} bytes more at {large} events than at {small} "
                        f"(margin {margin}: the cache budget + 16 MiB)")
    if a["answers"] != b["answers"]:
        failures.append("the same ids at an instant before the later values answer differently")
    for f in failures:
        print(f"ledger_scale: FAIL {f}")
    if not failures:
        print(f"ledger_scale: OK memory flat from {small} to {large} events "
              f"(open {a['open']} -> {b['open']} bytes, queries {a['query']} -> {b['query']} bytes)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
