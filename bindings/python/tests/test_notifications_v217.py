"""Notifications v2.17 (Apple's changelog of 2025-06-26) through Apple's Python names: subtypes CREATED and
ACTIVE_TOKEN_REMINDER, an external purchase token's tokenType (TokenType, raw value kept) and tokenExpirationDate."""

from __future__ import annotations

from pathlib import Path

from appstoreserver.models.Environment import Environment
from appstoreserver.models.Subtype import Subtype
from appstoreserver.models.TokenType import TokenType
from appstoreserver.signed_data_verifier import SignedDataVerifier


def decode(testpki: Path, case: str):  # type: ignore[no-untyped-def]
    v = SignedDataVerifier([(testpki / "root.der").read_bytes()], False, Environment.SANDBOX, "com.example.testpki")
    return v.verify_and_decode_notification((testpki / "jws" / f"{case}.jws").read_text().strip())


def test_custom_link_tokens(testpki: Path) -> None:
    created = decode(testpki, "notif-valid-external-purchase-token-created")
    assert created.subtype == Subtype.CREATED and created.rawSubtype == "CREATED"
    token = created.externalPurchaseToken
    assert token.tokenType == TokenType.ACQUISITION and token.rawTokenType == "ACQUISITION"
    assert token.tokenExpirationDate == 1764493200000  # 2025-11-30T09:00:00Z
    reminder = decode(testpki, "notif-valid-external-purchase-token-active-token-reminder")
    assert reminder.subtype == Subtype.ACTIVE_TOKEN_REMINDER
    assert reminder.externalPurchaseToken.tokenType == TokenType.SERVICES
    unknown = decode(testpki, "notif-valid-external-purchase-token-unknown-token-type").externalPurchaseToken
    assert unknown.tokenType is None and unknown.rawTokenType == "LINK_OUT"
