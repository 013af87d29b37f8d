#!/usr/bin/env python3
"""lifecycles.py TESTPKI_DIR OUTDIR [--seed N] [--random N] -- signed purchase lifecycles for the ledger's tests.

Signs realistic App Store lifecycles with the test PKI that Tests/support/testpki.py wrote to TESTPKI_DIR (Apple's chain
shape: its leaf key, leaf, intermediate and root), and writes OUTDIR/lifecycles.json:

  scenarios   hand-written lifecycles, one behaviour each (purchase and renewals, billing failure with and without a
              grace period, recovery, voluntary expiry, upgrade, downgrade, offers, renewal extension, refund and
              reversal, Family Sharing revocation, consumables with refunds, one-time charges, resubscribe), each with
              `expect`: the state at several instants, written from Apple's documentation (the rule cited beside each
              one, from ../shared/docs/apple-lifecycle.md), never from the ledger's output;
  random      N seeded random walks over Apple's lifecycle (the same transitions), for the property tests: any order
              of their events must give one state, and every notification's data.status must be reproduced;
  bad         signed values the ledger must refuse, with the verifier's status and reason;
  bitemporal  lifecycles whose answers depend on the knowledge time (docs/ledger.md, "Bitemporal queries"): a refund
              signed three days after its revocationDate, a backfill signed months after the purchases, a billing
              failure signed after the period ended. Their expectations carry "asOf": absent = the query's default
              (now: everything known), "now" = the current time passed explicitly, a number = that knowledge time.
              (Generated last, from a seed of their own, so the other sections do not change.)

Every lifecycle is delivered twice: `notifications` (App Store Server Notifications V2, in signedDate order: each
carries data.status, Apple's status as of its signedDate, set here from the notification type's documented meaning)
and `history` (what a catch-up reads at `historyDate`: Get Transaction History pages of 20 signed transactions and Get
All Subscription Statuses' signed renewal infos, all signed at that date).

An expectation `{"at", "subscription" | "customer", ...}` lists the fields the answer must have (a subset); "absent"
means the field must be missing. `"asOf"` (a number: the knowledge time; "now": the current time given explicitly)
asks as known then; without it, the query's default (now: everything known). `"deliveries"` says which deliveries it holds for (default: both when `at` is at or
after historyDate, else notifications only).

Dependencies: Python 3.9+, cryptography (as testpki.py).
"""

from __future__ import annotations

import json
import os
import random
import sys
import uuid as uuidlib

from cryptography.hazmat.primitives import serialization

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testpki as P  # noqa: E402

D = 86_400_000
H = 3_600_000
MIN = 60_000
T0 = P.ms(P.utc(2025, 3, 3))           # inside the test leaf's validity (2024-2030)
BUNDLE = P.BUNDLE
ENV = "Sandbox"
GROUP = "20250303"
MONTH = 30 * D
PRODUCTS = {"basic": "com.example.testpki.basic.monthly", "premium": "com.example.testpki.premium.monthly",
            "family": "com.example.testpki.family.monthly"}
COINS = "com.example.testpki.coins100"
PRO = "com.example.testpki.pro.lifetime"
PASS = "com.example.testpki.season.pass"

# data.status of each notification, as Apple documents the type/subtype (apple-lifecycle.md section 1, Effect, and
# section 2): the subscription's status as of the notification's signedDate. Types whose status depends on the phase
# (DID_CHANGE_RENEWAL_*, OFFER_REDEEMED, PRICE_INCREASE, CONSUMPTION_REQUEST, RENEWAL_EXTENDED) are only sent by this
# generator while the subscription is active, hence 1.
STATUS_OF = {
    ("SUBSCRIBED", "INITIAL_BUY"): 1, ("SUBSCRIBED", "RESUBSCRIBE"): 1,          # grant
    ("DID_RENEW", None): 1, ("DID_RENEW", "BILLING_RECOVERY"): 1,                # grant / keep
    ("DID_FAIL_TO_RENEW", None): 3,            # billing retry, no grace: "can stop service"
    ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"): 4,  # keep through grace
    ("GRACE_PERIOD_EXPIRED", None): 3,         # grace over, Apple still retries (section 5.1)
    ("EXPIRED", "VOLUNTARY"): 2, ("EXPIRED", "BILLING_RETRY"): 2,                 # revoke; retry has ended
    ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"): 1, ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"): 1,
    ("DID_CHANGE_RENEWAL_PREF", None): 1,
    ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"): 1, ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"): 1,
    ("OFFER_REDEEMED", "INITIAL_BUY"): 1, ("OFFER_REDEEMED", "RESUBSCRIBE"): 1, ("OFFER_REDEEMED", None): 1,
    ("PRICE_INCREASE", "PENDING"): 1, ("PRICE_INCREASE", "ACCEPTED"): 1,
    ("RENEWAL_EXTENDED", None): 1, ("CONSUMPTION_REQUEST", None): 1,
    ("REFUND", None): 5, ("REVOKE", None): 5,  # revoke that purchase (revocationDate set)
    ("REFUND_REVERSED", None): 1,              # grant back (only sent here within the paid period)
}


class Signer:
    """Signs with the leaf of TESTPKI_DIR (x5c leaf, intermediate, root: Apple's shape)."""

    def __init__(self, pki_dir: str):
        with open(os.path.join(pki_dir, "leaf_key.pem"), "rb") as f:
            self.key = serialization.load_pem_private_key(f.read(), None)
        self.chain = []
        for name in ("leaf.der", "intermediate.der", "root.der"):
            with open(os.path.join(pki_dir, name), "rb") as f:
                self.chain.append(f.read())

    def sign(self, payload: dict) -> str:
        return P.sign(payload, self.key, self.chain)


