#!/usr/bin/env python3
"""run_valgrind.py PROGRAM [ARGS...]

Runs PROGRAM under
    valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
so memory errors and "definitely lost" leaks fail (indirectly/possibly lost and still-reachable memory, e.g.
the Swift runtime's and OpenSSL's process-lifetime caches, do not). Fails with a clear message when valgrind is
not installed (CI installs it). Prints valgrind's summary lines and "valgrind: N passed, M failed".
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys


def main(argv) -> int:
    if len(argv) < 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    valgrind = shutil.which("valgrind")
    if not valgrind:
        print("FAIL valgrind is not installed: install it (apt-get install valgrind) to run this test; "
              "CI installs it")
        print("valgrind: 0 passed, 1 failed")
        return 1
    cmd = [valgrind, "--error-exitcode=1", "--leak-check=full", "--errors-for-leak-kinds=definite", *argv[1:]]
    print("running: " + " ".join(cmd), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(res.stdout)
    log = res.stderr
    summary = [line for line in log.splitlines()
               if re.search(r"(definitely|indirectly|possibly) lost:|still reachable:|ERROR SUMMARY|"
                            r"All heap blocks were freed|in use at exit", line)]
    print("\n".join(summary))
    passed = failed = 0
    m = re.search(r"ERROR SUMMARY: (\d+) errors", log)
    definitely = re.search(r"definitely lost: ([\d,]+) bytes", log)
    checks = [
        (m is not None, "valgrind produced an error summary"),
        (m is not None and m.group(1) == "0", "no memory errors and no definitely-lost blocks"),
        (definitely is None or definitely.group(1) == "0", "definitely lost: 0 bytes"),
        (res.returncode == 0, f"exit status 0 (got {res.returncode}: 1 = valgrind errors or program failure)"),
    ]
    for ok, what in checks:
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL " + what)
    if failed:
        # show valgrind's error reports (not the leak-kind noise) to make the failure actionable
        sys.stdout.write(log[-20000:])
    print(f"valgrind: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
