"""The short form of `scripts/leak-check python`: 50,000 calls of tests/leak_workload.py in a process of its own,
judged by Tests/support/leakcheck.py on the library's live objects and malloc's in-use bytes (never the resident
size). scripts/test-all runs the self-test (a leaking workload must be caught) in its leak step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import SUPPORT


def test_50k_calls_leak_nothing(testpki: Path) -> None:
    workload = Path(__file__).with_name("leak_workload.py")
    r = subprocess.run([sys.executable, str(SUPPORT / "leakcheck.py"), "--lang", "python", "--calls", "50000", "--",
                        sys.executable, str(workload), str(testpki)],
                       capture_output=True, text=True, env=dict(os.environ), timeout=1800)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ": flat" in r.stdout, r.stdout
