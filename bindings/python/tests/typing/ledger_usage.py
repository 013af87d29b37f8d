# The purchase ledger (beyond Apple's library) as application code uses it: open, ingest a notification body, read a
# customer's entitlements and a subscription's status. Type-checked by test_typing.py, never run.
from datetime import datetime, timezone
from typing import Dict, List, Optional

from appstoreserver.ledger import Ledger, LedgerError
from appstoreserver.models.Environment import Environment
from appstoreserver.models.LedgerEntitlementReason import LedgerEntitlementReason
from appstoreserver.models.LedgerSubscription import LedgerSubscription
from appstoreserver.models.Status import Status
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException

verifier = SignedDataVerifier([b""], False, Environment.SANDBOX, "com.example")


def receive(ledger: Ledger, body: Dict[str, str]) -> int:
    try:
        result = ledger.ingest_notification(body["signedPayload"])
    except VerificationException as e:
        print(e.status, e.reason, e.message)
        return 400
    except LedgerError as e:
        print(e.appstore_status, e.message)
        return 503
    if result.agrees is False:
        print("Apple's status", result.appleStatus, "the ledger's", result.engineStatus)
    return 200 if result.stored else 208


def products(ledger: Ledger, token: str) -> List[str]:
    customer = ledger.customer(token, at=datetime.now(timezone.utc))
    out: List[str] = []
    for e in customer.entitlements or []:
        until: Optional[int] = e.until
        if e.reason == LedgerEntitlementReason.BILLING_GRACE_PERIOD and until is not None:
            print("grace period until", until // 1000)
        if e.productId is not None:
            out.append(e.productId)
    return out


with Ledger.open("sqlite:/var/lib/app/ledger.db", verifier) as ledger:
    ledger.ingest_transaction("ey..")
    ledger.ingest_renewal_info(b"ey..")
    sub: Optional[LedgerSubscription] = ledger.subscription("2000000000000001", at=1_750_000_000_000)
    then = ledger.subscription("2000000000000001", at=1_750_000_000_000, as_of=1_750_000_000_000)  # as known then
    known_now = ledger.customer("token", at=datetime(2025, 10, 3, tzinfo=timezone.utc), as_of=None)
    if sub is not None and sub.status == Status.BILLING_RETRY:
        print(sub.expirationIntent, sub.isInBillingRetryPeriod)
    summary = ledger.summary()
    print(summary.events, len(summary.disagreements or []))
