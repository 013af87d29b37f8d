#!/usr/bin/env python3
"""ledger_report.py RESULTS -- benchmarks/run ledger's report from ledger_bench's lines:
    RESULT ledger <case> <per second> <ratio to verify_deep>      INFO ledger <case> <what it measures>
One line per case, each ending ratio_to_verify=X (the case's rate over the verify-only rate of the same notifications
in the same run), with its target where the issue sets one. Exits 1 when verify_deep is missing;
with BENCH_STRICT=1 (benchmarks/smoke), when any case of ORDER is.
"""
from __future__ import annotations

import os
import sys

# case -> (target per second, target ratio to verify); None: informational
TARGETS = {
    "ingest_sqlite": (2_000, 0.4),
    "ingest_sqlite_callers": (2_000, 0.4),
    "customer_query": (50_000, None),
    "ingest_postgresql_2x8": (None, 0.3),
}
ORDER = ["verify_deep", "ingest_sqlite", "ingest_sqlite_callers", "ingest_memory", "fsync_floor", "customer_query",
         "ingest_postgresql_2proc", "ingest_postgresql_2x8", "fleet_postgresql"]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: ledger_report.py RESULTS", file=sys.stderr)
        return 2
    rate: dict[str, float] = {}
    ratio: dict[str, float] = {}
    what: dict[str, str] = {}
    fleet: list[str] = []
    for line in open(sys.argv[1], encoding="utf-8"):
        parts = line.split()
        if len(parts) >= 5 and parts[:2] == ["RESULT", "ledger"]:
            c = parts[2]
            if float(parts[3]) >= rate.get(c, -1):
                rate[c], ratio[c] = float(parts[3]), float(parts[4])
        elif len(parts) >= 3 and parts[:2] == ["FLEET", "ledger"]:
            fleet.append("fleet " + " ".join(parts[2:]))
        elif len(parts) >= 3 and parts[:2] == ["INFO", "ledger"]:
            what[parts[2]] = " ".join(parts[3:])
    if "verify_deep" not in rate:
        print("ledger_report: no verify_deep line", file=sys.stderr)
        return 1
    missing = [c for c in ORDER if c not in rate]
    if missing and os.environ.get("BENCH_STRICT") == "1":
        print(f"ledger_report: no line for {', '.join(missing)} (BENCH_STRICT=1)", file=sys.stderr)
        return 1
    for c in ORDER + sorted(set(rate) - set(ORDER)):
        if c not in rate:
            continue
        target = ""
        if c in TARGETS:
            per_s, min_ratio = TARGETS[c]
            ok = (per_s is None or rate[c] >= per_s) and (min_ratio is None or ratio[c] >= min_ratio)
            want = " and ".join(([f">= {per_s:,}/s"] if per_s is not None else [])
                                + ([f"ratio >= {min_ratio}"] if min_ratio is not None else []))
            target = f"target {want}: {'met' if ok else 'MISSED'}"
        print(f"{c:<24} {rate[c]:>10,.0f}/s  {what.get(c, ''):<86} {target:<34} ratio_to_verify={ratio[c]:.2f}")
    # The fleet's own line (benchmarks/c/ledger_bench.c, fleet_postgresql), as each run printed it.
    for line in fleet:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