class World:
    """One delivery stream: the notifications in signedDate order and the final facts for the history delivery."""

    def __init__(self, signer: Signer, rng: random.Random, name: str):
        self.signer, self.rng, self.name = signer, rng, name
        self.notifications: list[dict] = []
        self.final_tx: dict[str, dict] = {}      # transactionId -> newest payload
        self.final_ri: dict[str, dict] = {}      # originalTransactionId -> newest payload
        self.serial = 0

    def new_id(self) -> str:
        self.serial += 1
        return str(2_000_000_000_000_000 + self.rng.randrange(10**12) * 1000 + self.serial % 1000)

    def uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def notify(self, at: int, ntype: str, subtype=None, tx=None, ri=None, status="doc") -> dict:
        data = {"appAppleId": P.APP_ID, "bundleId": BUNDLE, "bundleVersion": "421", "environment": ENV}
        if tx is not None:
            tx = dict(tx, signedDate=at)
            data["signedTransactionInfo"] = self.signer.sign(tx)
            self.final_tx[tx["transactionId"]] = tx
        if ri is not None:
            ri = dict(ri, signedDate=at)
            data["signedRenewalInfo"] = self.signer.sign(ri)
            self.final_ri[ri["originalTransactionId"]] = ri
        if status == "doc":
            status = STATUS_OF[(ntype, subtype)] if ri is not None or (tx or {}).get("type") == "Auto-Renewable Subscription" else None
        if status is not None:
            data["status"] = status
        n = P.notification(ntype, subtype, signed_date=at, uuid=self.uuid(), data=data)
        event = {"kind": "NOTIFICATION", "signed": self.signer.sign(n), "notificationType": ntype,
                 "subtype": subtype, "signedDate": at, "uuid": n["notificationUUID"]}
        if status is not None:
            event["status"] = status
        self.notifications.append(event)
        return event

    def remember(self, tx: dict):
        """A transaction version Apple changed without a notification (isUpgraded): seen by the history only."""
        self.final_tx[tx["transactionId"]] = tx

    def history(self, at: int) -> dict:
        """Get Transaction History (pages of 20) and Get All Subscription Statuses' renewal infos, signed at `at`."""
        txs = sorted(self.final_tx.values(), key=lambda t: (t["purchaseDate"], t["transactionId"]))
        signed = [self.signer.sign(dict(t, signedDate=at)) for t in txs]
        pages = [{"signedTransactions": signed[i:i + 20], "hasMore": i + 20 < len(signed)}
                 for i in range(0, max(len(signed), 1), 20)]
        infos = [self.signer.sign(dict(r, signedDate=at)) for _, r in sorted(self.final_ri.items())]
        return {"pages": pages, "signedRenewalInfos": infos}

    def one_time(self, at: int, product: str, ptype: str, token, quantity=1, ownership="PURCHASED") -> dict:
        tid = self.new_id()
        tx = {"transactionId": tid, "originalTransactionId": tid, "webOrderLineItemId": self.new_id(),
              "bundleId": BUNDLE, "productId": product, "purchaseDate": at, "originalPurchaseDate": at,
              "quantity": quantity, "type": ptype, "inAppOwnershipType": ownership, "environment": ENV,
              "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 990 * quantity,
              "currency": "USD"}
        if token:
            tx["appAccountToken"] = token
        self.notify(at, "ONE_TIME_CHARGE", tx=tx)
        return tx

    def refund_one_time(self, at: int, tx: dict, reason=0, rtype="REFUND_FULL") -> dict:
        tx.update(revocationDate=at, revocationReason=reason, revocationType=rtype, revocationPercentage=100000)
        self.notify(at, "REFUND", tx=tx)
        return tx

    def reverse_one_time(self, at: int, tx: dict) -> dict:
        for k in ("revocationDate", "revocationReason", "revocationType", "revocationPercentage"):
            tx.pop(k, None)
        self.notify(at, "REFUND_REVERSED", tx=tx)
        return tx


