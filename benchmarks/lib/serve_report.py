#!/usr/bin/env python3
"""serve_report.py RESULTS -- benchmarks/run serve's report from serve_bench.py's lines:
    RESULT serve <case> <per second> <p50 ms> <p99 ms> <max ms>      INFO serve <case> <what it measures>
One line per case, each ending ratio_to_verify=X (the case's rate over verify_deep's: the verify-only rate of the same
notifications in the same run), with the issue's target where it sets one. Exits 1 when verify_deep is missing;
with BENCH_STRICT=1 (benchmarks/smoke), when any case of ORDER is.
"""
from __future__ import annotations

import os
import sys

# case -> (rate per second at least, p99 in ms below, ratio to verify at least); the issue sets them for SQLite only
TARGETS = {"serve_sqlite": (1_500, 20.0, 0.3)}
ORDER = ["verify_deep", "serve_sqlite", "serve_postgresql"]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: serve_report.py RESULTS", file=sys.stderr)
        return 2
    rows: dict[str, tuple[float, float, float, float]] = {}
    what: dict[str, str] = {}
    notes = []
    for line in open(sys.argv[1], encoding="utf-8"):
        parts = line.split()
        if len(parts) == 7 and parts[:2] == ["RESULT", "serve"]:
            rows[parts[2]] = tuple(float(x) for x in parts[3:7])  # type: ignore[assignment]
        elif len(parts) >= 3 and parts[:2] == ["INFO", "serve"]:
            if parts[2] == "load":
                notes.append(" ".join(parts[3:]))
            else:
                what[parts[2]] = " ".join(parts[3:])
    if "verify_deep" not in rows:
        print("serve_report: no verify_deep line", file=sys.stderr)
        return 1
    missing = [c for c in ORDER if c not in rows]
    if missing and os.environ.get("BENCH_STRICT") == "1":
        print(f"serve_report: no line for {', '.join(missing)} (BENCH_STRICT=1)", file=sys.stderr)
        return 1
    verify = rows["verify_deep"][0]
    for note in notes:
        print(f"# {note}")
    for c in ORDER + sorted(set(rows) - set(ORDER)):
        if c not in rows:
            continue
        rate, p50, p99, worst = rows[c]
        ratio = rate / verify if verify > 0 else 0.0
        latency = "" if c == "verify_deep" else f"p50 {p50:5.1f} ms  p99 {p99:5.1f} ms  max {worst:6.1f} ms"
        target = ""
        if c in TARGETS:
            per_s, max_p99, min_ratio = TARGETS[c]
            missed = [name for name, ok in (("rate", rate >= per_s), ("p99", p99 < max_p99), ("ratio", ratio >= min_ratio))
                      if not ok]
            target = (f"target >= {per_s:,}/s, p99 < {max_p99:g} ms, >= {min_ratio}: "
                      + ("met" if not missed else "MISSED (" + ", ".join(missed) + ")"))
        print(f"{c:<17} {rate:>8,.0f}/s  {latency:<42} {what.get(c, ''):<84} {target:<58} ratio_to_verify={ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
