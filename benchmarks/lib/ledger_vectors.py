#!/usr/bin/env python3
"""ledger_vectors.py OUT [--random N] -- the `ledger` group's vectors, from the tests' own generators.

Tests/support/testpki.py (the project's PKI in Apple's chain shape) and Tests/support/lifecycles.py (signed purchase
lifecycles: the hand-written scenarios, then N seeded random walks) write into OUT/pki and OUT/lifecycles; then:

  OUT/root.der            the root to trust
  OUT/bundle.txt          the bundle id (Sandbox)
  OUT/notifications.txt   every notification's signedPayload, one per line, in delivery order (scenarios first)
  OUT/query.txt           "CUSTOMER AT_MS": the customer with the most entitlements in the scenarios' expectations,
                          and that expectation's instant (the entitlement query case asks about it)
  OUT/customers.txt       "CUSTOMER AT_MS" for every customer expectation of the scenarios (the fleet case asks
                          every process all of them and compares the answers)
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "support")


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)
    if len(args) != 1:
        print("usage: ledger_vectors.py OUT [--random=N]", file=sys.stderr)
        return 2
    out = args[0]
    pki, lc = os.path.join(out, "pki"), os.path.join(out, "lifecycles")
    subprocess.run([sys.executable, os.path.join(SUPPORT, "testpki.py"), pki], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(SUPPORT, "lifecycles.py"), pki, lc,
                    f"--random={opts.get('random', '600')}"], check=True)
    with open(os.path.join(lc, "lifecycles.json"), encoding="utf-8") as f:
        doc = json.load(f)
    shutil.copy(os.path.join(pki, "root.der"), os.path.join(out, "root.der"))
    with open(os.path.join(out, "bundle.txt"), "w") as f:
        f.write(doc["bundleId"] + "\n")
    notes = [n["signed"] for s in doc["scenarios"] + doc["random"] for n in s["notifications"]]
    with open(os.path.join(out, "notifications.txt"), "w") as f:
        f.write("".join(n + "\n" for n in notes))
    best = max((e for s in doc["scenarios"] for e in s["expect"] if "customer" in e),
               key=lambda e: len(e.get("entitlements") or []))
    with open(os.path.join(out, "query.txt"), "w") as f:
        f.write(f"{best['customer']} {best['at']}\n")
    seen = set()
    with open(os.path.join(out, "customers.txt"), "w") as f:
        for s in doc["scenarios"]:
            for e in s["expect"]:
                if "customer" in e and (e["customer"], e["at"]) not in seen:
                    seen.add((e["customer"], e["at"]))
                    f.write(f"{e['customer']} {e['at']}\n")
    print(f"ledger vectors: {len(notes)} notifications ({len(doc['scenarios'])} scenarios, {len(doc['random'])} "
          f"random lifecycles), query customer {best['customer']} at {best['at']} "
          f"({len(best.get('entitlements') or [])} entitlements expected)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