class Subscription:
    """One auto-renewable subscription (one originalTransactionId) and the events Apple sends about it."""

    def __init__(self, w: World, token, product="basic", ownership="PURCHASED"):
        self.w, self.token, self.ownership = w, token, ownership
        self.otid = w.new_id()
        self.product = PRODUCTS[product]
        self.auto_product = self.product
        self.auto_renew = 1
        self.tx: dict | None = None
        self.ri: dict = {}
        self.renewal_offer = None
        self.original_purchase = None

    # --- payloads
    def new_tx(self, purchase: int, expires: int, product=None, offer=None, reason="PURCHASE") -> dict:
        product = product or self.product
        tid = self.otid if self.tx is None else self.w.new_id()
        if self.original_purchase is None:
            self.original_purchase = purchase
        tx = {"transactionId": tid, "originalTransactionId": self.otid, "webOrderLineItemId": self.w.new_id(),
              "bundleId": BUNDLE, "productId": product, "subscriptionGroupIdentifier": GROUP,
              "purchaseDate": purchase, "originalPurchaseDate": self.original_purchase, "expiresDate": expires,
              "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": self.ownership,
              "environment": ENV, "transactionReason": reason, "storefront": "USA", "storefrontId": "143441",
              "price": 4990, "currency": "USD"}
        if self.token:
            tx["appAccountToken"] = self.token
        if offer:
            tx.update(offerType=offer[0], offerIdentifier=offer[1], offerDiscountType="PAY_AS_YOU_GO", offerPeriod="P1M")
        self.product = product
        self.tx = tx
        return tx

    def renewal(self, retry=False, grace=None, intent=None) -> dict:
        ri = {"originalTransactionId": self.otid, "autoRenewProductId": self.auto_product, "productId": self.product,
              "autoRenewStatus": self.auto_renew, "isInBillingRetryPeriod": retry, "environment": ENV,
              "recentSubscriptionStartDate": self.original_purchase, "renewalDate": self.tx["expiresDate"],
              "currency": "USD", "renewalPrice": 4990}
        if grace is not None:
            ri["gracePeriodExpiresDate"] = grace
        if intent is not None:
            ri["expirationIntent"] = intent
        if self.renewal_offer:
            ri.update(offerType=self.renewal_offer[0], offerIdentifier=self.renewal_offer[1])
        if self.token:
            ri["appAccountToken"] = self.token
        self.ri = ri
        return ri

    def note(self, at, ntype, subtype=None, tx=None, ri=None):
        return self.w.notify(at, ntype, subtype, tx=tx if tx is not None else self.tx, ri=ri if ri is not None else self.ri)

    # --- Apple's lifecycle (apple-lifecycle.md sections 1-3)
    def buy(self, at, ntype="SUBSCRIBED", subtype="INITIAL_BUY", offer=None, product=None, period=MONTH):
        self.auto_renew = 1
        if product:
            self.product = PRODUCTS[product]
        self.auto_product = self.product
        self.new_tx(at, at + period, offer=offer)
        return self.note(at, ntype, subtype, ri=self.renewal())

    def renew(self, at=None, period=MONTH):
        """DID_RENEW: a new transaction for the next period, from the old expiresDate; a pending product applies now."""
        start = self.tx["expiresDate"]
        at = at or start + MIN
        self.product = self.auto_product
        offer, self.renewal_offer = self.renewal_offer, None
        self.new_tx(start, start + period, offer=offer, reason="RENEWAL")
        return self.note(at, "DID_RENEW", ri=self.renewal())

    def fail(self, grace_days=None):
        """DID_FAIL_TO_RENEW (billing retry) or DID_FAIL_TO_RENEW/GRACE_PERIOD (grace until gracePeriodExpiresDate)."""
        exp = self.tx["expiresDate"]
        grace = exp + grace_days * D if grace_days else None
        self.note(exp + MIN, "DID_FAIL_TO_RENEW", "GRACE_PERIOD" if grace else None,
                  ri=self.renewal(retry=True, grace=grace, intent=2))
        return grace

    def grace_expired(self, grace):
        return self.note(grace + MIN, "GRACE_PERIOD_EXPIRED", ri=self.renewal(retry=True, grace=grace, intent=2))

    def recover(self, at, keep_renewal_date):
        """DID_RENEW/BILLING_RECOVERY: a new transaction from the recovery. Recovered within grace, the renewal date
        stays; without grace, paid days paused, so the period starts at the recovery (apple-lifecycle.md section 2)."""
        exp = self.tx["expiresDate"]
        end = exp + MONTH if keep_renewal_date else at + MONTH
        self.product = self.auto_product
        self.new_tx(at, end, reason="RENEWAL")
        return self.note(at, "DID_RENEW", "BILLING_RECOVERY", ri=self.renewal())

    def expire(self, at, subtype, intent):
        self.auto_renew = 0 if subtype == "VOLUNTARY" else self.auto_renew
        return self.note(at, "EXPIRED", subtype, ri=self.renewal(intent=intent))

    def set_auto_renew(self, at, on):
        self.auto_renew = 1 if on else 0
        return self.note(at, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED" if on else "AUTO_RENEW_DISABLED",
                         ri=self.renewal())

    def downgrade(self, at, product):
        self.auto_product = PRODUCTS[product]
        return self.note(at, "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", ri=self.renewal())

    def cancel_downgrade(self, at):
        self.auto_product = self.product
        return self.note(at, "DID_CHANGE_RENEWAL_PREF", None, ri=self.renewal())

    def upgrade(self, at, product):
        """Effective immediately: a new transaction and period; the old one is isUpgraded (seen through the history)."""
        old = dict(self.tx, isUpgraded=True)
        self.w.remember(old)
        self.auto_product = PRODUCTS[product]
        self.new_tx(at, at + MONTH, product=PRODUCTS[product])
        return self.note(at, "DID_CHANGE_RENEWAL_PREF", "UPGRADE", ri=self.renewal())

    def redeem_offer(self, at, offer):
        """OFFER_REDEEMED on the active subscription: the offer applies to the next renewal (renewal info)."""
        self.renewal_offer = offer
        return self.note(at, "OFFER_REDEEMED", None, ri=self.renewal())

    def extend(self, at, days):
        """RENEWAL_EXTENDED: the same transaction re-signed with the later expiresDate."""
        self.tx = dict(self.tx, expiresDate=self.tx["expiresDate"] + days * D)
        return self.note(at, "RENEWAL_EXTENDED", ri=self.renewal())

    def refund(self, at, reason=1, rtype="REFUND_FULL", pct=100000):
        self.tx = dict(self.tx, revocationDate=at, revocationReason=reason, revocationType=rtype,
                       revocationPercentage=pct)
        return self.note(at, "REFUND", ri=self.renewal())

    def reverse_refund(self, at):
        self.tx = {k: v for k, v in self.tx.items() if not k.startswith("revocation")}
        return self.note(at, "REFUND_REVERSED", ri=self.renewal())

    def family_revoke(self, at):
        self.tx = dict(self.tx, revocationDate=at, revocationReason=0, revocationType="FAMILY_REVOKE",
                       revocationPercentage=100000)
        return self.note(at, "REVOKE", ri=self.renewal())

    def inform(self, at, ntype, subtype=None):
        return self.note(at, ntype, subtype, ri=self.renewal())


# ----------------------------------------------------------------------------------------------------------------
# hand-written scenarios: expectations from Apple's documentation (apple-lifecycle.md section numbers in "rule")

def token(rng):
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


def scenario(signer, rng, name, doc, build):
    w = World(signer, rng, name)
    expect = build(w)
    w.notifications.sort(key=lambda n: n["signedDate"])
    last = max(e["signedDate"] for e in w.notifications)
    hdate = last + H
    return {"name": name, "doc": doc, "notifications": w.notifications, "historyDate": hdate,
            "history": w.history(hdate), "expect": expect}


def sub_expect(at, s, rule, **fields):
    return {"at": at, "subscription": s.otid, "rule": rule, **fields}


def cust_expect(at, customer, rule, **fields):
    return {"at": at, "customer": customer, "rule": rule, **fields}


def ent(product, reason, until=None):
    e = {"productId": product, "reason": reason}
    if until is not None:
        e["until"] = until
    return e


