#!/usr/bin/env python3
"""Verify an App Store Server Notification V2 (the body Apple POSTs to your server) and print what it says.

    python3 verify_notification.py notification.json com.example.app [--environment Production --app-apple-id 1234]

Apple's root certificate comes with the package (appstoreserver.apple_root_certificates(), checked against the
fingerprint Apple publishes); --root FILE trusts another root instead (DER or PEM), e.g. for a test PKI.
"""
import argparse
import json
import sys

from appstoreserver import apple_root_certificates
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notification", help='the request body {"signedPayload": "..."} or the bare JWS')
    p.add_argument("bundle_id")
    p.add_argument("--environment", default="Sandbox", choices=["Sandbox", "Production"])
    p.add_argument("--app-apple-id", type=int, help="required for Production")
    p.add_argument("--root", help="a root certificate file (DER or PEM) instead of Apple's")
    a = p.parse_args()

    text = open(a.notification, encoding="utf-8").read().strip()
    signed_payload = json.loads(text)["signedPayload"] if text.startswith("{") else text
    roots = [open(a.root, "rb").read()] if a.root else apple_root_certificates()
    verifier = SignedDataVerifier(roots, False, Environment(a.environment), a.bundle_id, a.app_apple_id)
    try:
        notification = verifier.verify_and_decode_notification(signed_payload)
    except VerificationException as e:
        print(f"NOT VERIFIED: {e}", file=sys.stderr)  # the status, the reason and what exactly failed
        return 1
    print(f"type: {notification.rawNotificationType} {notification.rawSubtype or ''}".rstrip())
    if notification.data is not None:
        print(f"bundle: {notification.data.bundleId}, environment: {notification.data.rawEnvironment}")
        if notification.data.signedTransactionInfo:
            transaction = verifier.verify_and_decode_signed_transaction(notification.data.signedTransactionInfo)
            print(f"transaction: {transaction.transactionId} ({transaction.productId})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
