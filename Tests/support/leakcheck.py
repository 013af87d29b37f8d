#!/usr/bin/env python3
"""One leak-check rule for every language (scripts/leak-check, and the short forms in each test suite).

    leakcheck.py --lang LANG [--calls N] [--self-test] -- WORKLOAD [ARGS...]

The workload is run as `WORKLOAD ARGS... CALLS MODE`, MODE being `none`, or for the self-test `handles` (a library
handle made per call and never freed) and `malloc` (1 KiB of native memory kept per call, which the library's own
counter cannot see). It makes CALLS library calls and prints, at the start and after every thirtieth of them (after a
forced collection in garbage-collected languages), a line

    leak-sample CALLS LIVE_OBJECTS MALLOC_IN_USE

read from appstore_debug_live_objects() and appstore_debug_malloc_in_use(). Everything else it prints is passed
through; it must exit 0 (its own result checks).

The rule judges the trend, never one excursion and never pages (JIT, code caches, allocator arenas and a collector's
lag move the resident size by tens of MiB without a leak): the first third of the samples is warm-up; the medians of
the last third against those of the middle third give a growth per call. It leaks when the library's live objects grow
by more than LIVE_LIMIT per call (1 object per 100 calls; a forgotten free is 1 per call) or malloc's in-use bytes by
more than MALLOC_LIMIT per call (a forgotten string or error is 100+ bytes per call; the self-test keeps 1,024).

The self-test runs both leaking modes and passes only when each is caught by its own signal: `handles` by the live
objects, `malloc` by malloc's in-use bytes. It prints `LANG leak-check self-test: caught`.
Exit status: 0 flat (or, with --self-test, both caught), 1 leaking (or a leak missed), 2 the workload failed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

LIVE_LIMIT = 0.01  # live objects per call
MALLOC_LIMIT = 64.0  # bytes per call


def run(lang: str, command: list[str], calls: int, mode: str) -> list[tuple[int, int, int]] | None:
    try:
        proc = subprocess.Popen(command + [str(calls), mode], stdout=subprocess.PIPE, text=True)
    except OSError as e:
        print(f"{lang} leak-check: cannot run the workload: {e}")
        return None
    samples = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("leak-sample "):
            try:
                c, live, mal = (int(x) for x in line.split()[1:4])
            except ValueError:
                print(f"{lang} leak-check: unreadable sample line {line.strip()!r}")
                proc.kill()
                return None
            samples.append((c, live, mal))
        else:
            sys.stdout.write(line)
    rc = proc.wait()
    if rc != 0:
        print(f"{lang} leak-check: the workload ({mode}) exited {rc}")
        return None
    if len(samples) < 9:
        print(f"{lang} leak-check: the workload ({mode}) printed {len(samples)} samples; at least 9 are needed")
        return None
    return samples


def judge(samples: list[tuple[int, int, int]]) -> dict:
    """Growth per call of the live objects and of malloc's in-use bytes, last third against middle third."""
    n = len(samples)
    middle, last = samples[n // 3: 2 * n // 3], samples[2 * n // 3:]
    span = statistics.median(s[0] for s in last) - statistics.median(s[0] for s in middle)
    live = (statistics.median(s[1] for s in last) - statistics.median(s[1] for s in middle)) / span
    known = all(s[2] >= 0 for s in samples)
    mal = (statistics.median(s[2] for s in last) - statistics.median(s[2] for s in middle)) / span if known else None
    return {"live": live, "malloc": mal, "calls": samples[-1][0], "live_leak": live > LIVE_LIMIT,
            "malloc_leak": mal is not None and mal > MALLOC_LIMIT}


def describe(lang: str, mode: str, j: dict) -> str:
    mal = "unknown (no mallinfo here)" if j["malloc"] is None else f"{j['malloc']:+.1f} bytes per call"
    return (f"{lang} leak-check ({mode}): {j['calls']:,} calls; live objects {j['live'] * 1000:+.2f} per 1,000 calls "
            f"(limit {LIVE_LIMIT * 1000:g}), malloc in use {mal} (limit {MALLOC_LIMIT:g})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", required=True)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("command", nargs="+")
    a = ap.parse_args()
    if not a.self_test:
        samples = run(a.lang, a.command, a.calls, "none")
        if samples is None:
            return 2
        j = judge(samples)
        if j["malloc"] is None:
            print(f"{a.lang} leak-check: WARNING: malloc's in-use bytes are unknown here; only the live objects count")
        flat = not (j["live_leak"] or j["malloc_leak"])
        print(describe(a.lang, "none", j) + (": flat" if flat else ": LEAKING"))
        return 0 if flat else 1
    caught = True
    for mode, signal in (("handles", "live_leak"), ("malloc", "malloc_leak")):
        samples = run(a.lang, a.command, a.calls, mode)
        if samples is None:
            return 2
        j = judge(samples)
        ok = j[signal]
        print(describe(a.lang, mode, j) + (": caught" if ok else ": MISSED"))
        caught = caught and ok
    print(f"{a.lang} leak-check self-test: {'caught' if caught else 'MISSED'}")
    return 0 if caught else 1


if __name__ == "__main__":
    sys.exit(main())
