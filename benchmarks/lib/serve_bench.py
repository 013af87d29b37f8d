#!/usr/bin/env python3
"""serve_bench.py -- the measurements of `benchmarks/run serve` (see benchmarks/README.md, "Group `serve`").

    serve_bench.py --tool APPSTORESERVER --vectors DIR --ledger-bench LEDGER_BENCH --work DIR
                   [--cpu 0] [--wrk-cpu 1] [--seconds 8] [--verify-seconds 1.5] [--runs 3]
                   [--connections 8] [--threads 1] [--postgresql URL] [--only case,...]

DIR is ledger_vectors.py's folder (root.der, bundle.txt, notifications.txt, query.txt). In each of --runs rounds:

  verify_deep       benchmarks/c/ledger_bench --only verify_deep on --cpu, on the first 2,000 notifications: the
                    verify-only rate of the same kind of notifications, the reference of ratio_to_verify;
  serve_sqlite      `appstoreserver serve` pinned to --cpu (taskset) on a fresh SQLite file in --work, and wrk
                    (pinned to --wrk-cpu) posting distinct notification bodies with --connections connections for
                    --seconds (benchmarks/lib/serve.lua): sustained rate and latency percentiles;
  serve_postgresql  the same on a fresh database of the PostgreSQL server at --postgresql (its processes unpinned).

Every answer must be 200 with "stored":true (no duplicate: the bodies must last the run), and after each run the
ledger must hold at least as many events as wrk counted stored answers (`appstoreserver ledger show`). Prints
RESULT serve <case> <rate> <p50_ms> <p99_ms> <max_ms> (best run by rate, each with its own latencies) and
INFO serve <case> <text>; benchmarks/lib/serve_report.py makes the report. Exits 1 when anything fails.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlsplit


def fail(msg: str) -> None:
    print(f"serve_bench: {msg}", file=sys.stderr)
    sys.exit(1)


def pin(cpu: Optional[int]) -> List[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None else []


def verify_deep(args, subset: str) -> float:
    work = os.path.join(args.work, "verify")
    os.makedirs(work, exist_ok=True)
    r = subprocess.run(pin(args.cpu) + [args.ledger_bench, subset, work, "--seconds", str(args.verify_seconds),
                                        "--runs", "1", "--only", "verify_deep"], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"ledger_bench verify_deep failed: {r.stderr.strip()[-500:]}")
    for line in r.stdout.splitlines():
        f = line.split()
        if f[:3] == ["RESULT", "ledger", "verify_deep"]:
            return float(f[3])
    fail(f"ledger_bench printed no verify_deep line: {r.stdout[-300:]}")
    return 0.0


def start_serve(args, ledger: str, log: str) -> Tuple[subprocess.Popen, int]:
    out = open(log, "wb")
    p = subprocess.Popen(pin(args.cpu) + [args.tool, "serve", "--listen", "127.0.0.1:0", "--bundle-id", args.bundle,
                                          "--root", os.path.join(args.vectors, "root.der"), "--ledger", f"sandbox={ledger}",
                                          "--max-connections", str(max(256, args.connections * 2))],
                         stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(log, "rb") as f:
            first = f.readline()
        if first.endswith(b"\n"):
            try:
                started = json.loads(first)
            except ValueError:
                p.kill()
                fail(f"serve: {first.decode(errors='replace').strip()}")
            if started.get("event") != "listening":
                p.kill()
                fail(f"serve did not start: {first.decode(errors='replace').strip()}")
            return p, started["port"]
        if p.poll() is not None:
            fail(f"serve exited {p.returncode}: {open(log, errors='replace').read()[-500:]}")
        time.sleep(0.05)
    p.kill()
    fail("serve did not start within 60 s")
    raise AssertionError


def stop_serve(p: subprocess.Popen) -> None:
    p.terminate()
    try:
        code = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("serve did not stop within 60 s of SIGTERM")
    if code != 0:
        fail(f"serve exited {code} after SIGTERM")


def run_wrk(args, port: int) -> Dict[str, float]:
    cmd = pin(args.wrk_cpu) + ["wrk", "-t", str(args.threads), "-c", str(args.connections), "-d", f"{args.seconds}s",
                               "--timeout", "10s", "-s", args.lua, f"http://127.0.0.1:{port}", "--", args.bodies,
                               str(args.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    line = next((l for l in r.stdout.splitlines() if l.startswith("SERVE_WRK ")), None)
    if r.returncode != 0 or line is None:
        fail(f"wrk failed ({r.returncode}): {r.stderr.strip()[-500:]} {r.stdout[-500:]}")
    got = {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
    if got["errors"] or got["socket_errors"]:
        fail(f"{int(got['errors'])} answers other than 200, {int(got['socket_errors'])} socket errors: {r.stderr.strip()[-600:]}")
    if got["duplicates"] or got["wrapped"]:
        fail(f"the bodies ran out ({int(got['duplicates'])} duplicates): generate more lifecycles (BENCH_SERVE_LIFECYCLES) "
             f"or measure for fewer seconds (BENCH_SERVE_SECONDS)")
    if got["stored"] != got["requests"]:
        fail(f"wrk counted {got['requests']:.0f} requests but {got['stored']:.0f} stored answers")
    return got


def events_in(args, ledger: str) -> int:
    r = subprocess.run([args.tool, "ledger", "show", "--db", ledger], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"ledger show {ledger}: {r.stderr.strip()[-300:]}")
    return int(json.loads(r.stdout)["events"])


def psql(url: str, sql: str) -> None:
    exe = shutil.which("psql") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"), reverse=True)), None)
    if not exe:
        fail("psql not found (Debian postgresql-client)")
    r = subprocess.run([exe, url, "-q", "-c", sql], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"psql {sql!r}: {r.stderr.strip()}")


def serve_case(args, case: str, round_: int) -> Dict[str, float]:
    if case == "serve_sqlite":
        db = os.path.join(args.work, "serve.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        ledger = f"sqlite:{db}"
    else:
        name = f"serve_bench_{os.getpid()}_{round_}"
        psql(args.postgresql, f"CREATE DATABASE {name}")
        ledger = urlsplit(args.postgresql)._replace(path=f"/{name}").geturl()  # a fresh database per run
    p, port = start_serve(args, ledger, os.path.join(args.work, f"{case}.log"))
    try:
        got = run_wrk(args, port)
    finally:
        if p.poll() is None:
            stop_serve(p)
    stored = events_in(args, ledger)
    if stored < got["stored"]:
        fail(f"{case}: {got['stored']:.0f} answers said stored, the ledger holds {stored} events")
    if case == "serve_postgresql":
        psql(args.postgresql, f"DROP DATABASE {name}")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tool", required=True)
    ap.add_argument("--vectors", required=True)
    ap.add_argument("--ledger-bench", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cpu", type=int)
    ap.add_argument("--wrk-cpu", type=int)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--verify-seconds", type=float, default=1.5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--postgresql")
    ap.add_argument("--only")
    args = ap.parse_args()
    args.lua = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve.lua")
    args.bundle = open(os.path.join(args.vectors, "bundle.txt")).read().strip()
    os.makedirs(args.work, exist_ok=True)

    # wrk's bodies: each notification as Apple posts it. The verify-only reference: the first 2,000 of them (its
    # first pass verifies every vector once, untimed).
    args.bodies = os.path.join(args.work, "bodies.txt")
    subset = os.path.join(args.work, "verify-vectors")
    os.makedirs(subset, exist_ok=True)
    for name in ("root.der", "bundle.txt", "query.txt", "customers.txt"):
        shutil.copy(os.path.join(args.vectors, name), subset)
    count = 0
    with open(os.path.join(args.vectors, "notifications.txt")) as src, open(args.bodies, "w") as bodies, \
            open(os.path.join(subset, "notifications.txt"), "w") as first:
        for line in src:
            jws = line.strip()
            if not jws:
                continue
            bodies.write(json.dumps({"signedPayload": jws}, separators=(",", ":")) + "\n")
            if count < 2000:
                first.write(jws + "\n")
            count += 1

    cases = ["verify_deep", "serve_sqlite"] + (["serve_postgresql"] if args.postgresql else [])
    if args.only:
        cases = [c for c in cases if c in args.only.split(",") or c == "verify_deep"]
    best: Dict[str, Dict[str, float]] = {}
    loads = []
    for r in range(args.runs):
        for k in range(len(cases)):
            case = cases[(k + r) % len(cases)]  # the order rotates, so load from elsewhere hits each case alike
            loads.append(os.getloadavg()[0])
            got = {"rate": verify_deep(args, subset)} if case == "verify_deep" else serve_case(args, case, r)
            if got["rate"] > best.get(case, {"rate": -1})["rate"]:
                best[case] = got
    wrk_pin = f"pinned to CPU {args.wrk_cpu}" if args.wrk_cpu is not None else "unpinned"
    info = {
        "verify_deep": "the same notifications verified deeply through the C ABI (ledger_bench), nothing stored",
        "serve_sqlite": f"wrk ({args.connections} connections, {wrk_pin}) -> serve, durable SQLite file",
        "serve_postgresql": f"wrk ({args.connections} connections) -> serve, PostgreSQL on loopback (synchronous_commit)",
    }
    for case in cases:
        b = best[case]
        print(f"RESULT serve {case} {b['rate']:.1f} {b.get('p50_ms', 0):.2f} {b.get('p99_ms', 0):.2f} {b.get('max_ms', 0):.2f}")
        print(f"INFO serve {case} {info[case]}")
    print(f"INFO serve load one-minute load average {min(loads):.1f}-{max(loads):.1f} during the runs "
          f"({os.cpu_count()} CPUs); {count} distinct notifications available to wrk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
