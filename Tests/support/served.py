"""served(script, *args, ready="PORT"): a test server of Tests/support (mock_app_store.py, hostile_http.py,
ocsp_harness.py serve) running for the `with` block. Such servers print one line starting with `ready` ("PORT <n>
[<n>...]", "READY <setup.json>") once they listen and stop when their standard input closes; this yields the words
after it."""
from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List

SUPPORT = Path(__file__).resolve().parent


@contextlib.contextmanager
def served(script: str, *args: str, ready: str = "PORT", stop_seconds: float = 10) -> Iterator[List[str]]:
    p = subprocess.Popen([sys.executable, str(SUPPORT / script), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        line = p.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith(ready + " "), f"{script} said {line!r}"
        yield line.split()[1:]
    finally:
        p.stdin.close()  # type: ignore[union-attr]
        try:
            p.wait(timeout=stop_seconds)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
