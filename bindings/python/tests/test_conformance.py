"""The 105 cases of ../shared/conformance (85 verifications of real Apple-signed data and derived negatives, 20
receipt extractions) through the Python API, compared with the expectations and with what Apple's Python library
returned (reference_results). Without ../shared/conformance every case is reported SKIPPED, loudly."""

from __future__ import annotations

import pytest
from conftest import CONFORMANCE, shared_manifest
from manifest_runner import check_case, read_trimmed

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.receipt_utility import ReceiptException, ReceiptUtility

VERIFY_CASES = 85
RECEIPT_CASES = 20
MISSING = f"SKIPPED: {CONFORMANCE} not found; real Apple data NOT checked"


def _cases():
    cases = shared_manifest()["cases"]
    if not cases:
        return [pytest.param(None, id=f"missing-{i + 1}", marks=pytest.mark.skip(reason=MISSING))
                for i in range(VERIFY_CASES + RECEIPT_CASES)]
    return [pytest.param(c, id=c["id"]) for c in cases]


def _apple_python(case: dict):
    return next((v for k, v in case.get("reference_results", {}).items() if k.startswith("apple-python")), None)


def test_case_counts(conformance) -> None:
    ops = [c["operation"] for c in shared_manifest()["cases"]]
    assert sum(o.startswith("verifyAndDecode") for o in ops) == VERIFY_CASES
    assert sum(o.startswith("extractTransactionId") for o in ops) == RECEIPT_CASES


@pytest.mark.parametrize("case", _cases())
def test_case(case: dict) -> None:
    op = case["operation"]
    if op.startswith("verifyAndDecode"):
        check_case(CONFORMANCE, case, apple_reference=_apple_python(case) or {})
    else:
        check_receipt_case(case)


def check_receipt_case(case: dict) -> None:
    """As Tests/capi/receipts_conformance.c: value / any_of + python_java_node / error-or-null / null, and Apple's
    Python result: a ValueError where it raised (binascii.Error and UnicodeDecodeError are ValueErrors too)."""
    text = read_trimmed(CONFORMANCE / case["path"])
    util = ReceiptUtility()
    fn = (util.extract_transaction_id_from_app_receipt if case["operation"] == "extractTransactionIdFromAppReceipt"
          else util.extract_transaction_id_from_transaction_receipt)
    expect = case["expect"]
    result = expect["result"]
    try:
        got, error = fn(text), None
    except ReceiptException as e:
        got, error = None, e
    if result == "value":
        assert error is None, f"expected a value, got {error!r}"
        if "value" in expect:
            assert got == expect["value"]
        else:
            assert got == expect["python_java_node"], f"expected Apple's Python result {expect['python_java_node']}"
            assert got is None or got in expect["any_of"]
    elif result == "error-or-null":
        if error is not None:
            assert isinstance(error, ValueError)
            assert error.status == AppStoreStatus.INVALID_RECEIPT, repr(error.status)
            assert error.reason in (FailureReason.RECEIPT_MALFORMED, FailureReason.WRONG_KIND), repr(error.reason)
        else:
            assert got is None, f"expected an error or None, got {got!r}"
    elif result.startswith("null"):
        assert error is None and got is None, f"expected None, got {got!r} / {error!r}"
    else:
        raise AssertionError(f"unknown expectation {result}")
    ref = _apple_python(case)
    if ref and ref.get("result") == "value":
        assert got == ref["value"], f"Apple's Python returns {ref['value']!r}, we {got!r} / {error!r}"
    elif ref and ref.get("result") == "error":
        assert error is not None or got is None, f"Apple's Python raises {ref.get('exception')}, we return {got!r}"
