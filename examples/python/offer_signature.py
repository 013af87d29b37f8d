#!/usr/bin/env python3
"""Sign a promotional offer for StoreKit 2 (Promotional Offer V2 signature, a JWS your app passes to StoreKit).

    APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" python3 offer_signature.py \\
        --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app com.example.monthly WINBACK
"""
import argparse
import os
import sys

from appstoreserver.jws_signature_creator import PromotionalOfferV2SignatureCreator


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("product_id")
    p.add_argument("offer_id")
    p.add_argument("--transaction-id", help="the customer's transaction id, when the offer is for one customer")
    p.add_argument("--key-id", required=True)
    p.add_argument("--issuer-id", required=True)
    p.add_argument("--bundle-id", required=True)
    a = p.parse_args()

    creator = PromotionalOfferV2SignatureCreator(os.environ["APPSTORE_PRIVATE_KEY"].encode(), a.key_id, a.issuer_id,
                                                 a.bundle_id)
    print(creator.create_signature(a.product_id, a.offer_id, a.transaction_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
