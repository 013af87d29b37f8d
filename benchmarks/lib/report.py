#!/usr/bin/env python3
"""report.py GROUP RESULTS_FILE -- turn the RESULT lines of the benchmark programs into benchmarks/run's report.

Input lines (other lines are ignored):  RESULT <impl> <case> <calls per second> <JWS verified per call>
where impl is "floor" for the floor (OpenSSL + jansson for verify, raw OpenSSL signing for sign), "swift" or "c" for
the library; and  INFO floor <case> message_bytes <n>  (sign: the length the floor signs, shown on its line). When a case appears
several times (one line per run), the best run counts. --partial (used with BENCH_ONLY): skip what is missing
instead of failing.

Each group below lists its floor lines and its case lines. A case is compared with one floor case; the ratio is
taken in JWS per second (calls/s x JWS per call) on both sides, so a deep call that verified 2.79 JWS is compared
with the floor doing those same 2.79 JWS. Exits 1 when an expected RESULT line is missing.
"""
from __future__ import annotations

import sys

# group -> floors: [(floor case, input label, floor label, informational?)],
#          cases: [(case, floor case, floor label, target[, impls])], target = (min calls/s or None, min ratio) or
#                 None; impls (optional) = the implementations that have this case (default: all of "impls")
#          widths (optional): column widths (label, floor label, case, case floor label)
SIGN_CASES = ["api_token", "promotional_offer_v1", "promotional_offer_v2", "introductory_offer_eligibility",
              "advanced_commerce_in_app"]
GROUPS = {
    "verify": {
        "floors": [
            ("transaction_cached", "transaction", "floor_cached", False),
            ("transaction_first_sight", "transaction", "floor_first_sight", False),
            ("transaction_first_sight_x509store", "transaction", "floor_first_sight_x509store", True),
            ("notification", "notification", "floor_cached", False),
            ("notification_deep", "notification_deep", "floor_cached", False),
        ],
        "cases": [
            ("transaction_cached", "transaction_cached", "floor_cached", (10_000, 0.80)),
            ("transaction_first_sight", "transaction_first_sight", "floor_first_sight", (None, 0.90)),
            ("notification", "notification", "floor_cached", None),
            ("notification_deep", "notification_deep", "floor_cached", None),
        ],
        "impls": ["swift", "c"],
    },
    "sign": {
        "floors": [(c, c, "floor_p256_sign", False) for c in SIGN_CASES],
        "cases": [("api_token", "api_token", "floor_p256_sign", (40_000, 0.60))]
        + [(c, c, "floor_p256_sign", None) for c in SIGN_CASES[1:]]
        + [("advanced_commerce_in_app_json", "advanced_commerce_in_app", "floor_p256_sign", None, ["swift"])],
        "impls": ["swift", "c"],
        "widths": (30, 15, 30, 15),
    },
    # The Node binding (benchmarks/node/bench.js): floors are Node's own node:crypto, and, for two calls in flight,
    # one call in flight on the same two cores.
    "node": {
        "floors": [
            ("transaction", "transaction", "floor_node_crypto_verify", False),
            ("transaction_one_in_flight", "transaction", "promise_1_in_flight_2_cpus", False),
            ("api_token", "api_token", "floor_node_crypto_sign", False),
        ],
        "cases": [
            ("transaction_promise", "transaction", "floor_node_crypto_verify", (None, 0.70)),
            ("transaction_sync", "transaction", "floor_node_crypto_verify", (None, 0.90)),
            ("transaction_two_in_flight", "transaction_one_in_flight", "promise_1_in_flight_2_cpus", (None, 1.60)),
            ("api_token", "api_token", "floor_node_crypto_sign", (None, 1.00)),
        ],
        "impls": ["node"],
        "widths": (26, 27, 26, 27),
    },
}


def main() -> int:
    args = sys.argv[1:]
    partial = "--partial" in args
    args = [a for a in args if a != "--partial"]
    if len(args) != 2 or args[0] not in GROUPS:
        print(f"usage: report.py [--partial] {{{'|'.join(GROUPS)}}} RESULTS_FILE", file=sys.stderr)
        return 2
    group, spec = args[0], GROUPS[args[0]]
    results: dict[tuple[str, str], tuple[float, float]] = {}
    info: dict[tuple[str, str, str], str] = {}
    with open(args[1]) as fh:
        for line in fh:
            f = line.split()
            if len(f) == 5 and f[0] == "INFO":
                info[(f[1], f[2], f[3])] = f[4]
            if len(f) == 5 and f[0] == "RESULT":
                key, value = (f[1], f[2]), (float(f[3]), float(f[4]))
                if key not in results or value[0] > results[key][0]:
                    results[key] = value  # best run

    missing = []

    def get(impl: str, case: str):
        r = results.get((impl, case))
        if r is None and f"{impl} {case}" not in missing:
            missing.append(f"{impl} {case}")
        return r

    w_label, w_floor, w_case, w_cfloor = spec.get("widths", (18, 28, 24, 30))
    for case, label, floor_label, informational in spec["floors"]:
        r = get("floor", case)
        if r is None:
            continue
        rate, jpc = r
        extra = f"  ({jpc:.2f} JWS/call = {rate * jpc:.0f} JWS/s)" if abs(jpc - 1) > 1e-9 else ""
        if ("floor", case, "message_bytes") in info:
            extra += f"  ({info[('floor', case, 'message_bytes')]}-byte message)"
        if informational:
            extra += "  (informational)"
        print(f"{group} floor {label:<{w_label}} {floor_label:<{w_floor}} {rate:>8.0f}/s{extra}")

    for impl in spec["impls"]:
        for case, floor_case, floor_label, target, *only in spec["cases"]:
            if only and impl not in only[0]:
                continue
            ours, floor = get(impl, case), get("floor", floor_case)
            if ours is None or floor is None:
                continue
            rate, jpc = ours
            frate, fjpc = floor
            ratio = (rate * jpc) / (frate * fjpc)
            flabel = floor_label if abs(fjpc - 1) < 1e-9 else f"{floor_label}({fjpc:.2f} JWS/call)"
            verdict = ""
            if target is not None:
                min_rate, min_ratio = target
                met = ratio >= min_ratio and (min_rate is None or rate >= min_rate)
                verdict = "  target met" if met else "  target MISSED"
            print(f"{group} {impl:<5} {case:<{w_case}} {rate:>8.0f}/s  {flabel:<{w_cfloor}} {frate:>8.0f}/s{verdict}  "
                  f"ratio_to_floor={ratio:.2f}")

    if missing and not partial:
        print(f"report.py: missing results: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
