"""The project's own PKI cases (Tests/support/testpki.py, 146 cases: every verify operation, valid and each
failure, exact status and reason) through the Python API, plus Apple's Python status for each."""

from __future__ import annotations

import json

import pytest
from conftest import get_testpki_dir
from manifest_runner import check_case


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        cases = json.loads((get_testpki_dir() / "manifest.json").read_text(encoding="utf-8"))["cases"]
        metafunc.parametrize("case", cases, ids=[c["id"] for c in cases])


def test_case_count() -> None:
    cases = json.loads((get_testpki_dir() / "manifest.json").read_text(encoding="utf-8"))["cases"]
    assert len(cases) >= 146


def test_case(case: dict) -> None:
    check_case(get_testpki_dir(), case)
