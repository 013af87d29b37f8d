"""JWS signature creators (Apple's appstoreserverlibrary.jws_signature_creator): promotional offer V2,
introductory offer eligibility and Advanced Commerce in-app requests, signed ES256 by libappstoreserver."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Optional, Union

from . import _args
from ._docs import from_header
from ._model import AdvancedCommerceAPIInAppRequest, Model
from ._native import lib
from ._signing import ExternalSigner, Signer, SigningError, SigningKeyArg, call_string, signing_key

__all__ = ["AdvancedCommerceAPIInAppRequest", "JWSSignatureCreator", "PromotionalOfferV2SignatureCreator",
           "IntroductoryOfferEligibilitySignatureCreator", "AdvancedCommerceAPIInAppSignatureCreator", "ExternalSigner",
           "Signer",
           "SigningError"]


class JWSSignatureCreator:
    """The common part of the creators: the audience and an App Store Connect key with its identifiers (the .p8
    PEM as bytes, or str). Claims bid, iss, aud, iat and a fresh nonce are added to every signature.

    Beyond Apple's: signing_key may be an ExternalSigner(sign, public_key) for a key held in a KMS or an HSM;
    sign(message: bytes, digest: bytes) returns the ES256 signature of message (DER or 64 bytes r||s), which the
    library verifies with public_key. When it raises, returns something else or answers too late, create_signature
    raises SigningError (reason SIGNER_FAILED, the exception as __cause__)."""

    def __init__(self, audience: str, signing_key: SigningKeyArg, key_id: str, issuer_id: str, bundle_id: str):
        self._audience = _args.text(audience, "audience").decode()  # type: ignore[union-attr]
        self._key = signing_key_handle(signing_key, key_id, issuer_id, bundle_id)
        self._key_id = key_id
        self._issuer_id = issuer_id
        self._bundle_id = bundle_id

    def _create_signature(self, feature_specific_claims: Dict[str, Any]) -> str:
        """Apple's generic signer is not offered: the library signs only the documented claim sets, with the
        checks Apple's limits require (use the subclasses)."""
        raise NotImplementedError("use PromotionalOfferV2SignatureCreator, IntroductoryOfferEligibilitySignatureCreator "
                                  "or AdvancedCommerceAPIInAppSignatureCreator")

    def _create_nonce(self) -> Optional[Union[uuid.UUID, str]]:
        """The nonce of the next signature (Apple's Java createNonce(); Apple's Python has no such hook): None lets
        the library make a random UUID; a subclass may return its own UUID (or UUID text), signed lowercase. Called
        once per create_signature; anything but a UUID raises SigningError (INVALID_ARGUMENT)."""
        return None

    def _nonce_arg(self) -> Optional[bytes]:
        nonce = self._create_nonce()
        if nonce is None:
            return None
        if not isinstance(nonce, (uuid.UUID, str)):
            raise TypeError(f"_create_nonce() must return a uuid.UUID, a str or None, not {type(nonce).__name__}")
        return _args.text(str(nonce), "nonce")


def signing_key_handle(key: Any, key_id: Any, issuer_id: Any, bundle_id: Any) -> Any:
    return signing_key(key, key_id, issuer_id, bundle_id)


class PromotionalOfferV2SignatureCreator(JWSSignatureCreator):
    def __init__(self, signing_key: SigningKeyArg, key_id: str, issuer_id: str, bundle_id: str):
        super().__init__("promotional-offer", signing_key, key_id, issuer_id, bundle_id)

    @from_header("appstore_signing_key_create_promotional_offer_v2")
    def create_signature(self, product_id: str, offer_identifier: str, transaction_id: Optional[str]) -> str:
        """transaction_id None: no transactionId. A failure raises SigningError."""
        if product_id is None:
            raise ValueError("product_id cannot be null")
        if offer_identifier is None:
            raise ValueError("offer_identifier cannot be null")
        return call_string(self._key, lib.appstore_signing_key_create_promotional_offer_v2,
                           _args.text(product_id, "product_id"), _args.text(offer_identifier, "offer_identifier"),
                           _args.text(transaction_id, "transaction_id", optional=True), self._nonce_arg())


class IntroductoryOfferEligibilitySignatureCreator(JWSSignatureCreator):
    def __init__(self, signing_key: SigningKeyArg, key_id: str, issuer_id: str, bundle_id: str):
        super().__init__("introductory-offer-eligibility", signing_key, key_id, issuer_id, bundle_id)

    @from_header("appstore_signing_key_create_introductory_offer_eligibility")
    def create_signature(self, product_id: str, allow_introductory_offer: bool, transaction_id: str) -> str:
        """None for any argument raises ValueError (as Apple's library); a failure raises SigningError."""
        if product_id is None:
            raise ValueError("product_id cannot be null")
        if allow_introductory_offer is None:
            raise ValueError("allow_introductory_offer cannot be null")
        if transaction_id is None:
            raise ValueError("transaction_id cannot be null")
        allow = _args.boolean(allow_introductory_offer, "allow_introductory_offer")
        return call_string(self._key, lib.appstore_signing_key_create_introductory_offer_eligibility,
                           _args.text(product_id, "product_id"), 1 if allow else 0,
                           _args.text(transaction_id, "transaction_id"), self._nonce_arg())


class AdvancedCommerceAPIInAppSignatureCreator(JWSSignatureCreator):
    def __init__(self, signing_key: SigningKeyArg, key_id: str, issuer_id: str, bundle_id: str):
        super().__init__("advanced-commerce-api", signing_key, key_id, issuer_id, bundle_id)

    @from_header("appstore_signing_key_create_advanced_commerce_in_app")
    def create_signature(self, advanced_commerce_in_app_request: AdvancedCommerceAPIInAppRequest) -> str:
        """The request: one of the four in-app request models, or its JSON object as a dict. A request the library
        refuses raises SigningError naming the field."""
        req = advanced_commerce_in_app_request
        if req is None:
            raise ValueError("advanced_commerce_in_app_request cannot be null")
        if isinstance(req, Model):
            if not isinstance(req, AdvancedCommerceAPIInAppRequest):
                raise TypeError(f"advanced_commerce_in_app_request must be an Advanced Commerce in-app request, not "
                                f"{type(req).__name__}")
            obj = req.to_dict()
        elif isinstance(req, dict):
            obj = req
        else:
            raise TypeError(f"advanced_commerce_in_app_request must be an Advanced Commerce in-app request model, not "
                            f"{type(req).__name__}")
        try:
            data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise TypeError(f"advanced_commerce_in_app_request does not convert to JSON: {e}") from None
        return call_string(self._key, lib.appstore_signing_key_create_advanced_commerce_in_app, data, len(data),
                           self._nonce_arg())
