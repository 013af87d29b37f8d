"""Signatures made from Python (API bearer tokens, promotional offers v1 and v2, introductory offer eligibility,
Advanced Commerce in-app requests), checked by Tests/support/check_signatures.py with `cryptography` and `joserfc`,
never by this library."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID, SUPPORT

from appstoreserver import FailureReason
from appstoreserver.api_client import AppStoreServerAPIClient
from appstoreserver.jws_signature_creator import (
    AdvancedCommerceAPIInAppSignatureCreator,
    IntroductoryOfferEligibilitySignatureCreator,
    PromotionalOfferV2SignatureCreator,
    SigningError,
)
from appstoreserver.models.AdvancedCommerceDescriptors import AdvancedCommerceDescriptors
from appstoreserver.models.AdvancedCommerceOffer import AdvancedCommerceOffer
from appstoreserver.models.AdvancedCommerceOfferPeriod import AdvancedCommerceOfferPeriod
from appstoreserver.models.AdvancedCommerceOfferReason import AdvancedCommerceOfferReason
from appstoreserver.models.AdvancedCommerceOneTimeChargeCreateRequest import AdvancedCommerceOneTimeChargeCreateRequest
from appstoreserver.models.AdvancedCommerceOneTimeChargeItem import AdvancedCommerceOneTimeChargeItem
from appstoreserver.models.AdvancedCommercePeriod import AdvancedCommercePeriod
from appstoreserver.models.AdvancedCommerceRequestInfo import AdvancedCommerceRequestInfo
from appstoreserver.models.AdvancedCommerceSubscriptionCreateItem import AdvancedCommerceSubscriptionCreateItem
from appstoreserver.models.AdvancedCommerceSubscriptionCreateRequest import AdvancedCommerceSubscriptionCreateRequest
from appstoreserver.models.Environment import Environment
from appstoreserver.promotional_offer import PromotionalOfferSignatureCreator

REF = uuid.UUID("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")


def _check(keys: Path, items: List[Dict[str, Any]], tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "signatures.json"
    path.write_text(json.dumps({"public_key": str(keys / "p256_public.pem"), "items": items}))
    return subprocess.run([sys.executable, str(SUPPORT / "check_signatures.py"), "check", str(path)],
                          capture_output=True, text=True)


def _items(keys: Path) -> List[Dict[str, Any]]:
    pem = (keys / "p256.p8").read_bytes()
    ident = {"kid": KEY_ID, "iss": ISSUER, "bid": BUNDLE}
    items: List[Dict[str, Any]] = []
    api = AppStoreServerAPIClient(pem, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)
    items.append({"kind": "api_token", "value": api._generate_token(), "expect": dict(ident, lifetime=300)})
    v2 = PromotionalOfferV2SignatureCreator(pem, KEY_ID, ISSUER, BUNDLE)
    items.append({"kind": "promo_v2", "value": v2.create_signature("com.example.monthly", "WINBACK_50", "2000000123"),
                  "expect": dict(ident, productId="com.example.monthly", offerIdentifier="WINBACK_50",
                                 transactionId="2000000123")})
    items.append({"kind": "promo_v2", "value": v2.create_signature("com.example.monthly", "WINBACK_50", None),
                  "expect": dict(ident, productId="com.example.monthly", offerIdentifier="WINBACK_50")})
    intro = IntroductoryOfferEligibilitySignatureCreator(pem.decode(), KEY_ID, ISSUER, BUNDLE)  # str PEM works too
    for allow in (True, False):
        items.append({"kind": "intro_eligibility", "value": intro.create_signature("com.example.yearly", allow, "99"),
                      "expect": dict(ident, productId="com.example.yearly", allowIntroductoryOffer=allow,
                                     transactionId="99")})
    ac = AdvancedCommerceAPIInAppSignatureCreator(pem, KEY_ID, ISSUER, BUNDLE)
    # Apple's constructors, Apple's positional order.
    create = AdvancedCommerceSubscriptionCreateRequest(
        AdvancedCommerceRequestInfo(REF), "USD", AdvancedCommerceDescriptors("d", "n"),
        [AdvancedCommerceSubscriptionCreateItem("s", "d", "n", 100, AdvancedCommerceOffer(
            1, 50, AdvancedCommerceOfferPeriod.P1M, AdvancedCommerceOfferReason.ACQUISITION))],
        "C", AdvancedCommercePeriod.P1M)
    items.append({"kind": "advanced_commerce", "value": ac.create_signature(create), "expect": dict(ident, request={
        "requestInfo": {"requestReferenceId": str(REF)}, "operation": "CREATE_SUBSCRIPTION", "version": "1",
        "currency": "USD", "descriptors": {"description": "d", "displayName": "n"},
        "items": [{"SKU": "s", "description": "d", "displayName": "n", "price": 100,
                   "offer": {"periodCount": 1, "price": 50, "period": "P1M", "reason": "ACQUISITION"}}],
        "taxCode": "C", "period": "P1M"})})
    charge = AdvancedCommerceOneTimeChargeCreateRequest(
        AdvancedCommerceRequestInfo(REF, consistencyToken="tok"), "EUR",
        AdvancedCommerceOneTimeChargeItem("sku.1", "A thing", "Thing", 990), "C003-00-1", storefront="DEU")
    items.append({"kind": "advanced_commerce", "value": ac.create_signature(charge), "expect": dict(ident, request={
        "requestInfo": {"requestReferenceId": str(REF), "consistencyToken": "tok"}, "operation": "CREATE_ONE_TIME_CHARGE",
        "version": "1", "currency": "EUR", "item": {"SKU": "sku.1", "description": "A thing", "displayName": "Thing",
                                                     "price": 990}, "taxCode": "C003-00-1", "storefront": "DEU"})})
    v1 = PromotionalOfferSignatureCreator(pem, KEY_ID, BUNDLE)
    nonce = uuid.UUID("5E8B3B4C-3F4E-4C5B-9F0E-1A2B3C4D5E6F")
    token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
    items.append({"kind": "promo_v1", "value": v1.create_signature("com.example.monthly", "WINBACK_50", token, nonce,
                                                                    1698148900000),
                  "expect": {"bundleId": BUNDLE, "keyId": KEY_ID, "productId": "com.example.monthly",
                             "offerId": "WINBACK_50", "appAccountToken": token, "nonce": str(nonce),
                             "timestamp": 1698148900000}})
    return items


def test_signatures_verified_independently(keys: Path, tmp_path: Path) -> None:
    items = _items(keys)
    r = _check(keys, items, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"signatures: {len(items)} passed, 0 failed" in r.stdout, r.stdout


def test_the_independent_check_can_fail(keys: Path, tmp_path: Path) -> None:
    """A tampered signature and a wrong expectation must each be caught by the checker."""
    items = _items(keys)
    token = items[0]["value"]
    items[0]["value"] = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    items[1]["expect"]["offerIdentifier"] = "SOMETHING_ELSE"
    r = _check(keys, items, tmp_path)
    assert r.returncode == 1 and f"signatures: {len(items) - 2} passed, 2 failed" in r.stdout, r.stdout


@pytest.mark.parametrize("name,reason", [("p384.p8", "KEY_WRONG_CURVE"), ("rsa.p8", "KEY_NOT_EC"),
                                         ("encrypted.p8", "KEY_ENCRYPTED"), ("truncated.p8", "KEY_MALFORMED"),
                                         ("not_pem.txt", "KEY_NOT_PEM")])
def test_unusable_keys(keys: Path, name: str, reason: str) -> None:
    with pytest.raises(SigningError) as ei:
        PromotionalOfferV2SignatureCreator((keys / name).read_bytes(), KEY_ID, ISSUER, BUNDLE)
    assert ei.value.reason == FailureReason[reason], repr(ei.value.reason)
    assert isinstance(ei.value, ValueError) and ei.value.message
    assert "PRIVATE KEY" not in str(ei.value) or name == "not_pem.txt"


def test_advanced_commerce_limits(keys: Path) -> None:
    ac = AdvancedCommerceAPIInAppSignatureCreator((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE)
    too_long = AdvancedCommerceOneTimeChargeCreateRequest(AdvancedCommerceRequestInfo(REF), "USD",
                                                          AdvancedCommerceOneTimeChargeItem("s", "d" * 46, "n", 1), "C")
    with pytest.raises(SigningError) as ei:
        ac.create_signature(too_long)
    assert ei.value.reason == FailureReason.INVALID_REQUEST and "description" in ei.value.message
    with pytest.raises(ValueError, match="cannot be null"):
        ac.create_signature(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ac.create_signature(AdvancedCommerceRequestInfo(REF))  # type: ignore[arg-type]
    # A misspelt key of a request given as a dict is refused, naming its path.
    with pytest.raises(SigningError) as ei:
        ac.create_signature({"operation": "CREATE_ONE_TIME_CHARGE", "requestInfo": {"requestReferenceId": str(REF)},
                             "currency": "USD", "taxCode": "C",
                             "item": {"SKU": "s", "descripton": "d", "displayName": "n", "price": 1}})
    assert "item.descripton" in ei.value.message
    with pytest.raises(ValueError, match="Either period or rawPeriod must be provided"):
        AdvancedCommerceOffer(1, 50, None, AdvancedCommerceOfferReason.ACQUISITION)
