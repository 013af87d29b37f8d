"""PromotionalOfferSignatureCreator (Apple's appstoreserverlibrary.promotional_offer): promotional offer signatures
V1 (StoreKit 1), made by libappstoreserver."""

from __future__ import annotations

from ctypes import byref, c_void_p
from typing import Union
from uuid import UUID

from . import _args
from ._docs import from_header
from ._native import lib, read_error, take_string
from ._signing import ExternalSigner, Signer, SigningError, SigningKeyArg, error_from, signing_key

__all__ = ["ExternalSigner", "PromotionalOfferSignatureCreator", "Signer", "SigningError"]


class PromotionalOfferSignatureCreator:
    """signing_key: the .p8 PEM (bytes, or str), or (beyond Apple's) an ExternalSigner(sign, public_key) for a key
    held in a KMS or an HSM (see jws_signature_creator.JWSSignatureCreator); key_id: its key id; bundle_id: the
    app's bundle id."""

    def __init__(self, signing_key: SigningKeyArg, key_id: str, bundle_id: str):
        self._key = _key_of(signing_key, key_id, bundle_id)
        self._key_id = key_id
        self._bundle_id = bundle_id

    @from_header("appstore_signing_key_create_promotional_offer_v1")
    def create_signature(self, product_identifier: str, subscription_offer_id: str, application_username: str,
                         nonce: Union[UUID, str], timestamp: int) -> str:
        """Apple's arguments: nonce a UUID (or its text), timestamp in milliseconds. A failure raises
        SigningError."""
        product = _args.text(product_identifier, "product_identifier")
        offer = _args.text(subscription_offer_id, "subscription_offer_id")
        user = _args.text(application_username, "application_username")
        n = _args.text(str(nonce) if isinstance(nonce, UUID) else nonce, "nonce")
        ts = _args.integer(timestamp, "timestamp", (1, _args.INT64[1]))
        out = c_void_p()
        err = c_void_p()
        st = lib.appstore_signing_key_create_promotional_offer_v1(self._key.ptr, product, offer, user, n, ts,
                                                                  byref(out), None, None, byref(err))
        if st != 0:
            raise error_from(read_error(err, st), self._key)
        return take_string(out).decode("utf-8")


def _key_of(key: object, key_id: object, bundle_id: object):  # type: ignore[no-untyped-def]
    return signing_key(key, key_id, None, bundle_id, issuer_required=False)
