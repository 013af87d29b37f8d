"""Receipts through the Python API: own-CA app receipts (Tests/support/receipts.py: exact fields, statuses, reasons,
every transaction id), the real sandbox receipts against Apple Inc. Root, and Apple's ReceiptUtility behaviour."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from appstoreserver import AppStoreStatus, FailureReason
from appstoreserver.receipt_utility import ReceiptException, ReceiptUtility, ReceiptVerifier
from appstoreserver.signed_data_verifier import VerificationException, VerificationStatus


def _cases(base: Path) -> List[Dict[str, Any]]:
    return json.loads((base / "manifest.json").read_text(encoding="utf-8"))["cases"]


def test_own_receipts(receipt_fixtures: Path) -> None:
    base = receipt_fixtures
    cases = _cases(base)
    assert len(cases) >= 30
    util = ReceiptUtility()
    for case in cases:
        v = case["verifier"]
        verifier = ReceiptVerifier([(base / r).read_bytes() for r in v["roots"]], v["bundleId"])
        text = (base / case["path"]).read_text().strip()
        expect = case["expect"]
        if expect["result"] == "valid":
            fields = verifier.verify(text)
            got = fields.to_dict()
            verification = got.pop("verification")
            assert got == expect["json"], case["id"]
            assert verification["effectiveDateSource"] == expect["effectiveDateSource"], case["id"]
            assert fields.verification.effectiveDateSource.value == expect["effectiveDateSource"]
            if "effectiveDate" in expect:
                assert verification["effectiveDate"] == expect["effectiveDate"], case["id"]
        else:
            with pytest.raises(VerificationException) as ei:
                verifier.verify(text)
            e = ei.value
            assert e.appstore_status.name == expect["status"], (case["id"], e)
            assert e.reason.name.lower() == expect["reason"], (case["id"], e)
            assert e.message
        # Every id, and Apple's first id.
        x = case["extract"]
        ids = util.extract_transaction_ids_from_app_receipt(text)
        assert ids.firstTransactionId == x["first"], case["id"]
        assert ids.transactionIds == x["transactionIds"] and ids.originalTransactionIds == x["originalTransactionIds"]
        if "cIdError" in x:  # an id with a NUL byte cannot cross as a C string
            with pytest.raises(ReceiptException) as ri:
                util.extract_transaction_id_from_app_receipt(text)
            assert ri.value.status.name == x["cIdError"]["status"]
        else:
            assert util.extract_transaction_id_from_app_receipt(text) == x["first"], case["id"]


REAL = [("real/receipts/app/sandbox-app-receipt-2015-11-18.b64", "com.mbaasy.ios.demo", "1000000180842733", 5),
        ("real/receipts/app/sandbox-app-receipt-2020-07-22.b64", "com.revenuecat.sampleapp", "1000000692879214", 9),
        ("real/receipts/app/sandbox-app-receipt-2024-04-02.b64", "com.brave.ios.browser", "2000000561971563", 5)]


@pytest.mark.parametrize("path,bundle,first,count", REAL)
def test_real_receipts(conformance: Path, path: str, bundle: str, first: str, count: int) -> None:
    text = (conformance / path).read_text().strip()
    apple_inc = (conformance / "certs/apple-inc-root-ca.der").read_bytes()
    fields = ReceiptVerifier([apple_inc]).verify(text)
    assert fields.bundleId == bundle and len(fields.inApp) == count and fields.inApp[0].transactionId == first
    assert fields.verification.rawEffectiveDateSource == "receiptCreationDate"
    with pytest.raises(VerificationException) as ei:
        ReceiptVerifier([(conformance / "certs/apple-root-ca-g3.der").read_bytes()]).verify(text)
    assert ei.value.reason == FailureReason.UNTRUSTED_CHAIN and ei.value.status == VerificationStatus.VERIFICATION_FAILURE
    with pytest.raises(VerificationException) as ei:
        ReceiptVerifier([apple_inc], "com.example.other").verify(text)
    assert ei.value.reason == FailureReason.WRONG_BUNDLE and ei.value.status == VerificationStatus.INVALID_APP_IDENTIFIER
    assert ReceiptUtility().extract_transaction_id_from_app_receipt(text) == first


def test_real_receipt_fields(conformance: Path) -> None:
    text = (conformance / REAL[1][0]).read_text().strip()
    fields = ReceiptVerifier([(conformance / "certs/apple-inc-root-ca.der").read_bytes()]).verify(text)
    assert fields.inApp[0].to_dict() == {
        "quantity": 1, "productId": "com.revenuecat.monthly_4.99.1_week_intro", "transactionId": "1000000692879214",
        "originalTransactionId": "1000000692878476", "purchaseDate": 1594755400000,
        "originalPurchaseDate": 1594755207000, "expiresDate": 1594755700000, "webOrderLineItemId": "1000000054042695",
        "isInIntroOfferPeriod": False}
    assert fields.receiptCreationDate == 1595439548000 and fields.applicationVersion == "4"


def test_receipt_errors_are_value_errors() -> None:
    util = ReceiptUtility()
    for bad in ("not base64 !!", "", "QUJD"):
        with pytest.raises(ValueError) as ei:
            util.extract_transaction_id_from_app_receipt(bad)
        assert isinstance(ei.value, ReceiptException)
        assert ei.value.status in (AppStoreStatus.INVALID_RECEIPT, AppStoreStatus.INVALID_ARGUMENT)
    with pytest.raises(TypeError):
        util.extract_transaction_id_from_app_receipt(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ReceiptVerifier(["root as str"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        ReceiptVerifier([])  # no trust anchor
    with pytest.raises(ValueError):
        ReceiptVerifier([b"not DER"])
    with pytest.raises(ValueError):
        ReceiptVerifier([b"x"], "com.example\x00evil")
