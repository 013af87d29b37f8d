#!/usr/bin/env python3
"""Every page of a customer's refund history through the App Store Server API (Get Refund History), with retries
and the Sandbox fallback that App Review's purchases need.

    APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" python3 refund_history.py \\
        --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app 2000000000000001

--base-url points the client at another server (a test server); without it, Apple's.
"""
import argparse
import os
import sys

from appstoreserver.api_client import APIException, AppStoreServerAPIClient
from appstoreserver.models.Environment import Environment


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("transaction_id", help="any transaction id of the customer")
    p.add_argument("--key-id", required=True)
    p.add_argument("--issuer-id", required=True)
    p.add_argument("--bundle-id", required=True)
    p.add_argument("--environment", default="Production", choices=["Sandbox", "Production"])
    p.add_argument("--base-url")
    a = p.parse_args()

    key = os.environ["APPSTORE_PRIVATE_KEY"].encode()  # the .p8 text; never put a key on a command line
    env = Environment(a.environment)
    client = AppStoreServerAPIClient(key, a.key_id, a.issuer_id, a.bundle_id, env, base_url=a.base_url, max_retries=3,
                                     sandbox_fallback=env == Environment.PRODUCTION)
    try:
        for number, page in enumerate(client.iter_refund_history(a.transaction_id), 1):
            print(f"page {number}: {len(page.signedTransactions or [])} refunded transactions, "
                  f"more: {bool(page.hasMore)}")
    except APIException as e:
        print(f"failed: {e}", file=sys.stderr)  # HTTP status, Apple's error code and message, Retry-After
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
