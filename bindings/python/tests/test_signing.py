"""Signatures made from Python (API bearer tokens, promotional offers v1 and v2, introductory offer eligibility,
Advanced Commerce in-app requests), checked by Tests/support/check_signatures.py with `cryptography` and `joserfc`,
never by this library."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import BUNDLE, ISSUER, KEY_ID, SUPPORT, LoopTicker

from appstoreserver import AppStoreStatus, ExternalSigner, FailureReason
from appstoreserver.api_client import AppStoreServerAPIClient, AsyncAppStoreServerAPIClient
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


def _items(keys: Path, signer: Any = None) -> List[Dict[str, Any]]:
    """One of every signature, made with the .p8 PEM or, when given, with the external signer (an ExternalSigner)."""
    pem = (keys / "p256.p8").read_bytes() if signer is None else signer
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
    intro = IntroductoryOfferEligibilitySignatureCreator(pem.decode() if signer is None else signer, KEY_ID, ISSUER,
                                                         BUNDLE)  # str PEM works too
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
    # The _create_nonce hook (Apple's Java createNonce()): what a subclass returns is signed, lowercase.
    charge_request = items[-1]["expect"]["request"]
    fixed = "0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10"
    asked: List[str] = []

    def hook(self: Any) -> Any:
        asked.append(type(self).__name__)
        return uuid.UUID(fixed) if len(asked) % 2 else fixed  # a uuid.UUID and UUID text both work

    for cls in (PromotionalOfferV2SignatureCreator, IntroductoryOfferEligibilitySignatureCreator,
                AdvancedCommerceAPIInAppSignatureCreator):
        sub = type("Fixed" + cls.__name__, (cls,), {"_create_nonce": hook})(pem, KEY_ID, ISSUER, BUNDLE)
        if cls is PromotionalOfferV2SignatureCreator:
            value, extra = sub.create_signature("p", "o", None), {"productId": "p", "offerIdentifier": "o"}
            kind = "promo_v2"
        elif cls is IntroductoryOfferEligibilitySignatureCreator:
            value = sub.create_signature("p", True, "1")
            extra = {"productId": "p", "allowIntroductoryOffer": True, "transactionId": "1"}
            kind = "intro_eligibility"
        else:
            value, extra, kind = sub.create_signature(charge), {"request": charge_request}, \
                "advanced_commerce"
        items.append({"kind": kind, "value": value, "expect": dict(ident, nonce=fixed.lower(), **extra)})
    assert len(asked) == 3
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


def test_create_nonce_refused(keys: Path) -> None:
    """A _create_nonce that returns something other than a UUID: the library refuses it, nothing is signed."""
    class Bad(PromotionalOfferV2SignatureCreator):
        def _create_nonce(self) -> Any:
            return self.nonce

    bad = Bad((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE)
    bad.nonce = "not-a-uuid"
    with pytest.raises(ValueError, match="nonce must be a UUID"):
        bad.create_signature("p", "o", None)
    bad.nonce = 42
    with pytest.raises(TypeError, match="_create_nonce"):
        bad.create_signature("p", "o", None)


def test_advanced_commerce_limits(keys: Path) -> None:
    ac = AdvancedCommerceAPIInAppSignatureCreator((keys / "p256.p8").read_bytes(), KEY_ID, ISSUER, BUNDLE)
    with pytest.raises(ValueError, match="^Description length cannot exceed 45 characters$"):  # as Apple's
        AdvancedCommerceOneTimeChargeItem("s", "d" * 46, "n", 1)
    # A model decoded with from_dict is not checked: the library refuses it when it signs.
    item = AdvancedCommerceOneTimeChargeItem.from_dict({"SKU": "s", "description": "d" * 46, "displayName": "n",
                                                        "price": 1})
    too_long = AdvancedCommerceOneTimeChargeCreateRequest(AdvancedCommerceRequestInfo(REF), "USD", item, "C")
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


# ---- external signers (a key in a KMS or an HSM) ------------------------------------------------------------------


def external(keys: Path, sign: Any, **kw: Any) -> ExternalSigner:
    """`sign` with the test key's public key (PEM text, as KMS GetPublicKey tools print it)."""
    return ExternalSigner(sign, (keys / "p256_public.pem").read_text(), **kw)


