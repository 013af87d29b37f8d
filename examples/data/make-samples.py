#!/usr/bin/env python3
"""make-samples.py [--check] [OUTDIR] -- the TEST-ONLY sample signed data of examples/data/.

Writes, into OUTDIR (default: this folder):
  test-root-ca.der          the root of a throw-away test PKI (NOT Apple's): trust it only to verify these samples
  test-notification.jws     an App Store Server Notification V2 (SUBSCRIBED / INITIAL_BUY, Sandbox) whose
                            data.signedTransactionInfo and data.signedRenewalInfo are the two files below
  test-transaction.jws      a signed transaction (JWSTransaction)
  test-renewal-info.jws     a signed renewal info (JWSRenewalInfo)
for bundle id com.example.app, App Apple ID 1234567890, environment Sandbox.

The chain has the shape of Apple's (P-384 root -> P-384 intermediate with Apple's WWDR marker extension
1.2.840.113635.100.6.2.1 -> P-256 leaf with the receipt-signing marker 1.2.840.113635.100.6.11.1, ecdsa-with-SHA384),
so the library verifies the samples exactly as it verifies Apple's data. Everything is deterministic (the logic of
/work/shared/tools/gen_vectors.py): keys derived from fixed labels, RFC 6979 ECDSA nonces, fixed serials and dates.
The certificates are valid 2025-01-01 .. 2049-12-31 and the data is signed 2026-03-01, so the samples keep
verifying (without online checks the chain is checked at the payload's signedDate, as Apple's libraries do).

--check regenerates into a temporary folder and compares byte for byte with OUTDIR: exit 1 when they differ (the
committed samples are this script's output). Needs Python 3.9+ and `cryptography` >= 44 with OpenSSL >= 3.2
(deterministic ECDSA).
"""
from __future__ import annotations

import base64
import datetime as dt
import filecmp
import hashlib
import hmac
import json
import os
import sys
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

SEED = b"appstoreserver examples/data"
BUNDLE_ID, APP_APPLE_ID, ENVIRONMENT = "com.example.app", 1234567890, "Sandbox"
UTC = dt.timezone.utc
NOT_BEFORE, NOT_AFTER = dt.datetime(2025, 1, 1, tzinfo=UTC), dt.datetime(2049, 12, 31, tzinfo=UTC)
SIGNED = int(dt.datetime(2026, 3, 1, tzinfo=UTC).timestamp()) * 1000
DAY = 86_400_000
FILES = ("test-root-ca.der", "test-notification.jws", "test-transaction.jws", "test-renewal-info.jws")
OID_INTERMEDIATE = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")
OID_LEAF = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")
ORDER = {"secp256r1": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
         "secp384r1": int("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF"
                          "581A0DB248B0A77AECEC196ACCC52973", 16)}


def derive_key(label: str, curve: ec.EllipticCurve) -> ec.EllipticCurvePrivateKey:
    """A private key from (SEED, label): HMAC-SHA512 output reduced into [1, n-1]."""
    material = b"".join(hmac.new(SEED, f"{label}/{i}".encode(), hashlib.sha512).digest() for i in range(2))
    return ec.derive_private_key(int.from_bytes(material, "big") % (ORDER[curve.name] - 1) + 1, curve)


def name(cn: str, ou: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "appstoreserver examples - TEST ONLY, not Apple"),
                      x509.NameAttribute(NameOID.COUNTRY_NAME, "US")])