def scenarios(signer, rng):
    out = []

    def renewals_voluntary_expiry(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        s.renew()                                  # T2: T0+30d .. T0+60d
        s.set_auto_renew(T0 + 40 * D, False)
        s.expire(T0 + 60 * D + MIN, "VOLUNTARY", 1)
        b = PRODUCTS["basic"]
        return [
            sub_expect(T0 + H, s, "S2: expiresDate ahead -> 1 ACTIVE; E1 entitled until expiresDate (section 2)",
                       status=1, entitled=True, entitledUntil=T0 + MONTH, productId=b, autoRenewStatus=1),
            sub_expect(T0 + 45 * D, s, "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED: no change, access to expiresDate",
                       status=1, entitled=True, entitledUntil=T0 + 60 * D, autoRenewStatus=0),
            sub_expect(T0 + 60 * D + 2 * MIN, s, "EXPIRED/VOLUNTARY: revoke; 2 EXPIRED, expirationIntent 1 (section 2)",
                       status=2, entitled=False, entitledUntil="absent", expirationIntent=1),
            sub_expect(T0 + 61 * D, s, "EXPIRED without news: still 2 (section 2: past expiresDate, not in retry)",
                       status=2, entitled=False),
            cust_expect(T0 + 45 * D, t, "E1: an active subscription entitles to its product until expiresDate",
                        entitlements=[ent(b, "ACTIVE", T0 + 60 * D)]),
            cust_expect(T0 + 61 * D, t, "E1: expired grants nothing", entitlements=[]),
        ]
    out.append(scenario(signer, rng, "renewals-voluntary-expiry",
                        "purchase, one renewal, auto-renew turned off, expiry at the end of the period",
                        renewals_voluntary_expiry))

    def retry_no_grace_recovery(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        s.fail(None)                               # at T0+30d: billing retry, no grace
        s.recover(T0 + 35 * D, keep_renewal_date=False)
        return [
            sub_expect(T0 + 31 * D, s, "DID_FAIL_TO_RENEW (no subtype): 3 BILLING_RETRY, not entitled (section 2, 5.8)",
                       status=3, entitled=False, isInBillingRetryPeriod=True, gracePeriodExpiresDate="absent"),
            cust_expect(T0 + 31 * D, t, "StoreKit: inBillingRetryPeriod is not entitled", entitlements=[]),
            sub_expect(T0 + 36 * D, s, "DID_RENEW/BILLING_RECOVERY: grant; new period from the recovery (no grace)",
                       status=1, entitled=True, entitledUntil=T0 + 65 * D, isInBillingRetryPeriod=False),
        ]
    out.append(scenario(signer, rng, "billing-retry-recovery",
                        "billing failure without a grace period, then recovery", retry_no_grace_recovery))

    def grace_then_retry_then_expired(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        grace = s.fail(6)                          # grace until T0+36d
        s.grace_expired(grace)
        s.expire(T0 + 90 * D, "BILLING_RETRY", 2)
        b = PRODUCTS["basic"]
        return [
            sub_expect(T0 + 31 * D, s, "DID_FAIL_TO_RENEW/GRACE_PERIOD: 4, keep through grace (section 2)",
                       status=4, entitled=True, entitledUntil=T0 + 36 * D, gracePeriodExpiresDate=T0 + 36 * D,
                       isInBillingRetryPeriod=True),
            cust_expect(T0 + 31 * D, t, "StoreKit: inGracePeriod is entitled, until gracePeriodExpiresDate",
                        entitlements=[ent(b, "BILLING_GRACE_PERIOD", T0 + 36 * D)]),
            sub_expect(T0 + 36 * D + 2 * MIN, s, "GRACE_PERIOD_EXPIRED: 3, Apple keeps retrying (section 5.1)",
                       status=3, entitled=False),
            sub_expect(T0 + 36 * D + 30 * 1000, s,
                       "grace date passed before GRACE_PERIOD_EXPIRED is signed: 3 from the renewal info alone",
                       status=3, entitled=False),
            sub_expect(T0 + 91 * D, s, "EXPIRED/BILLING_RETRY: retry ended, 2 (section 5.1)", status=2,
                       entitled=False, expirationIntent=2, isInBillingRetryPeriod=False),
        ]
    out.append(scenario(signer, rng, "grace-retry-expired",
                        "billing failure with a 6-day grace period, grace expires, billing retry ends",
                        grace_then_retry_then_expired))

    def grace_recovery(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        s.fail(16)
        s.recover(T0 + 33 * D, keep_renewal_date=True)
        return [
            sub_expect(T0 + 32 * D, s, "grace: 4 until gracePeriodExpiresDate", status=4,
                       entitledUntil=T0 + 46 * D),
            sub_expect(T0 + 34 * D, s, "recovered in grace: 1, the renewal date unchanged (section 2, bgp)", status=1,
                       entitledUntil=T0 + 60 * D, gracePeriodExpiresDate="absent"),
        ]
    out.append(scenario(signer, rng, "grace-recovery", "billing failure, recovery inside a 16-day grace period",
                        grace_recovery))

    def upgrade(w):
        t = token(rng)
        s = Subscription(w, t, "basic")
        s.buy(T0)
        s.upgrade(T0 + 10 * D, "premium")
        hdate = T0 + 10 * D + H
        p, b = PRODUCTS["premium"], PRODUCTS["basic"]
        return [
            sub_expect(T0 + 5 * D, s, "before the upgrade: basic", status=1, productId=b),
            sub_expect(T0 + 11 * D, s, "UPGRADE: effective immediately, new period (section 1)", status=1,
                       productId=p, entitledUntil=T0 + 40 * D),
            cust_expect(T0 + 11 * D, t, "isUpgraded: entitlement from the other transaction (section 3, 5.6)",
                        entitlements=[ent(p, "ACTIVE", T0 + 40 * D)]),
            sub_expect(hdate + MIN, s, "after the history catch-up: the old transaction is isUpgraded",
                       productId=p, upgradedFromProductId=b, deliveries=["history", "both"]),
        ]
    out.append(scenario(signer, rng, "upgrade", "upgrade within the group, effective immediately", upgrade))

    def downgrade(w):
        t = token(rng)
        s = Subscription(w, t, "premium")
        s.buy(T0)
        s.downgrade(T0 + 10 * D, "basic")
        s.renew()
        p, b = PRODUCTS["premium"], PRODUCTS["basic"]
        return [
            sub_expect(T0 + 11 * D, s, "DOWNGRADE: at next renewal; current plan unaffected (section 1, 3)",
                       status=1, productId=p, autoRenewProductId=b, pendingProductId=b, entitledUntil=T0 + 30 * D),
            cust_expect(T0 + 11 * D, t, "still premium until the renewal", entitlements=[ent(p, "ACTIVE", T0 + 30 * D)]),
            sub_expect(T0 + 31 * D, s, "renewed into the lower product", status=1, productId=b,
                       pendingProductId="absent"),
            cust_expect(T0 + 31 * D, t, "basic from the renewal", entitlements=[ent(b, "ACTIVE", T0 + 60 * D)]),
        ]
    out.append(scenario(signer, rng, "downgrade", "downgrade, effective at the next renewal", downgrade))

    def offers(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0, "OFFER_REDEEMED", "INITIAL_BUY", offer=(3, "SPRINGCODE"))
        s.redeem_offer(T0 + 20 * D, (2, "com.example.testpki.promo.loyal"))
        s.renew()
        return [
            sub_expect(T0 + H, s, "OFFER_REDEEMED/INITIAL_BUY: grant; offer fields on the transaction", status=1,
                       offerType=3, offerIdentifier="SPRINGCODE", entitled=True),
            sub_expect(T0 + 21 * D, s, "OFFER_REDEEMED (no subtype): keep; the offer applies to the renewal",
                       status=1, renewalOfferType=2, renewalOfferIdentifier="com.example.testpki.promo.loyal"),
            sub_expect(T0 + 31 * D, s, "renewed with the offer", status=1, offerType=2,
                       offerIdentifier="com.example.testpki.promo.loyal"),
        ]
    out.append(scenario(signer, rng, "offer-redemption", "an offer code purchase, then a promotional offer", offers))

    def extension(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        s.extend(T0 + 20 * D, 7)
        return [
            dict(sub_expect(T0 + 19 * D, s, "before the extension is signed, as known then: the original expiresDate",
                            status=1, expiresDate=T0 + 30 * D), asOf=T0 + 19 * D),
            dict(sub_expect(T0 + 19 * D, s, "asked now: the extension moves the current period's end (section 1; K2)",
                            status=1, expiresDate=T0 + 37 * D, entitledUntil=T0 + 37 * D), asOf="now"),
            sub_expect(T0 + 32 * D, s, "RENEWAL_EXTENDED: keep to the new expiresDate (section 1)", status=1,
                       entitled=True, entitledUntil=T0 + 37 * D),
            sub_expect(T0 + 38 * D, s, "past the extended date with no renewal: 2", status=2, entitled=False),
        ]
    out.append(scenario(signer, rng, "renewal-extension", "one subscription's renewal date extended by 7 days",
                        extension))

    def refund_reversal(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        s.set_auto_renew(T0 + 4 * D, False)        # the App Store turns auto-renew off after a refund request
        s.inform(T0 + 4 * D + H, "CONSUMPTION_REQUEST")
        s.refund(T0 + 5 * D, reason=1)
        s.reverse_refund(T0 + 8 * D)
        return [
            sub_expect(T0 + 4 * D + 2 * H, s, "CONSUMPTION_REQUEST: informational", status=1, entitled=True),
            sub_expect(T0 + 6 * D, s, "REFUND: revoke; 5 REVOKED with revocationDate and reason (section 1, 3)",
                       status=5, entitled=False, revocationReason=1, revocationType="REFUND_FULL",
                       revocationDate=T0 + 5 * D),
            sub_expect(T0 + 9 * D, s, "REFUND_REVERSED: grant back, renewal date unchanged (section 5.4)", status=1,
                       entitled=True, entitledUntil=T0 + 30 * D, revocationDate="absent"),
        ]
    out.append(scenario(signer, rng, "refund-reversal", "a subscription refunded, then the refund reversed",
                        refund_reversal))

    def family(w):
        owner, member = token(rng), token(rng)
        own = Subscription(w, owner, "family")
        own.buy(T0)
        shared = Subscription(w, member, "family", ownership="FAMILY_SHARED")
        shared.buy(T0 + H)                         # SUBSCRIBED/INITIAL_BUY: first Family Sharing access
        pro = w.one_time(T0 + 2 * H, PRO, "Non-Consumable", member, ownership="FAMILY_SHARED")
        shared.family_revoke(T0 + 12 * D)
        pro.update(revocationDate=T0 + 12 * D, revocationReason=0, revocationType="FAMILY_REVOKE",
                   revocationPercentage=100000)
        w.notify(T0 + 12 * D + MIN, "REVOKE", tx=pro)
        f = PRODUCTS["family"]
        return [
            sub_expect(T0 + 11 * D, shared, "family access: entitled, FAMILY_SHARED (section 3)", status=1,
                       entitled=True, inAppOwnershipType="FAMILY_SHARED"),
            cust_expect(T0 + 11 * D, member, "the member: the shared subscription and non-consumable",
                        entitlements=[ent(PRO, "NON_CONSUMABLE"), ent(f, "ACTIVE", T0 + H + MONTH)]),
            sub_expect(T0 + 13 * D, shared, "REVOKE: 5 for that member, FAMILY_REVOKE, reason 0 (section 3)",
                       status=5, entitled=False, revocationType="FAMILY_REVOKE", revocationReason=0),
            cust_expect(T0 + 13 * D, member, "REVOKE covers non-consumables too (section 1)", entitlements=[]),
            cust_expect(T0 + 13 * D, owner, "the purchaser keeps access", entitlements=[ent(f, "ACTIVE", T0 + MONTH)]),
        ]
    out.append(scenario(signer, rng, "family-sharing-revoke",
                        "a purchaser and a family member; sharing ends for the member", family))

    def consumables(w):
        t = token(rng)
        a = w.one_time(T0, COINS, "Consumable", t)
        w.one_time(T0 + D, COINS, "Consumable", t)
        c = w.one_time(T0 + 2 * D, COINS, "Consumable", t, quantity=5)
        w.refund_one_time(T0 + 3 * D, c, reason=0)
        _ = a
        return [
            cust_expect(T0 + 2 * D + H, t, "ONE_TIME_CHARGE: consumables bought, none lasting", entitlements=[],
                        consumables=[{"productId": COINS, "purchasedQuantity": 7, "refundedQuantity": 0,
                                      "transactions": 3, "refundedTransactions": 0}]),
            cust_expect(T0 + 4 * D, t, "REFUND of a consumable: refunded (section 1, any product type)",
                        entitlements=[],
                        consumables=[{"productId": COINS, "purchasedQuantity": 7, "refundedQuantity": 5,
                                      "transactions": 3, "refundedTransactions": 1}]),
        ]
    out.append(scenario(signer, rng, "consumables", "three consumable purchases, one refunded", consumables))

    def one_time(w):
        t = token(rng)
        pro = w.one_time(T0, PRO, "Non-Consumable", t)
        w.one_time(T0 + H, PASS, "Non-Renewing Subscription", t)
        w.refund_one_time(T0 + 10 * D, pro, reason=1)
        w.reverse_one_time(T0 + 15 * D, pro)
        return [
            cust_expect(T0 + 2 * H, t, "ONE_TIME_CHARGE: non-consumable and non-renewing granted, no end from Apple",
                        entitlements=[ent(PASS, "NON_RENEWING_SUBSCRIPTION"), ent(PRO, "NON_CONSUMABLE")]),
            cust_expect(T0 + 11 * D, t, "REFUND: revoke that purchase", entitlements=[ent(PASS, "NON_RENEWING_SUBSCRIPTION")]),
            cust_expect(T0 + 16 * D, t, "REFUND_REVERSED: grant back",
                        entitlements=[ent(PASS, "NON_RENEWING_SUBSCRIPTION"), ent(PRO, "NON_CONSUMABLE")]),
        ]
    out.append(scenario(signer, rng, "one-time-charges",
                        "a non-consumable (refunded, then reversed) and a non-renewing subscription", one_time))

    def resubscribe(w):
        s = Subscription(w, None)                 # no appAccountToken: the customer is the originalTransactionId
        s.buy(T0)
        s.set_auto_renew(T0 + 10 * D, False)
        s.expire(T0 + 30 * D + MIN, "VOLUNTARY", 1)
        s.buy(T0 + 50 * D, "SUBSCRIBED", "RESUBSCRIBE", product="premium")
        s.inform(T0 + 55 * D, "PRICE_INCREASE", "PENDING")
        p = PRODUCTS["premium"]
        return [
            sub_expect(T0 + 40 * D, s, "expired between", status=2, entitled=False),
            sub_expect(T0 + 51 * D, s, "SUBSCRIBED/RESUBSCRIBE to another product of the group: grant", status=1,
                       productId=p, entitledUntil=T0 + 80 * D, customerId=s.otid),
            cust_expect(T0 + 56 * D, s.otid, "PRICE_INCREASE: informational; customer is the originalTransactionId",
                        entitlements=[ent(p, "ACTIVE", T0 + 80 * D)]),
        ]
    out.append(scenario(signer, rng, "resubscribe", "voluntary expiry, then a resubscription to another product",
                        resubscribe))
    return out


# ----------------------------------------------------------------------------------------------------------------
# bitemporal queries: the instant asked about (`at`) and the knowledge time (`asOf`), expectations from Apple's
# documentation as above. Every instant here is long past, so the default (now) knows everything these lifecycles sign.

def bitemporal(signer, rng):
    out = []
    b = PRODUCTS["basic"]

    def refund_signed_late(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)                                  # T0 .. T0+30d
        revoked = T0 + 5 * D
        # Apple refunded at T0+5d (revocationDate: "when Apple refunded", AL section 3); the REFUND that carries the
        # re-signed transaction is signed three days later.
        s.tx = dict(s.tx, revocationDate=revoked, revocationReason=1, revocationType="REFUND_FULL",
                    revocationPercentage=100000)
        s.note(revoked + 3 * D, "REFUND", ri=s.renewal())
        between = revoked + D
        known_then = ["notifications", "both"]
        return [
            sub_expect(between, s, "asked now: REFUND revokes from revocationDate (AL section 1 REFUND, section 3 "
                       "revocationDate) -> 5 REVOKED, not entitled (StoreKit revoked)", status=5, entitled=False,
                       revocationDate=revoked, deliveries=["notifications", "history", "both"]),
            cust_expect(between, t, "asked now: a revoked subscription entitles to nothing (E1, StoreKit revoked)",
                        entitlements=[], deliveries=["notifications", "history", "both"]),
            dict(sub_expect(between, s, "asOf now given explicitly: the same as the default", status=5,
                            entitled=False, deliveries=["notifications", "history", "both"]), asOf="now"),
            dict(sub_expect(between, s, "as known then (asOf = at): only SUBSCRIBED was signed, expiresDate ahead -> "
                            "1 ACTIVE, entitled (S2; data.status means as of signedDate, AL section 1)", status=1,
                            entitled=True, entitledUntil=T0 + MONTH, revocationDate="absent", deliveries=known_then),
                 asOf=between),
            dict(cust_expect(between, t, "as known then: entitled until expiresDate (E1)",
                             entitlements=[ent(b, "ACTIVE", T0 + MONTH)], deliveries=known_then), asOf=between),
            sub_expect(revoked - D, s, "asked now, before revocationDate: the refund does not reach back -> 1 ACTIVE",
                       status=1, entitled=True, revocationDate="absent", deliveries=["notifications", "history", "both"]),
        ]
    out.append(scenario(signer, rng, "bitemporal-refund-signed-late",
                        "a refund whose REFUND notification is signed three days after its revocationDate",
                        refund_signed_late))

    def backfill(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        for _ in range(5):
            s.renew()                              # period n: T0+30n d .. T0+30(n+1) d, up to T0+180d
        w.one_time(T0 + 2 * D, PRO, "Non-Consumable", t)
        at = T0 + 45 * D                           # inside the second period
        history = ["history"]
        return [
            sub_expect(at, s, "backfill asked now: Get Transaction History returns every transaction (AL section 4); "
                       "the second period's expiresDate is ahead -> 1 ACTIVE (S2)", status=1, entitled=True,
                       entitledUntil=T0 + 60 * D, deliveries=["notifications", "history", "both"]),
            cust_expect(at, t, "backfill asked now: the subscription (E1) and the non-consumable (E2)",
                        entitlements=[ent(b, "ACTIVE", T0 + 60 * D), ent(PRO, "NON_CONSUMABLE")],
                        deliveries=["notifications", "history", "both"]),
            dict(cust_expect(at, t, "asOf now given explicitly: the same as the default",
                             entitlements=[ent(b, "ACTIVE", T0 + 60 * D), ent(PRO, "NON_CONSUMABLE")],
                             deliveries=["notifications", "history", "both"]), asOf="now"),
            dict(cust_expect(at, t, "backfill as known then (asOf = at): nothing was signed by then -> no "
                             "entitlement, no subscription, no purchase", entitlements=[], subscriptions=[],
                             purchases=[], deliveries=history), asOf=at),
            dict(cust_expect(at, t, "notifications as known then: they were signed at the time -> entitled",
                             entitlements=[ent(b, "ACTIVE", T0 + 60 * D), ent(PRO, "NON_CONSUMABLE")],
                             deliveries=["notifications", "both"]), asOf=at),
        ]
    out.append(scenario(signer, rng, "bitemporal-backfill",
                        "five months of renewals and a non-consumable, delivered by a backfill signed after them",
                        backfill))

    def failure_signed_after_expiry(w):
        t = token(rng)
        s = Subscription(w, t)
        s.buy(T0)
        s.fail(16)                                 # DID_FAIL_TO_RENEW/GRACE_PERIOD signed at T0+30d+1min
        at = T0 + MONTH + 30 * 1000                # expired 30 s before; the failure not yet signed
        return [
            sub_expect(at, s, "asked now: grace is the start of billing retry, from expiresDate (AL section 2) -> 4 "
                       "BILLING_GRACE_PERIOD, entitled until gracePeriodExpiresDate (R2, S3)", status=4, entitled=True,
                       entitledUntil=T0 + 46 * D, deliveries=["notifications", "history", "both"]),
            dict(sub_expect(at, s, "as known then: past expiresDate with no newer signed fact -> 2 EXPIRED (S5)",
                            status=2, entitled=False, deliveries=["notifications", "both"]), asOf=at),
        ]
    out.append(scenario(signer, rng, "bitemporal-failure-signed-after-expiry",
                        "a billing failure with a grace period, signed a minute after the period ended",
                        failure_signed_after_expiry))
    return out


# ----------------------------------------------------------------------------------------------------------------
# random walks over the same lifecycle, for the property tests


def random_lifecycle(signer, rng, index):
    w = World(signer, rng, f"random-{index}")
    t = token(rng) if rng.random() < 0.85 else None
    start = T0 + rng.randrange(0, 60) * D + rng.randrange(0, 24) * H
    s = Subscription(w, t, rng.choice(["basic", "premium"]))
    if rng.random() < 0.3:
        s.buy(start, "OFFER_REDEEMED", "INITIAL_BUY", offer=(rng.choice([1, 3]), "OFFER" + str(index)))
    else:
        s.buy(start)
    alive = True
    for _ in range(rng.randrange(2, 9)):
        if not alive:
            break
        p, e = s.tx["purchaseDate"], s.tx["expiresDate"]
        mid = lambda f: p + int((e - p) * f)  # noqa: E731
        r = rng.random()
        if r < 0.08 and s.product == PRODUCTS["basic"]:
            s.upgrade(mid(0.3), "premium")
            continue
        if r < 0.16 and s.product == PRODUCTS["premium"] and s.auto_product == s.product:
            s.downgrade(mid(0.2), "basic")
            if rng.random() < 0.3:
                s.cancel_downgrade(mid(0.4))
        if rng.random() < 0.1:
            s.redeem_offer(mid(0.25), (2, "PROMO" + str(index)))
        if rng.random() < 0.08:
            s.inform(mid(0.3), "PRICE_INCREASE", rng.choice(["PENDING", "ACCEPTED"]))
        if rng.random() < 0.08:
            s.extend(mid(0.5), rng.choice([3, 7, 14]))
            e = s.tx["expiresDate"]
        if rng.random() < 0.07:
            s.refund(mid(0.6), reason=rng.choice([0, 1]), rtype=rng.choice(["REFUND_FULL", "REFUND_PRORATED"]),
                     pct=rng.choice([100000, 50000]))
            if rng.random() < 0.5:
                s.reverse_refund(mid(0.8))
            else:
                alive = False
                break
        if rng.random() < 0.15:
            s.set_auto_renew(mid(0.7), False)
            if rng.random() < 0.4:
                s.set_auto_renew(mid(0.9), True)
        # the end of the period
        if s.auto_renew == 0:
            s.expire(e + MIN, "VOLUNTARY", 1)
            if rng.random() < 0.4:
                s.buy(e + rng.randrange(2, 40) * D, "SUBSCRIBED", "RESUBSCRIBE")
                continue
            alive = False
            break
        r = rng.random()
        if r < 0.65:
            s.renew()
        elif r < 0.85:
            grace = s.fail(rng.choice([3, 6, 16]))
            if rng.random() < 0.5:
                s.recover(e + rng.randrange(1, (grace - e) // D) * D + H, keep_renewal_date=True)
            else:
                s.grace_expired(grace)
                if rng.random() < 0.5:
                    s.recover(grace + rng.randrange(1, 30) * D, keep_renewal_date=False)
                else:
                    s.expire(e + 60 * D, "BILLING_RETRY", 2)
                    alive = False
        else:
            s.fail(None)
            if rng.random() < 0.5:
                s.recover(e + rng.randrange(1, 40) * D, keep_renewal_date=False)
            else:
                s.expire(e + 60 * D, "BILLING_RETRY", 2)
                alive = False
    if rng.random() < 0.35:
        member = Subscription(w, token(rng), "family", ownership="FAMILY_SHARED")
        member.buy(start + H)
        if rng.random() < 0.6:
            member.family_revoke(start + rng.randrange(2, 25) * D)
    for k in range(rng.randrange(0, 4)):
        c = w.one_time(start + k * D + 2 * H, COINS, "Consumable", t, quantity=rng.choice([1, 1, 5]))
        if rng.random() < 0.3:
            w.refund_one_time(start + k * D + 5 * H, c)
    if rng.random() < 0.5:
        pro = w.one_time(start + 3 * H, PRO, "Non-Consumable", t)
        if rng.random() < 0.3:
            w.refund_one_time(start + 4 * D, pro)
            if rng.random() < 0.5:
                w.reverse_one_time(start + 9 * D, pro)
    w.notifications.sort(key=lambda n: n["signedDate"])
    hdate = max(n["signedDate"] for n in w.notifications) + H
    return {"name": w.name, "customer": t, "notifications": w.notifications, "historyDate": hdate,
            "history": w.history(hdate)}


# ----------------------------------------------------------------------------------------------------------------
# values the ledger must refuse


def bad_inputs(signer, rng):
    w = World(signer, rng, "bad")
    s = Subscription(w, token(rng))
    s.buy(T0)
    good = w.notifications[-1]["signed"]
    tx = dict(s.tx, signedDate=T0)
    # A chain in Apple's shape under a root nobody trusts.
    forger = P.PKI()
    forged = P.sign(P.notification("DID_RENEW", signed_date=T0, uuid=w.uuid(), data={
        "appAppleId": P.APP_ID, "bundleId": BUNDLE, "environment": ENV, "status": 1,
        "signedTransactionInfo": P.sign(tx, forger.forged_leaf_key, [forger.forged_leaf, forger.forged_inter, forger.other_root])}),
        forger.forged_leaf_key, [forger.forged_leaf, forger.forged_inter, forger.other_root])
    h, p, sig = good.split(".")
    tampered = P.tamper_sig(good, P.flip(7))

    def note(**data):
        d = {"appAppleId": P.APP_ID, "bundleId": BUNDLE, "environment": ENV, "status": 1,
             "signedTransactionInfo": signer.sign(tx)}
        d.update(data)
        return signer.sign(P.notification("DID_RENEW", signed_date=T0, uuid=w.uuid(), data=d))

    return [
        {"name": "forged-chain", "kind": "NOTIFICATION", "signed": forged, "status": "VERIFICATION_FAILURE",
         "reason": "untrusted_chain"},
        {"name": "tampered-signature", "kind": "NOTIFICATION", "signed": tampered, "status": "VERIFICATION_FAILURE",
         "reason": "bad_signature"},
        {"name": "wrong-bundle", "kind": "NOTIFICATION", "signed": note(bundleId=P.OTHER_BUNDLE),
         "status": "INVALID_APP_IDENTIFIER", "reason": "wrong_bundle"},
        {"name": "wrong-environment", "kind": "NOTIFICATION", "signed": note(environment="Production"),
         "status": "INVALID_ENVIRONMENT", "reason": "wrong_environment"},
        {"name": "nested-wrong-environment", "kind": "NOTIFICATION",
         "signed": note(signedTransactionInfo=signer.sign(dict(tx, environment="Production"))),
         "status": "INVALID_ENVIRONMENT", "reason": "wrong_environment"},
        {"name": "transaction-wrong-bundle", "kind": "TRANSACTION", "signed": signer.sign(dict(tx, bundleId=P.OTHER_BUNDLE)),
         "status": "INVALID_APP_IDENTIFIER", "reason": "wrong_bundle"},
        {"name": "malformed", "kind": "NOTIFICATION", "signed": h + "." + p, "status": "INVALID_JWT_FORMAT",
         "reason": "malformed"},
        {"name": "not-a-transaction", "kind": "TRANSACTION", "signed": good, "status": "INVALID_APP_IDENTIFIER",
         "reason": "wrong_kind"},
        {"name": "oversized", "kind": "NOTIFICATION", "oversizedBytes": (1 << 20) + 1, "status": "INVALID_JWT_FORMAT",
         "reason": "input_too_large"},
    ]


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)
    if len(args) != 2 or set(opts) - {"seed", "random"}:
        print("usage: lifecycles.py TESTPKI_DIR OUTDIR [--seed=N] [--random=N]", file=sys.stderr)
        return 2
    seed, count = int(opts.get("seed", "21")), int(opts.get("random", "40"))
    signer = Signer(args[0])
    rng = random.Random(seed)
    doc = {"generated_by": "Tests/support/lifecycles.py", "seed": seed, "bundleId": BUNDLE, "environment": ENV,
           "appAppleId": P.APP_ID, "scenarios": scenarios(signer, rng),
           "random": [random_lifecycle(signer, rng, i) for i in range(count)], "bad": bad_inputs(signer, rng)}
    doc["bitemporal"] = bitemporal(signer, random.Random(seed + 1))
    os.makedirs(args[1], exist_ok=True)
    path = os.path.join(args[1], "lifecycles.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
    os.replace(path + ".tmp", path)
    n = sum(len(s["notifications"]) for s in doc["scenarios"] + doc["random"])
    print(f"lifecycles: {len(doc['scenarios'])} scenarios, {len(doc['random'])} random lifecycles, {n} notifications, "
          f"{len(doc['bad'])} bad inputs, {len(doc['bitemporal'])} bitemporal -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
