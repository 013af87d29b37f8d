"""The package's types, as a type checker sees them from users' code: `mypy --strict` over Apple-style scripts
(tests/typing/*.py: Apple's README examples and what code does with the answers, only the import prefix changed;
Apple's `response: HistoryResponse = None` is written `Optional[HistoryResponse]`, which --strict requires of Apple's
library too) must report nothing, and over tests/typing/negative/*.py exactly the errors marked `# E: <code>` on their
lines: proof that the types bite (a price is no str, an unknown attribute is an error, an Optional must be checked).

One mypy run over every script, against the `appstoreserver` this test process imports (the installed wheel under
bindings/python/run-tests), with its cache under the test's tmp. mypy (pinned in run-tests) needs Python 3.10 or
newer; on an older interpreter the test is skipped, anywhere else a missing mypy fails it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

import appstoreserver

SCRIPTS = Path(__file__).resolve().parent / "typing"
MARK = re.compile(r"#\s*E:\s*([\w\-]+(?:\s*,\s*[\w\-]+)*)\s*$")
ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+): error: (?P<message>.*?)(?:  \[(?P<code>[\w\-]+)\])?$")


def _expected(path: Path) -> Set[Tuple[int, str]]:
    out = set()
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = MARK.search(line)
        if m:
            out.update((i, code.strip()) for code in m.group(1).split(","))
    return out


def _run_mypy(tmp_path: Path, scripts: List[Path]) -> Tuple[int, str]:
    try:
        import mypy  # noqa: F401
    except ImportError:
        if sys.version_info < (3, 10):
            pytest.skip("mypy (pinned in run-tests) needs Python 3.10 or newer")
        pytest.fail("mypy is not installed in the test venv: bindings/python/run-tests installs it")
    package_root = str(Path(appstoreserver.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in [env.get("PYTHONPATH")] if p])
    env.pop("MYPYPATH", None)
    cmd = [sys.executable, "-m", "mypy", "--strict", "--config-file", "", "--cache-dir", str(tmp_path / "mypy-cache"),
           "--show-error-codes", "--no-color-output", "--no-error-summary", "--hide-error-context",
           "--show-absolute-path"] + [str(s) for s in scripts]
    r = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def test_mypy_strict_accepts_apple_style_code_and_reports_type_errors(tmp_path: Path) -> None:
    positive = sorted(SCRIPTS.glob("*.py"))
    negative = sorted((SCRIPTS / "negative").glob("*.py"))
    assert len(positive) >= 5 and negative, "the typing scripts are missing"
    rc, output = _run_mypy(tmp_path, positive + negative)

    errors: Dict[Path, Set[Tuple[int, str]]] = {}
    other: List[str] = []
    for line in output.splitlines():
        m = ERROR.match(line)
        if m:
            errors.setdefault(Path(m["path"]).resolve(), set()).add((int(m["line"]), m["code"] or "?"))
        elif line.strip() and ": note: " not in line:
            other.append(line)
    assert not other, f"mypy printed more than errors and notes (rc {rc}):\n{output}"

    for script in positive:
        assert not errors.get(script.resolve()), f"mypy --strict rejects Apple-style code in {script.name}:\n{output}"
    for script in negative:
        expected = _expected(script)
        assert expected, f"{script.name} marks no expected error"
        got = errors.get(script.resolve(), set())
        assert got == expected, (f"{script.name}: mypy reported {sorted(got - expected)} not marked, missed "
                                 f"{sorted(expected - got)}:\n{output}")
    assert set(errors) <= {s.resolve() for s in negative}, f"errors outside the scripts:\n{output}"
    assert rc == 1, f"mypy exited with {rc}:\n{output}"