def cert(subject, key, issuer, issuer_key, serial, *, ca, marker=None):
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(serial).not_valid_before(NOT_BEFORE).not_valid_after(NOT_AFTER)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca and subject != issuer else None),
                        critical=True)
         .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                      data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                      encipher_only=False, decipher_only=False), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if subject != issuer:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                            critical=False)
    if marker is not None:
        b = b.add_extension(x509.UnrecognizedExtension(marker, b"\x05\x00"), critical=False)
    return b.sign(issuer_key, hashes.SHA384(), ecdsa_deterministic=True)


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jws(payload: dict, key, x5c: list) -> str:
    header = {"alg": "ES256", "x5c": [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode()
                                      for c in x5c]}
    signing_input = b64u(json.dumps(header, separators=(",", ":")).encode()) + "." + \
        b64u(json.dumps(payload, separators=(",", ":")).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
    return signing_input + "." + b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def make(outdir: str) -> None:
    root_key, inter_key = derive_key("root", ec.SECP384R1()), derive_key("intermediate", ec.SECP384R1())
    leaf_key = derive_key("leaf", ec.SECP256R1())
    root_name = name("appstoreserver TEST Root CA (not Apple)", "TEST ONLY")
    inter_name = name("appstoreserver TEST WWDR Intermediate (not Apple)", "TEST ONLY")
    root = cert(root_name, root_key, root_name, root_key, 0x5A3F11, ca=True)
    inter = cert(inter_name, inter_key, root_name, root_key, 0x5A3F12, ca=True, marker=OID_INTERMEDIATE)
    leaf = cert(name("appstoreserver TEST App Store signing (not Apple)", "TEST ONLY"), leaf_key, inter_name,
                inter_key, 0x5A3F13, ca=False, marker=OID_LEAF)
    chain = [leaf, inter, root]
    purchase = SIGNED - 60_000
    common = {"originalTransactionId": "2000000000000001", "productId": "com.example.app.pro.monthly",
              "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138", "appTransactionId": "704000000000000001"}
    transaction = {
        "transactionId": "2000000000000001", **common, "webOrderLineItemId": "2000000000000002",
        "bundleId": BUNDLE_ID, "subscriptionGroupIdentifier": "21000001", "purchaseDate": purchase,
        "originalPurchaseDate": purchase, "expiresDate": purchase + 30 * DAY, "quantity": 1,
        "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": SIGNED,
        "environment": ENVIRONMENT, "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441",
        "price": 9990, "currency": "USD"}
    renewal = {
        **common, "autoRenewProductId": "com.example.app.pro.monthly", "autoRenewStatus": 1,
        "signedDate": SIGNED, "environment": ENVIRONMENT, "recentSubscriptionStartDate": purchase,
        "renewalDate": purchase + 30 * DAY, "renewalPrice": 9990, "currency": "USD"}
    signed_tx, signed_ri = jws(transaction, leaf_key, chain), jws(renewal, leaf_key, chain)
    notification = {
        "notificationType": "SUBSCRIBED", "subtype": "INITIAL_BUY",
        "notificationUUID": "3d3e8a6c-7f5b-4c1e-9a2d-6b8f0c4e2a11",
        "data": {"appAppleId": APP_APPLE_ID, "bundleId": BUNDLE_ID, "bundleVersion": "1.0",
                 "environment": ENVIRONMENT, "signedTransactionInfo": signed_tx, "signedRenewalInfo": signed_ri,
                 "status": 1},
        "version": "2.0", "signedDate": SIGNED}
    os.makedirs(outdir, exist_ok=True)
    out = {"test-root-ca.der": root.public_bytes(serialization.Encoding.DER),
           "test-notification.jws": (jws(notification, leaf_key, chain) + "\n").encode(),
           "test-transaction.jws": (signed_tx + "\n").encode(),
           "test-renewal-info.jws": (signed_ri + "\n").encode()}
    for f in FILES:
        with open(os.path.join(outdir, f), "wb") as fh:
            fh.write(out[f])


def main(argv: list) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    outdir = args[0] if args else os.path.dirname(os.path.abspath(__file__))
    if not check:
        make(outdir)
        print(f"make-samples: wrote {', '.join(FILES)} into {outdir}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        make(tmp)
        differ = [f for f in FILES if not os.path.exists(os.path.join(outdir, f))
                  or not filecmp.cmp(os.path.join(tmp, f), os.path.join(outdir, f), shallow=False)]
    if differ:
        print(f"make-samples: FAIL: {', '.join(differ)} in {outdir} differ from this script's output "
              f"(run examples/data/make-samples.py and commit)")
        return 1
    print(f"make-samples: ok: {outdir} holds exactly this script's output ({len(FILES)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