class KMS:
    """A stand-in for a KMS / HSM built on `cryptography`: it holds the private key and signs what it is given, as DER
    (what AWS KMS, Google Cloud KMS and most HSMs return) or as 64 bytes r||s (JOSE's form, PKCS#11 CKM_ECDSA), from
    the message or from its digest; it records what it was asked. key_file: another key than the test key (a signer
    configured with the wrong key in its KMS)."""

    def __init__(self, keys: Path, form: str, key_file: str = "p256.p8"):
        from cryptography.hazmat.primitives import serialization

        self.key = serialization.load_pem_private_key((keys / key_file).read_bytes(), None)
        self.form = form
        self.calls: List[tuple] = []

    def __call__(self, message: bytes, digest: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils

        self.calls.append((message, digest))
        if self.form == "der":
            return self.key.sign(message, ec.ECDSA(hashes.SHA256()))
        der = self.key.sign(digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))  # signs the digest only
        r, s = utils.decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")


@pytest.mark.parametrize("form", ["der", "raw"])
def test_external_signer_signatures_verified_independently(keys: Path, tmp_path: Path, form: str) -> None:
    kms = KMS(keys, form)
    items = _items(keys, external(keys, kms))
    assert len(kms.calls) == len(items), "every signature is asked of the signer"
    r = _check(keys, items, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"signatures: {len(items)} passed, 0 failed" in r.stdout, r.stdout
    # The signer got the JWS signing input (header.payload) and its SHA-256.
    token = items[0]["value"]
    message, digest = kms.calls[0]
    assert message == token.rsplit(".", 1)[0].encode() and digest == hashlib.sha256(message).digest()


def test_external_signer_api_client(keys: Path, mock_url: str) -> None:
    """The mock server verifies the bearer token (joserfc, the public key): a signer-backed client is accepted, sync
    and async; each attempt signs a fresh token."""
    kms = KMS(keys, "der")
    c = AppStoreServerAPIClient(external(keys, kms), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, base_url=mock_url)
    assert c.get_transaction_info("2000000000000001").signedTransactionInfo == "signed-transaction-info"
    assert len(kms.calls) == 1

    async def run() -> str:
        a = AsyncAppStoreServerAPIClient(external(keys, KMS(keys, "raw")), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX,
                                         base_url=mock_url)
        try:
            return (await a.get_transaction_info("2000000000000001")).signedTransactionInfo
        finally:
            await a.async_close()

    assert asyncio.run(run()) == "signed-transaction-info"


def test_async_client_signs_off_the_event_loop(keys: Path) -> None:
    """A slow signer (a KMS round trip) runs in a worker thread: the event loop keeps running meanwhile. A coroutine
    function is refused with a clear error (the library calls the signer synchronously)."""
    kms = KMS(keys, "der")
    ticked = threading.Event()

    def slow(message: bytes, digest: bytes) -> bytes:
        # Returns once the event loop has ticked 5 times (the test controls the timing, not the load); a signer run
        # on the loop would block it, see no tick, and give up after 60 s.
        ticked.wait(60)
        return kms(message, digest)

    async def fake(*a: Any) -> Any:
        from test_api import FakeResponse

        return FakeResponse(200, {"signedTransactionInfo": "ok"})

    async def run() -> int:
        c = AsyncAppStoreServerAPIClient(external(keys, slow), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)
        c._execute_request = fake
        ticker = LoopTicker().start().notify(5, ticked)
        try:
            assert (await c.get_transaction_info("1")).signedTransactionInfo == "ok"
        finally:
            ticker.stop()
            await c.async_close()
        return ticker.ticks

    ticks = asyncio.run(run())
    assert len(kms.calls) == 1 and ticks >= 5, f"the event loop was blocked while signing ({ticks} ticks)"

    async def coroutine_signer(message: bytes, digest: bytes) -> bytes:
        return b""

    with pytest.raises(SigningError, match="returned an awaitable") as ei:
        PromotionalOfferV2SignatureCreator(external(keys, coroutine_signer), KEY_ID, ISSUER, BUNDLE).create_signature("p", "o", None)
    assert ei.value.reason == FailureReason.SIGNER_FAILED


def test_external_signer_from_threads(keys: Path, tmp_path: Path) -> None:
    """Several threads ask the signer at once."""
    creator = PromotionalOfferV2SignatureCreator(external(keys, KMS(keys, "der")), KEY_ID, ISSUER, BUNDLE)
    with ThreadPoolExecutor(4) as pool:
        values = list(pool.map(lambda i: creator.create_signature("com.example.monthly", f"OFFER_{i}", None),
                               range(24)))
    items = [{"kind": "promo_v2", "value": v, "expect": {"kid": KEY_ID, "iss": ISSUER, "bid": BUNDLE,
                                                          "productId": "com.example.monthly",
                                                          "offerIdentifier": f"OFFER_{i}"}}
             for i, v in enumerate(values)]
    r = _check(keys, items, tmp_path)
    assert r.returncode == 0 and "signatures: 24 passed, 0 failed" in r.stdout, r.stdout + r.stderr


class Unavailable(Exception):
    pass


def _raises(message: bytes, digest: bytes) -> bytes:
    raise Unavailable("KMS unavailable")


BAD_SIGNERS = {
    "raises": (_raises, "Unavailable: KMS unavailable"),
    "garbage": (lambda m, d: b"garbage", "not an ECDSA P-256 signature"),
    "zeros": (lambda m, d: bytes(64), "not an ECDSA P-256 signature"),  # r = s = 0: right length, out of range
    "too long": (lambda m, d: bytes(100), "100 bytes"),
    "empty": (lambda m, d: b"", "0 bytes"),
    "None": (lambda m, d: None, "returned NoneType, not bytes"),
    "str": (lambda m, d: "MEUCIQ", "returned str, not bytes"),
    "wrong arity": (lambda m: b"", "TypeError"),
}


@pytest.mark.parametrize("name", BAD_SIGNERS)
def test_failing_signer(keys: Path, name: str) -> None:
    """A signer that raises or returns something else fails that signature with SigningError (INVALID_KEY /
    SIGNER_FAILED, naming what went wrong)."""
    sign, words = BAD_SIGNERS[name]
    sign = external(keys, sign)
    creators = [lambda: PromotionalOfferV2SignatureCreator(sign, KEY_ID, ISSUER, BUNDLE).create_signature(
                    "p", "o", None),
                lambda: IntroductoryOfferEligibilitySignatureCreator(sign, KEY_ID, ISSUER, BUNDLE).create_signature(
                    "p", True, "1"),
                lambda: PromotionalOfferSignatureCreator(sign, KEY_ID, BUNDLE).create_signature(
                    "p", "o", "u", uuid.uuid4(), 1698148900000),
                lambda: AppStoreServerAPIClient(sign, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)._generate_token()]
    for make in creators:
        with pytest.raises(SigningError) as ei:
            make()
        e = ei.value
        assert e.status == AppStoreStatus.INVALID_KEY and e.reason == FailureReason.SIGNER_FAILED, repr(e.reason)
        assert "external signer" in e.message and words in e.message, e.message
    if name == "raises":
        assert isinstance(e.__cause__, Unavailable)
        assert e.message.endswith("the external signer failed: it raised Unavailable: KMS unavailable"), e.message


def test_signer_recovers(keys: Path, tmp_path: Path) -> None:
    """A failure is one signature's: the next is asked again, and a later failure of another kind does not carry the
    earlier exception."""
    kms = KMS(keys, "der")
    answers: List[Any] = [Unavailable("once"), None, b"garbage"]

    def flaky(message: bytes, digest: bytes) -> bytes:
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return kms(message, digest) if a is None else a

    creator = PromotionalOfferV2SignatureCreator(external(keys, flaky), KEY_ID, ISSUER, BUNDLE)
    with pytest.raises(SigningError, match="it raised Unavailable: once"):
        creator.create_signature("p", "o", None)
    value = creator.create_signature("com.example.monthly", "WINBACK_50", None)
    with pytest.raises(SigningError) as ei:
        creator.create_signature("p", "o", None)
    assert ei.value.__cause__ is None and "once" not in ei.value.message, ei.value.message
    r = _check(keys, [{"kind": "promo_v2", "value": value, "expect": {"kid": KEY_ID, "iss": ISSUER, "bid": BUNDLE,
                                                                      "productId": "com.example.monthly",
                                                                      "offerIdentifier": "WINBACK_50"}}], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_failing_signer_api_call(keys: Path, mock_url: str) -> None:
    """An API call whose bearer token cannot be signed raises SigningError (a ValueError) naming the endpoint, and
    sends nothing; sync and async."""
    c = AppStoreServerAPIClient(external(keys, _raises), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX,
                                base_url=mock_url)
    sent: List[Any] = []
    c._execute_request = lambda *a: sent.append(a)
    with pytest.raises(SigningError) as ei:
        c.get_transaction_info("2000000000000001")
    assert isinstance(ei.value, ValueError) and ei.value.reason == FailureReason.SIGNER_FAILED
    assert ei.value.status == AppStoreStatus.INVALID_KEY
    assert ei.value.message.startswith("getTransactionInfo: ") and "KMS unavailable" in ei.value.message
    assert isinstance(ei.value.__cause__, Unavailable) and sent == []

    async def run() -> None:
        a = AsyncAppStoreServerAPIClient(external(keys, lambda m, d: b"garbage"), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX,
                                         base_url=mock_url)
        try:
            with pytest.raises(SigningError) as ei:
                await a.get_transaction_info("2000000000000001")
            assert ei.value.reason == FailureReason.SIGNER_FAILED
        finally:
            await a.async_close()

    asyncio.run(run())


def test_signer_lives_as_long_as_its_key(keys: Path) -> None:
    """The callable (and its ctypes callback) stay alive while a creator or client holds the key, however the
    caller's references go, and are released with it."""
    kms = KMS(keys, "raw")
    ref = weakref.ref(kms)
    client = AppStoreServerAPIClient(external(keys, kms), KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)
    creator = PromotionalOfferV2SignatureCreator(external(keys, kms), KEY_ID, ISSUER, BUNDLE)
    del kms
    gc.collect()
    assert client._generate_token().count(".") == 2 and creator.create_signature("p", "o", None).count(".") == 2
    del client
    gc.collect()
    assert ref() is not None, "the creator still holds the signer"
    assert creator.create_signature("p", "o", None).count(".") == 2
    del creator
    gc.collect()
    assert ref() is None, "the signer is released with the last key that uses it"


def test_signing_key_types(keys: Path) -> None:
    for bad in (42, None, ["pem"], object()):
        with pytest.raises(TypeError, match="signing_key must be the .p8 PEM .* or an ExternalSigner"):
            PromotionalOfferV2SignatureCreator(bad, KEY_ID, ISSUER, BUNDLE)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="signing_key"):
            AppStoreServerAPIClient(bad, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)  # type: ignore[arg-type]
    # A signer still needs the identifiers: the client needs an issuer id, the v1 creator does not.
    with pytest.raises(TypeError, match="issuer_id"):
        AppStoreServerAPIClient(external(keys, _raises), KEY_ID, None, BUNDLE, Environment.SANDBOX)  # type: ignore
    with pytest.raises(TypeError, match="key_id"):
        PromotionalOfferSignatureCreator(external(keys, _raises), None, BUNDLE)  # type: ignore[arg-type]
    assert PromotionalOfferSignatureCreator(external(keys, KMS(keys, "der")), KEY_ID, BUNDLE).create_signature(
        "p", "o", "u", uuid.uuid4(), 1698148900000)
    # A bare callable: the library needs the signer's public key to check its signatures.
    with pytest.raises(TypeError, match=r"ExternalSigner\(sign, public_key\)"):
        PromotionalOfferV2SignatureCreator(KMS(keys, "der"), KEY_ID, ISSUER, BUNDLE)
    pub = (keys / "p256_public.pem").read_text()
    for args, kw, error in (((42, pub), {}, TypeError), ((_raises, None), {}, TypeError), ((_raises, 42), {}, TypeError),
                            ((_raises, pub), {"timeout": "1"}, TypeError), ((_raises, pub), {"timeout": 0}, ValueError),
                            ((_raises, pub), {"timeout": 5e6}, ValueError)):
        with pytest.raises(error):
            ExternalSigner(*args, **kw)


def test_signer_public_key_forms(keys: Path) -> None:
    """The public key as PEM text (str or bytes) or DER SubjectPublicKeyInfo; anything else is refused when the key
    is made (INVALID_KEY), without echoing it."""
    kms = KMS(keys, "der")
    pem = (keys / "p256_public.pem").read_text()
    for public_key in (pem, pem.encode(), (keys / "p256_public.der").read_bytes()):
        creator = PromotionalOfferV2SignatureCreator(ExternalSigner(kms, public_key), KEY_ID, ISSUER, BUNDLE)
        assert creator.create_signature("p", "o", None).count(".") == 2
    private = (keys / "p256.p8").read_text()
    with pytest.raises(ValueError, match="public_key is empty"):
        ExternalSigner(kms, b"")
    for public_key in (b"not a key", private, (keys / "p384.p8").read_bytes()):
        with pytest.raises(SigningError) as ei:
            PromotionalOfferV2SignatureCreator(ExternalSigner(kms, public_key), KEY_ID, ISSUER, BUNDLE)
        assert ei.value.status == AppStoreStatus.INVALID_KEY, ei.value.message
        for line in private.splitlines()[1:-1]:
            assert line not in str(ei.value) and line not in repr(ei.value)


def _signers(keys: Path) -> Dict[str, Any]:
    """Signers that answer with a well-formed signature the public key does not verify."""
    right = KMS(keys, "der")
    previous: List[bytes] = []

    def replay(message: bytes, digest: bytes) -> bytes:  # a signature made earlier, for another message
        if not previous:
            previous.append(right(b"an earlier message", hashlib.sha256(b"an earlier message").digest()))
        return previous[0]

    return {"wrong key": KMS(keys, "der", "other_p256.p8"),
            "random": lambda m, d: os.urandom(64),
            "replayed": replay}


@pytest.mark.parametrize("name", ["wrong key", "random", "replayed"])
def test_signature_checked_with_public_key(keys: Path, mock_url: str, name: str) -> None:
    """A signature the signer's public key does not verify (another key's, random bytes, another message's) is
    refused by the library (INVALID_KEY / SIGNER_FAILED): nothing signed with it leaves, no request is sent."""
    sign = external(keys, _signers(keys)[name])
    c = AppStoreServerAPIClient(sign, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX, base_url=mock_url)
    sent: List[Any] = []
    c._execute_request = lambda *a: sent.append(a)
    for make in (lambda: PromotionalOfferV2SignatureCreator(sign, KEY_ID, ISSUER, BUNDLE).create_signature(
                     "p", "o", None),
                 lambda: PromotionalOfferSignatureCreator(sign, KEY_ID, BUNDLE).create_signature(
                     "p", "o", "u", uuid.uuid4(), 1698148900000),
                 c._generate_token,
                 lambda: c.get_transaction_info("2000000000000001")):
        with pytest.raises(SigningError) as ei:
            make()
        e = ei.value
        assert e.status == AppStoreStatus.INVALID_KEY and e.reason == FailureReason.SIGNER_FAILED, e.message
    assert sent == []


def test_keyboard_interrupt_in_signer(keys: Path) -> None:
    """A KeyboardInterrupt (any BaseException that is not an Exception) in the signer is raised by the call that
    asked for the signature, not turned into a SigningError; the key works afterwards."""
    kms = KMS(keys, "der")
    interrupt: List[BaseException] = [KeyboardInterrupt(), SystemExit(3)]

    def sign(message: bytes, digest: bytes) -> bytes:
        if interrupt:
            raise interrupt.pop(0)
        return kms(message, digest)

    signer = external(keys, sign)
    creator = PromotionalOfferV2SignatureCreator(signer, KEY_ID, ISSUER, BUNDLE)
    with pytest.raises(KeyboardInterrupt):
        creator.create_signature("p", "o", None)
    c = AppStoreServerAPIClient(signer, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)
    c._execute_request = lambda *a: pytest.fail("nothing may be sent")
    with pytest.raises(SystemExit):
        c.get_transaction_info("1")
    assert creator.create_signature("p", "o", None).count(".") == 2

    async def run() -> None:
        interrupt.append(KeyboardInterrupt())
        a = AsyncAppStoreServerAPIClient(signer, KEY_ID, ISSUER, BUNDLE, Environment.SANDBOX)
        try:
            with pytest.raises(KeyboardInterrupt):
                await a.get_transaction_info("1")
        finally:
            await a.async_close()

    asyncio.run(run())


def test_slow_signer_times_out(keys: Path) -> None:
    """A signer slower than its timeout fails the call soon after it (SIGNER_FAILED, a TimeoutError as the cause),
    though the signer itself cannot be interrupted."""
    kms = KMS(keys, "der")
    release = threading.Event()

    def hung(message: bytes, digest: bytes) -> bytes:
        release.wait(300)  # until the test releases it: far beyond the bound below
        return kms(message, digest)

    creator = PromotionalOfferV2SignatureCreator(external(keys, hung, timeout=0.5), KEY_ID, ISSUER, BUNDLE)
    try:
        t0 = time.monotonic()
        with pytest.raises(SigningError) as ei:
            creator.create_signature("p", "o", None)
        elapsed = time.monotonic() - t0
    finally:
        release.set()
    # 60x the timeout (>= 4x the slowest loaded run); the reason (a TimeoutError) is checked below.
    assert elapsed < 30, f"took {elapsed:.1f} s with a 0.5 s timeout"
    assert ei.value.reason == FailureReason.SIGNER_FAILED and isinstance(ei.value.__cause__, TimeoutError)
    assert "within the 0.5 s it had" in ei.value.message, ei.value.message
    # Within its timeout a slow signer is fine.
    slow = PromotionalOfferV2SignatureCreator(external(keys, lambda m, d: (time.sleep(0.3), kms(m, d))[1], timeout=30),
                                              KEY_ID, ISSUER, BUNDLE)
    assert slow.create_signature("p", "o", None).count(".") == 2
