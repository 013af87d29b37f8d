#!/usr/bin/env python3
"""testpki.py OUTDIR -- the project's own test PKI and a suite of signed JWS fixtures.

Builds a throw-away PKI in the shape of Apple's App Store signing chain
(P-384 root -> P-384 intermediate carrying OID 1.2.840.113635.100.6.2.1 ->
P-256 leaf carrying OID 1.2.840.113635.100.6.11.1, ecdsa-with-SHA384), a set of
deliberately broken certificate variants, and ~80 compact JWS cases with the
results that the verification rules (docs/apple-reference.md section 1.3 plus
the project's error vocabulary) require.  Writes OUTDIR/manifest.json,
OUTDIR/README.txt, OUTDIR/*.der, OUTDIR/leaf_key.pem and OUTDIR/jws/<id>.jws.

Keys are random on every run; the case list and every expectation are fixed.
After writing, the script re-reads its own output and cross-checks it with an
independent, deliberately simple checker written against `cryptography`
(signature, chain, validity at the effective date, marker OIDs).  Any
disagreement makes the script exit with status 1.

Usage: python3 Tests/support/testpki.py OUTDIR [--no-selfcheck]
Dependencies: Python >= 3.9 standard library + cryptography >= 42 (tested with 48).
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import os
import re
import sys

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.x509.oid import NameOID

# --------------------------------------------------------------------------
# constants

BUNDLE = "com.example.testpki"
APP_ID = 1234567890
OTHER_APP_ID = 9876543210
OTHER_BUNDLE = "com.example.other"

OID_INTERMEDIATE_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")
OID_LEAF_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")
DER_NULL = b"\x05\x00"

REASON_STATUS = {
    "malformed": "INVALID_JWT_FORMAT",
    "unsupported_alg": "VERIFICATION_FAILURE",
    "missing_x5c": "INVALID_CHAIN_LENGTH",
    "chain_length": "INVALID_CHAIN_LENGTH",
    "empty_x5c": "INVALID_CHAIN_LENGTH",
    "bad_certificate": "INVALID_CERTIFICATE",
    "untrusted_chain": "VERIFICATION_FAILURE",
    "expired": "VERIFICATION_FAILURE",
    "missing_marker_oid": "VERIFICATION_FAILURE",
    "bad_signature": "VERIFICATION_FAILURE",
    "undecodable_payload": "INVALID_JWT_FORMAT",
    "wrong_bundle": "INVALID_APP_IDENTIFIER",
    "wrong_app_id": "INVALID_APP_IDENTIFIER",
    "wrong_kind": "INVALID_APP_IDENTIFIER",
    "wrong_environment": "INVALID_ENVIRONMENT",
}
CONFIG_REASONS = ("no_trust_anchor", "invalid_argument", "online_checks_unavailable")
CRYPTO_REASONS = ("malformed", "unsupported_alg", "missing_x5c", "empty_x5c", "chain_length",
                  "bad_certificate", "untrusted_chain", "expired",
                  "missing_marker_oid", "bad_signature")

OPS = ("verifyAndDecodeNotification", "verifyAndDecodeTransaction",
       "verifyAndDecodeRenewalInfo", "verifyAndDecodeAppTransaction",
       "verifyAndDecodeRealtimeRequest")


def utc(y, m, d, hh=0, mm=0, ss=0):
    return dt.datetime(y, m, d, hh, mm, ss, tzinfo=dt.timezone.utc)


def ms(t: dt.datetime) -> int:
    return int(t.timestamp()) * 1000 + t.microsecond // 1000


CA_FROM, CA_TO = utc(2020, 1, 1), utc(2040, 1, 1)
LEAF_FROM, LEAF_TO = utc(2024, 1, 1), utc(2030, 1, 1)
EXPIRED_FROM, EXPIRED_TO = utc(2020, 1, 1), utc(2021, 1, 1)

SIGNED = ms(utc(2025, 6, 1))                 # 1748736000000, outer signedDate
SIGNED_NESTED_TX = SIGNED - 10_000           # nested signedTransactionInfo
SIGNED_NESTED_RI = SIGNED - 5_000            # nested signedRenewalInfo
SIGNED_NESTED_AT = SIGNED - 20_000           # nested signedAppTransactionInfo
IN_EXPIRED_WINDOW = ms(utc(2020, 6, 1))      # inside the expired leaf's window
BEFORE_LEAF = ms(utc(2023, 6, 1))            # CA chain fine, good leaf not yet valid
AFTER_CAS = ms(utc(2041, 1, 1))              # everything expired

# --------------------------------------------------------------------------
# encoding helpers


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64std(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def jdump(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def raw_sig(key, data: bytes) -> bytes:
    """ECDSA over SHA-256, returned as fixed-width big-endian r||s (JWS form)."""
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    n = (key.curve.key_size + 7) // 8
    return r.to_bytes(n, "big") + s.to_bytes(n, "big")


def sign_input(signing_input: str, key) -> str:
    """Sign the literal text `signing_input` and return the full compact JWS."""
    return signing_input + "." + b64u(raw_sig(key, signing_input.encode("ascii")))


def header_for(x5c_list, alg="ES256", header_extra=None) -> dict:
    h = {"alg": alg}
    if x5c_list is not None:
        h["x5c"] = [b64std(c) if isinstance(c, (bytes, bytearray)) else
                    b64std(der(c)) if isinstance(c, x509.Certificate) else c
                    for c in x5c_list]
    h["typ"] = "JWT"
    if header_extra:
        h.update(header_extra)
    return h


def sign(payload_dict, key, x5c_list, alg="ES256", header_extra=None) -> str:
    """Compact JWS: b64url(header).b64url(payload).b64url(r||s).

    x5c_list entries may be Certificates, DER bytes or ready-made strings; None
    omits the x5c header parameter.  header_extra is merged into the header
    (a key mapped to None is removed)."""
    h = header_for(x5c_list, alg, header_extra)
    h = {k: v for k, v in h.items() if v is not None}
    return sign_input(b64u(jdump(h)) + "." + b64u(jdump(payload_dict)), key)


# --------------------------------------------------------------------------
# PKI

def name(cn: str, ou: str) -> x509.Name:
    return x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example TestPKI (not Apple)"),
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
    ])


ROOT_NAME = name("TestPKI Root CA - G3", "TestPKI Certification Authority")
INTER_NAME = name("TestPKI Worldwide Developer Relations Certification Authority", "G6")
LEAF_NAME = name("TestPKI Prod ECC Mac App Store and iTunes Store Receipt Signing",
                 "TestPKI Worldwide Developer Relations")


def _ku(ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=not ca, content_commitment=False,
                         key_encipherment=False, data_encipherment=False,
                         key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


def make_cert(subject, subject_key, issuer, issuer_key, not_before, not_after, *,
              ca: bool, path_len=None, key_cert_sign=None, marker=None,
              self_signed=False, hash_alg=None, bc_critical=True, with_ku=True, with_skid=True,
              with_akid=True, akid_critical=False) -> x509.Certificate:
    """The keyword arguments after hash_alg break one RFC 5280 rule each (X509_STRICT cases)."""
    b = (x509.CertificateBuilder()
         .subject_name(subject).issuer_name(issuer)
         .public_key(subject_key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(not_before).not_valid_after(not_after)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=path_len), critical=bc_critical))
    if with_ku:
        b = b.add_extension(_ku(ca if key_cert_sign is None else key_cert_sign), critical=True)
    if with_skid:
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()), critical=False)
    if not self_signed and with_akid:
        b = b.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=akid_critical)
    if marker is not None:
        b = b.add_extension(x509.UnrecognizedExtension(marker, DER_NULL), critical=False)
    return b.sign(issuer_key, hash_alg or hashes.SHA384())


class PKI:
    def __init__(self):
        p384 = lambda: ec.generate_private_key(ec.SECP384R1())  # noqa: E731
        p256 = lambda: ec.generate_private_key(ec.SECP256R1())  # noqa: E731

        # the real-shaped chain
        self.root_key, self.inter_key, self.leaf_key = p384(), p384(), p256()
        self.root = make_cert(ROOT_NAME, self.root_key, ROOT_NAME, self.root_key,
                              CA_FROM, CA_TO, ca=True, self_signed=True)
        self.inter = make_cert(INTER_NAME, self.inter_key, ROOT_NAME, self.root_key,
                               CA_FROM, CA_TO, ca=True, path_len=0,
                               marker=OID_INTERMEDIATE_MARKER)
        self.leaf = make_cert(LEAF_NAME, self.leaf_key, INTER_NAME, self.inter_key,
                              LEAF_FROM, LEAF_TO, ca=False, marker=OID_LEAF_MARKER)

        # forged root: same subject as root, unrelated key; plus a chain under it
        # whose names are identical to the genuine intermediate and leaf.
        self.other_root_key = p384()
        self.other_root = make_cert(ROOT_NAME, self.other_root_key, ROOT_NAME,
                                    self.other_root_key, CA_FROM, CA_TO, ca=True,
                                    self_signed=True)
        self.forged_inter_key, self.forged_leaf_key = p384(), p256()
        self.forged_inter = make_cert(INTER_NAME, self.forged_inter_key, ROOT_NAME,
                                      self.other_root_key, CA_FROM, CA_TO, ca=True,
                                      path_len=0, marker=OID_INTERMEDIATE_MARKER)
        self.forged_leaf = make_cert(LEAF_NAME, self.forged_leaf_key, INTER_NAME,
                                     self.forged_inter_key, LEAF_FROM, LEAF_TO, ca=False,
                                     marker=OID_LEAF_MARKER)

        # leaf without the leaf marker OID
        self.leaf_no_oid_key = p256()
        self.leaf_no_oid = make_cert(LEAF_NAME, self.leaf_no_oid_key, INTER_NAME,
                                     self.inter_key, LEAF_FROM, LEAF_TO, ca=False)

        # intermediate without the intermediate marker OID, and a (marked) leaf under it
        inter_no_oid_name = name("TestPKI Intermediate Without Marker", "G6")
        self.inter_no_oid_key, self.leaf_u_no_oid_key = p384(), p256()
        self.inter_no_oid = make_cert(inter_no_oid_name, self.inter_no_oid_key, ROOT_NAME,
                                      self.root_key, CA_FROM, CA_TO, ca=True, path_len=0)
        self.leaf_u_no_oid = make_cert(LEAF_NAME, self.leaf_u_no_oid_key, inter_no_oid_name,
                                       self.inter_no_oid_key, LEAF_FROM, LEAF_TO, ca=False,
                                       marker=OID_LEAF_MARKER)

        # leaf with a P-384 key (chain and OIDs fine)
        self.leaf_p384_key = p384()
        self.leaf_p384 = make_cert(LEAF_NAME, self.leaf_p384_key, INTER_NAME, self.inter_key,
                                   LEAF_FROM, LEAF_TO, ca=False, marker=OID_LEAF_MARKER)

        # expired leaf (2020-01-01 .. 2021-01-01), otherwise perfect
        self.leaf_expired_key = p256()
        self.leaf_expired = make_cert(LEAF_NAME, self.leaf_expired_key, INTER_NAME,
                                      self.inter_key, EXPIRED_FROM, EXPIRED_TO, ca=False,
                                      marker=OID_LEAF_MARKER)

        # self-signed leaf with the marker OID
        ss_name = name("TestPKI Self-Signed Receipt Signing", "TestPKI Worldwide Developer Relations")
        self.leaf_self_key = p256()
        self.leaf_self = make_cert(ss_name, self.leaf_self_key, ss_name, self.leaf_self_key,
                                   LEAF_FROM, LEAF_TO, ca=False, marker=OID_LEAF_MARKER,
                                   self_signed=True, hash_alg=hashes.SHA256())

        # intermediate with CA:FALSE (keyCertSign still asserted; marker present) + leaf
        inter_nca_name = name("TestPKI Intermediate CA FALSE", "G6")
        self.inter_nca_key, self.leaf_u_nca_key = p384(), p256()
        self.inter_nca = make_cert(inter_nca_name, self.inter_nca_key, ROOT_NAME,
                                   self.root_key, CA_FROM, CA_TO, ca=False,
                                   key_cert_sign=True, marker=OID_INTERMEDIATE_MARKER)
        self.leaf_u_nca = make_cert(LEAF_NAME, self.leaf_u_nca_key, inter_nca_name,
                                    self.inter_nca_key, LEAF_FROM, LEAF_TO, ca=False,
                                    marker=OID_LEAF_MARKER)

        # RFC 5280 rules Apple's Python library enforces with OpenSSL's X509_STRICT, one broken per chain: an
        # intermediate with basicConstraints not critical, without keyUsage, without a subject key id; a leaf
        # without an authority key id, with a critical one, with keyCertSign.
        self.strict = {}
        for label, inter_kw, leaf_kw in [
                ("intermediate-bc-not-critical", dict(bc_critical=False), {}),
                ("intermediate-no-key-usage", dict(with_ku=False), {}),
                ("intermediate-no-skid", dict(with_skid=False), {}),
                ("leaf-no-akid", {}, dict(with_akid=False)),
                ("leaf-akid-critical", {}, dict(akid_critical=True)),
                ("leaf-key-cert-sign", {}, dict(key_cert_sign=True))]:
            i_name = name(f"TestPKI Intermediate strict {label}", "G6")
            i_key, l_key = p384(), p256()
            inter = make_cert(i_name, i_key, ROOT_NAME, self.root_key, CA_FROM, CA_TO, ca=True, path_len=0,
                              marker=OID_INTERMEDIATE_MARKER, **inter_kw)
            leaf = make_cert(LEAF_NAME, l_key, i_name, i_key, LEAF_FROM, LEAF_TO, ca=False,
                             marker=OID_LEAF_MARKER, **leaf_kw)
            self.strict[label] = (l_key, [leaf, inter, self.root])

        # Xcode StoreKit-testing style: one self-signed P-256 certificate
        xc_name = name("TestPKI StoreKit Testing in Xcode", "Xcode")
        self.xcode_key = p256()
        self.xcode = make_cert(xc_name, self.xcode_key, xc_name, self.xcode_key,
                               LEAF_FROM, LEAF_TO, ca=False, self_signed=True,
                               hash_alg=hashes.SHA256())

        self.chain = [self.leaf, self.inter, self.root]

    def files(self):
        return {
            "root.der": self.root,
            "intermediate.der": self.inter,
            "leaf.der": self.leaf,
            "other_root.der": self.other_root,
            "forged_intermediate.der": self.forged_inter,
            "forged_leaf.der": self.forged_leaf,
            "leaf_no_oid.der": self.leaf_no_oid,
            "intermediate_no_oid.der": self.inter_no_oid,
            "leaf_under_intermediate_no_oid.der": self.leaf_u_no_oid,
            "leaf_p384.der": self.leaf_p384,
            "leaf_expired.der": self.leaf_expired,
            "leaf_self_signed.der": self.leaf_self,
            "intermediate_not_ca.der": self.inter_nca,
            "leaf_under_intermediate_not_ca.der": self.leaf_u_nca,
            "xcode.der": self.xcode,
        }


# --------------------------------------------------------------------------
# payloads (section 1.6 models; all dates in ms since 1970)

DROP = object()


def upd(base: dict, **kw) -> dict:
    d = copy.deepcopy(base)
    for k, v in kw.items():
        if v is DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


TOKEN = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
D = 86_400_000


def transaction(**kw):
    base = {
        "transactionId": "2000000912345678",
        "originalTransactionId": "2000000900000001",
        "webOrderLineItemId": "2000000088776655",
        "bundleId": BUNDLE,
        "productId": "com.example.testpki.premium.monthly",
        "subscriptionGroupIdentifier": "21445566",
        "purchaseDate": SIGNED - 60_000,
        "originalPurchaseDate": ms(utc(2025, 3, 1, 12)),
        "expiresDate": SIGNED - 60_000 + 30 * D,
        "quantity": 1,
        "type": "Auto-Renewable Subscription",
        "appAccountToken": TOKEN,
        "inAppOwnershipType": "PURCHASED",
        "signedDate": SIGNED,
        "offerType": 2,
        "offerIdentifier": "com.example.testpki.promo.spring",
        "environment": "Sandbox",
        "transactionReason": "RENEWAL",
        "storefront": "USA",
        "storefrontId": "143441",
        "price": 9990,
        "currency": "USD",
        "offerDiscountType": "SOMETHING_NEW",
        "offerPeriod": "P1M",
        "appTransactionId": "704512345678901234",
        "futureField": {"x": 1},
    }
    return upd(base, **kw)


def renewal_info(**kw):
    base = {
        "originalTransactionId": "2000000900000001",
        "autoRenewProductId": "com.example.testpki.premium.yearly",
        "productId": "com.example.testpki.premium.monthly",
        "autoRenewStatus": 1,
        "isInBillingRetryPeriod": False,
        "priceIncreaseStatus": 1,
        "signedDate": SIGNED,
        "environment": "Sandbox",
        "recentSubscriptionStartDate": ms(utc(2025, 3, 1, 12)),
        "renewalDate": SIGNED - 60_000 + 30 * D,
        "currency": "USD",
        "renewalPrice": 59990,
        "offerDiscountType": "PAY_AS_YOU_GO",
        "eligibleWinBackOfferIds": ["com.example.testpki.winback.1"],
        "appAccountToken": TOKEN,
        "appTransactionId": "704512345678901234",
        "renewalBillingPlanType": "BILLED_UPFRONT",
    }
    return upd(base, **kw)


def app_transaction(**kw):
    base = {
        "receiptType": "Sandbox",
        "appAppleId": APP_ID,
        "bundleId": BUNDLE,
        "applicationVersion": "4.2.1",
        "versionExternalIdentifier": 0,
        "receiptCreationDate": SIGNED,
        "originalPurchaseDate": ms(utc(2024, 11, 5, 8, 30)),
        "originalApplicationVersion": "1.0",
        "deviceVerification": "ab2CdEfGhIjKlMnOpQrStUvWxYz0123456789+/ABCDEFGhIjKlMnOpQrStUvWx",
        "deviceVerificationNonce": "3f2b6f1c-9a4e-4d2b-8c7a-5e6f7a8b9c0d",
        "appTransactionId": "704512345678901234",
        "originalPlatform": "iOS",
    }
    return upd(base, **kw)


def realtime_request(**kw):
    base = {
        "originalTransactionId": "2000000900000001",
        "appAppleId": APP_ID,
        "productId": "com.example.testpki.premium.monthly",
        "userLocale": "en-US",
        "requestIdentifier": "a1d2c3b4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
        "signedDate": SIGNED,
        "environment": "Sandbox",
    }
    return upd(base, **kw)


def notification(ntype, subtype=None, signed_date=SIGNED, uuid="0f4a7c52-5f3c-4e4b-9c1a-2b3d4e5f6a7b",
                 **sub):
    n = {"notificationType": ntype}
    if subtype:
        n["subtype"] = subtype
    n["notificationUUID"] = uuid
    n.update(sub)
    n["version"] = "2.0"
    n["signedDate"] = signed_date
    return n


# --------------------------------------------------------------------------
# case table

SBX = {"rootCertificates": ["root.der"], "bundleId": BUNDLE, "environment": "Sandbox",
       "appAppleId": None, "enableOnlineChecks": False}


def verifier(**kw):
    v = dict(SBX)
    v.update(kw)
    return v


PROD = verifier(environment="Production", appAppleId=APP_ID)
XCODE = verifier(environment="Xcode")
LOCAL = verifier(environment="LocalTesting")

FIELD_KEYS = {
    "verifyAndDecodeTransaction": ["transactionId", "originalTransactionId", "bundleId",
                                   "productId", "type", "quantity", "price", "currency",
                                   "appAccountToken", "offerDiscountType",
                                   "originalPurchaseDate", "signedDate", "environment"],
    "verifyAndDecodeRenewalInfo": ["originalTransactionId", "autoRenewProductId", "productId",
                                   "autoRenewStatus", "renewalPrice", "signedDate",
                                   "environment"],
    "verifyAndDecodeAppTransaction": ["receiptType", "appAppleId", "bundleId",
                                      "applicationVersion", "receiptCreationDate",
                                      "deviceVerificationNonce", "originalPlatform"],
    "verifyAndDecodeRealtimeRequest": ["originalTransactionId", "appAppleId", "productId",
                                       "userLocale", "requestIdentifier", "signedDate",
                                       "environment"],
    "verifyAndDecodeNotification": ["notificationType", "subtype", "notificationUUID",
                                    "version", "signedDate"],
}


class Suite:
    def __init__(self):
        self.cases = []
        self.files = {}

    def add(self, cid, op, jws, expect, verifier=SBX, payload=None, note=None, status=None):
        assert op in OPS, op
        assert cid not in self.files, cid
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", cid), cid
        c = {"id": cid, "path": f"jws/{cid}.jws", "operation": op,
             "verifier": copy.deepcopy(verifier)}
        if expect == "valid":
            c["expect"] = {"result": "valid"}
            assert payload is not None, cid
            fields = {}
            for k in FIELD_KEYS[op]:
                v = payload.get(k)
                if isinstance(v, bool) or v is None:
                    continue
                if isinstance(v, float):          # fractional ms are not exact compare material
                    continue
                if isinstance(v, (str, int)):
                    fields[k] = v
            c["fields"] = fields
        elif expect in CONFIG_REASONS:
            c["expect"] = {"result": "config_error", "reason": expect}
        else:
            # A wrong kind keeps the status of the identity check that exposed it (Apple's status), if any.
            c["expect"] = {"result": "error", "status": status or REASON_STATUS[expect], "reason": expect}
        if note:
            c["note"] = note
        self.cases.append(c)
        self.files[cid] = jws


def tamper_sig(jws: str, fn) -> str:
    h, p, s = jws.split(".")
    return f"{h}.{p}.{b64u(fn(base64.urlsafe_b64decode(s + '==')))}"


def flip(bitpos: int):
    def f(sig: bytes) -> bytes:
        b = bytearray(sig)
        b[bitpos // 8] ^= 1 << (bitpos % 8)
        return bytes(b)
    return f


def build(pki: PKI) -> Suite:
    S = Suite()
    key, chain = pki.leaf_key, pki.chain
    T, R, A, RT, N = OPS[1], OPS[2], OPS[3], OPS[4], OPS[0]

    # ---------------- payloads reused below
    tx = transaction()
    ri = renewal_info()
    at = app_transaction()
    rt = realtime_request()

    # nested JWS for the notifications (same leaf, own signedDate)
    n_tx = transaction(signedDate=SIGNED_NESTED_TX, futureField=DROP,
                       offerDiscountType="PAY_AS_YOU_GO")
    n_ri = renewal_info(signedDate=SIGNED_NESTED_RI)
    n_at = app_transaction(receiptCreationDate=SIGNED_NESTED_AT)
    n_tx_jws, n_ri_jws, n_at_jws = sign(n_tx, key, chain), sign(n_ri, key, chain), sign(n_at, key, chain)

    def did_renew(env="Sandbox", app_id=APP_ID, bundle=BUNDLE, tx_jws=n_tx_jws, ri_jws=n_ri_jws):
        return notification("DID_RENEW", data={
            "appAppleId": app_id, "bundleId": bundle, "bundleVersion": "421",
            "environment": env, "signedTransactionInfo": tx_jws,
            "signedRenewalInfo": ri_jws, "status": 1})

    def rescind(env="Sandbox", bundle=BUNDLE):
        return notification("RESCIND_CONSENT", uuid="8d5e3c1a-7b2f-4e6d-9a0c-1b2c3d4e5f60", appData={
            "appAppleId": APP_ID, "bundleId": bundle, "environment": env,
            "signedAppTransactionInfo": n_at_jws})

    def summary(env="Sandbox", app_id=APP_ID, bundle=BUNDLE):
        return notification("RENEWAL_EXTENSION", "SUMMARY",
                            uuid="2c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f", summary={
                                "environment": env, "appAppleId": app_id, "bundleId": bundle,
                                "productId": "com.example.testpki.premium.monthly",
                                "requestIdentifier": "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e",
                                "storefrontCountryCodes": ["USA", "CAN", "MEX"],
                                "succeededCount": 5, "failedCount": 2})

    def ext_token(sandbox=True, app_id=APP_ID, bundle=BUNDLE, subtype="UNREPORTED", **token):
        return notification("EXTERNAL_PURCHASE_TOKEN", subtype,
                            uuid="9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", externalPurchaseToken={
                                "externalPurchaseId": ("SANDBOX_" if sandbox else "")
                                + "b2f0c6d4-1e3a-4c5b-9d7e-8f6a5b4c3d2e",
                                "tokenCreationDate": ms(utc(2025, 5, 30, 9)),
                                "appAppleId": app_id, "bundleId": bundle, **token})

    def test_notif():
        return notification("TEST", uuid="6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d", data={
            "appAppleId": APP_ID, "bundleId": BUNDLE, "environment": "Sandbox"})

    # ======================================================== valid cases
    S.add("tx-valid", T, sign(tx, key, chain), "valid", payload=tx,
          note="unknown key futureField and unknown enum raw value offerDiscountType "
               "SOMETHING_NEW must be tolerated (raw value preserved)")
    p = transaction(transactionId="2000000912345679", purchaseDate=1697679936049.7297,
                    originalPurchaseDate=-62135769600000)
    S.add("tx-valid-fractional-negative-dates", T, sign(p, key, chain), "valid", payload=p,
          note="purchaseDate 1697679936049.7297 (fractional ms) and originalPurchaseDate "
               "-62135769600000 (year 1) must decode")
    p = transaction(appAccountToken=TOKEN.upper())
    S.add("tx-valid-uppercase-uuid", T, sign(p, key, chain), "valid", payload=p,
          note="UUIDs decode case-insensitively; compare appAccountToken case-insensitively")
    p = transaction(environment="Production", transactionId="410001234567890",
                    originalTransactionId="410001234567000")
    S.add("tx-valid-production", T, sign(p, key, chain), "valid", verifier=PROD, payload=p)
    S.add("tx-valid-two-roots", T, sign(tx, key, chain), "valid",
          verifier=verifier(rootCertificates=["other_root.der", "root.der"]), payload=tx,
          note="any configured root may anchor the chain")
    S.add("tx-valid-x5c2-not-an-anchor", T, sign(tx, key, [pki.leaf, pki.inter, pki.other_root]),
          "valid", payload=tx,
          note="x5c[2] is not used (the configured roots are the trust anchors); here it is "
               "other_root but leaf<-intermediate<-root.der holds")
    S.add("tx-valid-forged-chain-with-its-root", T,
          sign(tx, pki.forged_leaf_key, [pki.forged_leaf, pki.forged_inter, pki.other_root]),
          "valid", verifier=verifier(rootCertificates=["other_root.der"]), payload=tx,
          note="the chain under other_root is fine when other_root is the configured anchor")
    p = transaction(signedDate=IN_EXPIRED_WINDOW, purchaseDate=IN_EXPIRED_WINDOW - 60_000,
                    originalPurchaseDate=IN_EXPIRED_WINDOW - 60_000,
                    expiresDate=IN_EXPIRED_WINDOW - 60_000 + 30 * D)
    S.add("tx-valid-expired-leaf-signed-in-window", T,
          sign(p, pki.leaf_expired_key, [pki.leaf_expired, pki.inter, pki.root]), "valid",
          payload=p, note="leaf valid 2020-01-01..2021-01-01; chain checked at signedDate "
                          "2020-06-01 (offline), so it is valid")
    S.add("tx-valid-nested-from-did-renew", T, n_tx_jws, "valid", payload=n_tx,
          note="the data.signedTransactionInfo of notif-valid-did-renew, verified on its own")

    S.add("renewal-valid", R, sign(ri, key, chain), "valid", payload=ri)
    S.add("renewal-valid-verifier-bundle-not-checked", R, sign(ri, key, chain), "valid",
          verifier=verifier(bundleId=OTHER_BUNDLE), payload=ri,
          note="renewal info is checked for environment only; any verifier bundleId passes")
    S.add("renewal-valid-nested-from-did-renew", R, n_ri_jws, "valid", payload=n_ri)
    p = renewal_info(environment="Production")
    S.add("renewal-valid-production", R, sign(p, key, chain), "valid", verifier=PROD, payload=p)

    S.add("apptx-valid", A, sign(at, key, chain), "valid", payload=at,
          note="no signedDate; chain checked at receiptCreationDate")
    p = app_transaction(receiptType="Production", versionExternalIdentifier=872345123)
    S.add("apptx-valid-production", A, sign(p, key, chain), "valid", verifier=PROD, payload=p)
    p = app_transaction(receiptCreationDate=IN_EXPIRED_WINDOW,
                        originalPurchaseDate=IN_EXPIRED_WINDOW - D)
    S.add("apptx-valid-expired-leaf-receipt-created-in-window", A,
          sign(p, pki.leaf_expired_key, [pki.leaf_expired, pki.inter, pki.root]), "valid",
          payload=p, note="effective date for app transactions is receiptCreationDate "
                          "(2020-06-01, inside the expired leaf's window)")
    S.add("apptx-valid-nested-from-rescind-consent", A, n_at_jws, "valid", payload=n_at)

    S.add("realtime-valid", RT, sign(rt, key, chain), "valid", payload=rt)
    p = realtime_request(environment="Production")
    S.add("realtime-valid-production", RT, sign(p, key, chain), "valid", verifier=PROD, payload=p)
    p = realtime_request(appAppleId=OTHER_APP_ID)
    S.add("realtime-valid-sandbox-app-id-not-checked", RT, sign(p, key, chain), "valid",
          verifier=verifier(appAppleId=APP_ID, bundleId=OTHER_BUNDLE), payload=p,
          note="appAppleId is compared only for Production verifiers; there is no bundleId "
               "in a realtime request")

    p = did_renew()
    S.add("notif-valid-did-renew", N, sign(p, key, chain), "valid", payload=p,
          note="data.signedTransactionInfo / signedRenewalInfo are nested JWS from the same "
               "leaf with their own signedDate (outer-10s / outer-5s)")
    ptx = transaction(environment="Production", signedDate=SIGNED_NESTED_TX, futureField=DROP)
    pri = renewal_info(environment="Production", signedDate=SIGNED_NESTED_RI)
    p = did_renew(env="Production", tx_jws=sign(ptx, key, chain), ri_jws=sign(pri, key, chain))
    S.add("notif-valid-did-renew-production", N, sign(p, key, chain), "valid", verifier=PROD,
          payload=p)
    p = rescind()
    S.add("notif-valid-rescind-consent-appdata", N, sign(p, key, chain), "valid", payload=p,
          note="bundleId/appAppleId/environment come from appData")
    p = summary()
    S.add("notif-valid-summary", N, sign(p, key, chain), "valid",
          verifier=verifier(appAppleId=APP_ID), payload=p,
          note="bundleId/environment come from summary")
    p = ext_token(sandbox=True)
    S.add("notif-valid-external-purchase-token-sandbox", N, sign(p, key, chain), "valid",
          payload=p, note="externalPurchaseId starts with SANDBOX -> environment Sandbox")
    p = ext_token(sandbox=False)
    S.add("notif-valid-external-purchase-token-production", N, sign(p, key, chain), "valid",
          verifier=PROD, payload=p,
          note="externalPurchaseId without SANDBOX prefix -> environment Production")
    # Notifications v2.17: custom link tokens (subtypes CREATED and ACTIVE_TOKEN_REMINDER, tokenType and
    # tokenExpirationDate in the token).
    p = ext_token(subtype="CREATED", tokenType="ACQUISITION", tokenExpirationDate=ms(utc(2025, 11, 30, 9)))
    S.add("notif-valid-external-purchase-token-created", N, sign(p, key, chain), "valid", payload=p,
          note="Notifications v2.17: subtype CREATED, externalPurchaseToken.tokenType ACQUISITION, tokenExpirationDate")
    p = ext_token(subtype="ACTIVE_TOKEN_REMINDER", tokenType="SERVICES", tokenExpirationDate=ms(utc(2025, 12, 30, 9)))
    S.add("notif-valid-external-purchase-token-active-token-reminder", N, sign(p, key, chain), "valid", payload=p,
          note="Notifications v2.17: subtype ACTIVE_TOKEN_REMINDER, tokenType SERVICES")
    p = ext_token(subtype="CREATED", tokenType="LINK_OUT", tokenExpirationDate=ms(utc(2025, 12, 30, 9)))
    S.add("notif-valid-external-purchase-token-unknown-token-type", N, sign(p, key, chain), "valid", payload=p,
          note="a tokenType this library does not know (StoreKit documents LINK_OUT / IN_APP for Japan) is kept raw")
    p = test_notif()
    S.add("notif-valid-test", N, sign(p, key, chain), "valid", payload=p,
          note="TEST notification: data without signedTransactionInfo")
    p = did_renew(app_id=OTHER_APP_ID)
    S.add("notif-valid-sandbox-app-id-not-checked", N, sign(p, key, chain), "valid",
          verifier=verifier(appAppleId=APP_ID), payload=p,
          note="appAppleId is compared only for Production verifiers")
    p = did_renew()
    p["summary"] = summary(env="Production", bundle=OTHER_BUNDLE)["summary"]
    S.add("notif-valid-data-takes-precedence", N, sign(p, key, chain), "valid", payload=p,
          note="data is consulted before summary; the (mismatching) summary is ignored")

    # Xcode / LocalTesting: no signature, alg, x5c or chain checks
    xh = {"kid": "Apple_Xcode_Key"}
    x_tx = transaction(environment="Xcode", transactionId="0", originalTransactionId="0",
                       purchaseDate=1697679936049.7297, signedDate=1697679936056.2402,
                       storefront="USA", futureField=DROP)
    x_ri = renewal_info(environment="Xcode", originalTransactionId="0",
                        signedDate=1697679936711.3569)
    x_at = app_transaction(receiptType="Xcode", appAppleId=0,
                           receiptCreationDate=1697679936044.8928)
    x_tx_jws = sign(x_tx, pki.xcode_key, [pki.xcode], header_extra=xh)
    x_ri_jws = sign(x_ri, pki.xcode_key, [pki.xcode], header_extra=xh)
    x_at_jws = sign(x_at, pki.xcode_key, [pki.xcode], header_extra=xh)
    S.add("xcode-tx-valid", T, x_tx_jws, "valid", verifier=XCODE, payload=x_tx,
          note="Xcode verifier: signature/chain not checked; environment must be Xcode")
    S.add("xcode-renewal-valid", R, x_ri_jws, "valid", verifier=XCODE, payload=x_ri)
    S.add("xcode-apptx-valid", A, x_at_jws, "valid", verifier=XCODE, payload=x_at)
    S.add("xcode-tx-bad-signature-ignored", T, tamper_sig(x_tx_jws, flip(77)), "valid",
          verifier=XCODE, payload=x_tx, note="signature is not checked in Xcode mode")
    lt = transaction(environment="LocalTesting", futureField=DROP)
    S.add("localtesting-tx-valid-no-x5c", T,
          sign(lt, ec.generate_private_key(ec.SECP256R1()), None), "valid", verifier=LOCAL,
          payload=lt, note="LocalTesting verifier: header has only alg/typ, random key")
    S.add("xcode-tx-sandbox-verifier", T, x_tx_jws, "chain_length",
          note="1-cert x5c is rejected outside Xcode/LocalTesting before any payload check")
    S.add("xcode-renewal-sandbox-verifier", R, x_ri_jws, "chain_length")
    S.add("xcode-apptx-production-verifier", A, x_at_jws, "chain_length", verifier=PROD)
    S.add("xcode-verifier-sandbox-payload", T, sign(tx, key, chain), "wrong_environment",
          verifier=XCODE, note="a genuinely signed Sandbox transaction is still "
                               "environment-checked by an Xcode verifier")

    # ======================================================== malformed
    good = sign(tx, key, chain)
    h, pl, sg = good.split(".")
    S.add("tx-malformed-two-segments", T, f"{h}.{pl}", "malformed")
    S.add("tx-malformed-four-segments", T, good + "." + sg, "malformed")
    S.add("tx-malformed-empty", T, "", "malformed", note="file holds only a newline")
    # padded payload segment (signature is over the literal padded text)
    p = transaction()
    while len(b64u(jdump(p))) % 4 == 0:
        p["storefront"] = p["storefront"] + " "
    pseg = b64u(jdump(p))
    pseg += "=" * (-len(pseg) % 4)
    S.add("tx-malformed-padded-payload", T, sign_input(f"{h}.{pseg}", key), "malformed",
          note="base64url with '=' padding in the payload segment; signature covers it")
    S.add("tx-malformed-padded-signature", T, good + "==", "malformed",
          note="86-char signature segment followed by '==' padding")
    # standard-alphabet payload ('+' or '/')
    p = transaction()
    i = 0
    while not re.search(r"[-_]", b64u(jdump(p))):
        i += 1
        p["offerPeriod"] = "P1M" + "?" * i
    pseg = b64u(jdump(p)).translate(str.maketrans("-_", "+/"))
    S.add("tx-malformed-standard-base64-alphabet", T, sign_input(f"{h}.{pseg}", key),
          "malformed", note="payload segment uses '+' / '/' instead of '-' / '_'")
    bad_h = b64u(b'{"alg":"ES256","x5c":[') + ""
    S.add("tx-malformed-header-not-json", T, sign_input(f"{bad_h}.{pl}", key), "malformed")
    S.add("tx-malformed-invalid-characters", T, f"{h}!.{pl}.{sg}", "malformed")
    S.add("tx-malformed-payload-not-json", T,
          sign_input(f"{h}.{b64u(b'transactionId=2000000912345678')}", key), "malformed",
          note="payload segment is valid base64url but not JSON (INVALID_JWT_FORMAT either way)")
    npl = sign(did_renew(), key, chain).split(".")[1]
    S.add("notif-malformed-header-not-json", N,
          sign_input(f"{b64u(b'not a header')}.{npl}", key), "malformed")
    S.add("renewal-malformed-four-segments", R, sign(ri, key, chain) + ".x", "malformed")
    S.add("realtime-malformed-two-segments", RT, ".".join(sign(rt, key, chain).split(".")[:2]),
          "malformed")

    # ======================================================== header / x5c problems
    S.add("tx-alg-es384", T, sign(tx, key, chain, alg="ES384"), "unsupported_alg",
          note="header alg ES384 (signature itself is a valid ES256 one over the text)")
    S.add("tx-alg-none", T, sign(tx, key, chain, alg="none"), "unsupported_alg")
    S.add("notif-alg-hs256", N, sign(did_renew(), key, chain, alg="HS256"), "unsupported_alg")
    S.add("tx-missing-x5c", T, sign(tx, key, None), "missing_x5c")
    S.add("notif-missing-x5c-renamed", N,
          sign(did_renew(), key, None, header_extra={"x5cwrong": header_for(chain)["x5c"]}),
          "missing_x5c", note="x5c renamed to x5cwrong (Apple's missingX5CHeaderClaim shape)")
    S.add("tx-chain-length-2", T, sign(tx, key, [pki.leaf, pki.inter]), "chain_length")
    S.add("tx-chain-length-4", T, sign(tx, key, chain + [pki.root]), "chain_length")
    S.add("tx-x5c-empty", T, sign(tx, key, []), "empty_x5c",
          note="x5c is an empty list: its own reason (Apple's Python reports it unlike a short chain)")
    S.add("tx-x5c-leaf-not-base64", T,
          sign(tx, key, ["*** not base64 ***", pki.inter, pki.root]), "bad_certificate")
    S.add("tx-x5c-intermediate-not-der", T,
          sign(tx, key, [pki.leaf, b"\x30\x03\x02\x01\x00not a certificate", pki.root]),
          "bad_certificate", note="x5c[1] is valid base64 of bytes that are not a certificate")
    S.add("tx-leaf-p384-key", T,
          sign(tx, pki.leaf_p384_key, [pki.leaf_p384, pki.inter, pki.root]), "bad_certificate",
          note="chain and OIDs are valid; the leaf key is P-384 (signature: ECDSA-SHA256 "
               "on P-384, 96-byte r||s)")
    S.add("apptx-x5c-leaf-not-base64", A, sign(at, key, ["%%%", pki.inter, pki.root]),
          "bad_certificate")

    # ======================================================== trust
    S.add("tx-untrusted-other-root-configured", T, sign(tx, key, chain), "untrusted_chain",
          verifier=verifier(rootCertificates=["other_root.der"]),
          note="configured root has the same subject as the real issuer but a different key")
    S.add("tx-untrusted-self-signed-leaf", T,
          sign(tx, pki.leaf_self_key, [pki.leaf_self, pki.inter, pki.root]), "untrusted_chain")
    S.add("tx-untrusted-forged-chain", T,
          sign(tx, pki.forged_leaf_key, [pki.forged_leaf, pki.forged_inter, pki.other_root]),
          "untrusted_chain", note="leaf+intermediate issued by other_root (same names as the "
                                  "real ones); verifier trusts root.der")
    S.add("tx-untrusted-forged-chain-real-root-in-x5c", T,
          sign(tx, pki.forged_leaf_key, [pki.forged_leaf, pki.forged_inter, pki.root]),
          "untrusted_chain")
    for label, (l_key, x5c) in pki.strict.items():
        S.add(f"tx-strict-{label}", T, sign(tx, l_key, x5c), "untrusted_chain",
              note="breaks an RFC 5280 rule OpenSSL's X509_STRICT enforces (as Apple's Python library does)")
    S.add("tx-untrusted-forged-intermediate", T,
          sign(tx, key, [pki.leaf, pki.forged_inter, pki.root]), "untrusted_chain",
          note="genuine leaf with a name-identical intermediate from other_root")
    S.add("tx-untrusted-swapped-leaf-intermediate", T,
          sign(tx, key, [pki.inter, pki.leaf, pki.root]), "missing_marker_oid",
          note="x5c[0] must look like a leaf (Apple's leaf marker, a P-256 key) before its key checks the signature, "
               "and the signature comes before the chain: the intermediate in x5c[0] lacks the leaf marker")
    S.add("tx-untrusted-intermediate-ca-false", T,
          sign(tx, pki.leaf_u_nca_key, [pki.leaf_u_nca, pki.inter_nca, pki.root]),
          "untrusted_chain", note="intermediate has basicConstraints CA:FALSE")
    S.add("notif-untrusted-forged-chain", N,
          sign(did_renew(), pki.forged_leaf_key, [pki.forged_leaf, pki.forged_inter, pki.other_root]),
          "untrusted_chain")
    S.add("realtime-untrusted-self-signed-leaf", RT,
          sign(rt, pki.leaf_self_key, [pki.leaf_self, pki.inter, pki.root]), "untrusted_chain")
    # A non-self-signed CA configured as a root must not let an unrelated marked certificate stand in for x5c[1]:
    # OpenSSL builds leaf <- intermediate (from the trust store) <- root, so depth 1 is not x5c[1].
    S.add("tx-untrusted-x5c1-not-in-built-chain", T,
          sign(tx, key, [pki.leaf, pki.forged_inter, pki.root]), "untrusted_chain",
          verifier=verifier(rootCertificates=["root.der", "intermediate.der"]),
          note="the built chain's depth 1 (the trusted intermediate) is not x5c[1] (an unrelated marked CA)")

    # ======================================================== strict JSON: two readers must never disagree
    def sign_raw(payload_bytes, header_bytes=None):
        h = header_bytes if header_bytes is not None else jdump(header_for(chain))
        return sign_input(b64u(h) + "." + b64u(payload_bytes), key)

    tx_text = jdump(tx)
    S.add("tx-malformed-duplicate-bundle-id", T,
          sign_raw(tx_text[:-1] + b',"bundleId":"com.example.attacker"}'), "malformed",
          note="the verifier would read the first bundleId, JSON.parse / Python / jansson the last")
    S.add("tx-malformed-duplicate-key-nested", N,
          sign_raw(jdump(did_renew())[:-1] + b',"data":{"bundleId":"' + BUNDLE.encode() +
                   b'","environment":"Sandbox","environment":"Production"}}'), "malformed",
          note="a duplicate key at any depth (data.environment here; data itself twice too)")
    S.add("tx-malformed-header-duplicate-alg", T,
          sign_raw(tx_text, header_bytes=jdump(header_for(chain))[:-1] + b',"alg":"none"}'), "malformed",
          note="a JWS header with two alg members")
    S.add("tx-malformed-payload-bom", T, sign_raw(b"\xef\xbb\xbf" + tx_text), "malformed",
          note="a byte order mark before the JSON text")
    S.add("tx-malformed-invalid-utf8-unknown-field", T,
          sign_raw(tx_text[:-1] + b',"futureNote":"caf\xe9"}'), "malformed",
          note="invalid UTF-8 inside a field the model does not read would be handed back verbatim")
    S.add("tx-malformed-lone-surrogate", T, sign_raw(tx_text[:-1] + b',"futureNote":"\\ud800"}'), "malformed",
          note="a lone surrogate escape is not a Unicode string")
    S.add("tx-malformed-nesting-too-deep", T,
          sign_raw(tx_text[:-1] + b',"futureNote":' + b"[" * 40 + b"]" * 40 + b"}"), "malformed",
          note="nesting deeper than 32 levels")

    # ======================================================== identities compare as bytes
    S.add("tx-wrong-bundle-kelvin-sign", T, sign(transaction(bundleId="com.example.\u212aelvin"), key, chain),
          "wrong_bundle", verifier=verifier(bundleId="com.example.Kelvin"),
          note="U+212A KELVIN SIGN is canonically equivalent to K; a host comparing bytes sees another app")
    S.add("tx-wrong-bundle-nfd", T, sign(transaction(bundleId="com.example.cafe\u0301"), key, chain),
          "wrong_bundle", verifier=verifier(bundleId="com.example.caf\u00e9"),
          note="NFD and NFC spellings are different bytes")

    # ======================================================== dates
    exp_chain = [pki.leaf_expired, pki.inter, pki.root]
    S.add("tx-expired-leaf-signed-after-window", T, sign(tx, pki.leaf_expired_key, exp_chain),
          "expired", note="signedDate 2025-06-01 is after the leaf's notAfter 2021-01-01")
    p = transaction(signedDate=DROP)
    S.add("tx-expired-leaf-no-signed-date", T, sign(p, pki.leaf_expired_key, exp_chain),
          "expired", note="no signedDate -> checked at the current time")
    p = transaction(signedDate=BEFORE_LEAF)
    S.add("tx-signed-before-leaf-not-before", T, sign(p, key, chain), "expired",
          note="signedDate 2023-06-01 precedes the leaf's notBefore 2024-01-01")
    p = renewal_info(signedDate=AFTER_CAS)
    S.add("renewal-signed-after-ca-expiry", R, sign(p, key, chain), "expired",
          note="signedDate 2041-01-01: leaf, intermediate and root all expired")
    S.add("notif-expired-leaf", N, sign(did_renew(), pki.leaf_expired_key, exp_chain), "expired")
    p = app_transaction(signedDate=IN_EXPIRED_WINDOW)
    S.add("apptx-expired-leaf-receipt-created-after-window", A,
          sign(p, pki.leaf_expired_key, exp_chain), "expired",
          note="receiptCreationDate 2025-06-01 is the effective date; the extra signedDate key "
               "(2020-06-01, inside the window) is not part of the AppTransaction model and "
               "must be ignored (Python's library would use it -> valid; Swift/Node -> expired)")
    p = realtime_request(signedDate=BEFORE_LEAF)
    S.add("realtime-signed-before-leaf-not-before", RT, sign(p, key, chain), "expired")

    # ======================================================== marker OIDs
    S.add("tx-leaf-missing-marker-oid", T,
          sign(tx, pki.leaf_no_oid_key, [pki.leaf_no_oid, pki.inter, pki.root]),
          "missing_marker_oid")
    S.add("tx-intermediate-missing-marker-oid", T,
          sign(tx, pki.leaf_u_no_oid_key, [pki.leaf_u_no_oid, pki.inter_no_oid, pki.root]),
          "missing_marker_oid")
    S.add("notif-leaf-missing-marker-oid", N,
          sign(did_renew(), pki.leaf_no_oid_key, [pki.leaf_no_oid, pki.inter, pki.root]),
          "missing_marker_oid")

    # ======================================================== signatures
    S.add("tx-bad-signature-bit-flip", T, tamper_sig(good, flip(300)), "bad_signature")
    S.add("tx-bad-signature-truncated", T, tamper_sig(good, lambda s: s[:63]), "bad_signature",
          note="63-byte signature")
    hh, pp, ss = good.split(".")
    sig = base64.urlsafe_b64decode(ss + "==")
    der_sig = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    S.add("tx-bad-signature-der-encoded", T, f"{hh}.{pp}.{b64u(der_sig)}", "bad_signature",
          note="the same (r,s) DER-encoded instead of raw r||s")
    S.add("tx-bad-signature-payload-modified", T,
          f"{hh}.{b64u(jdump(transaction(price=99)))}.{ss}", "bad_signature",
          note="price changed after signing")
    S.add("tx-bad-signature-wrong-key", T, sign(tx, ec.generate_private_key(ec.SECP256R1()), chain),
          "bad_signature", note="signed by a key that is not the leaf's")
    S.add("notif-bad-signature-bit-flip", N, tamper_sig(sign(did_renew(), key, chain), flip(5)),
          "bad_signature")
    S.add("renewal-bad-signature-bit-flip", R, tamper_sig(sign(ri, key, chain), flip(400)),
          "bad_signature")
    ah, ap, asg = sign(at, key, chain).split(".")
    S.add("apptx-bad-signature-payload-modified", A,
          f"{ah}.{b64u(jdump(app_transaction(applicationVersion='9.9.9')))}.{asg}",
          "bad_signature")
    S.add("realtime-bad-signature-bit-flip", RT, tamper_sig(sign(rt, key, chain), flip(100)),
          "bad_signature")

    # ======================================================== payload decoding
    S.add("tx-undecodable-quantity-string", T, sign(transaction(quantity="three"), key, chain),
          "undecodable_payload")
    S.add("tx-undecodable-app-account-token", T,
          sign(transaction(appAccountToken="not-a-uuid"), key, chain), "undecodable_payload")
    S.add("tx-undecodable-payload-array", T, sign([tx], key, chain), "undecodable_payload",
          note="payload is a JSON array, not an object")
    S.add("renewal-undecodable-auto-renew-status", R,
          sign(renewal_info(autoRenewStatus="on"), key, chain), "undecodable_payload")
    S.add("apptx-undecodable-nonce", A,
          sign(app_transaction(deviceVerificationNonce="nonce-123"), key, chain),
          "undecodable_payload")
    S.add("realtime-undecodable-missing-user-locale", RT,
          sign(realtime_request(userLocale=DROP), key, chain), "undecodable_payload",
          note="all DecodedRealtimeRequestBody fields are required")
    S.add("realtime-undecodable-request-identifier", RT,
          sign(realtime_request(requestIdentifier="req-1"), key, chain), "undecodable_payload")
    S.add("realtime-undecodable-given-transaction", RT, sign(tx, key, chain),
          "undecodable_payload", note="a transaction lacks the required realtime fields")
    p = did_renew()
    p["data"]["appAppleId"] = str(APP_ID)
    S.add("notif-undecodable-app-apple-id-string", N, sign(p, key, chain), "undecodable_payload",
          note="data.appAppleId is Int64; a JSON string does not decode")

    # ======================================================== app identifiers
    S.add("tx-wrong-bundle", T, sign(transaction(bundleId=OTHER_BUNDLE), key, chain),
          "wrong_bundle")
    S.add("tx-wrong-bundle-case", T, sign(transaction(bundleId="com.example.TestPKI"), key, chain),
          "wrong_bundle", note="bundleId comparison is exact (case-sensitive)")
    S.add("apptx-wrong-bundle", A, sign(app_transaction(bundleId=OTHER_BUNDLE), key, chain),
          "wrong_bundle")
    S.add("notif-wrong-bundle-data", N, sign(did_renew(bundle=OTHER_BUNDLE), key, chain),
          "wrong_bundle")
    S.add("notif-wrong-bundle-summary", N, sign(summary(bundle=OTHER_BUNDLE), key, chain),
          "wrong_bundle")
    S.add("notif-wrong-bundle-external-purchase-token", N,
          sign(ext_token(bundle=OTHER_BUNDLE), key, chain), "wrong_bundle")
    S.add("notif-wrong-bundle-appdata", N, sign(rescind(bundle=OTHER_BUNDLE), key, chain),
          "wrong_bundle")
    pp_ = did_renew(env="Production", app_id=OTHER_APP_ID)
    S.add("notif-wrong-app-id-production", N, sign(pp_, key, chain), "wrong_app_id",
          verifier=PROD)
    S.add("apptx-wrong-app-id-production", A,
          sign(app_transaction(receiptType="Production", appAppleId=OTHER_APP_ID), key, chain),
          "wrong_app_id", verifier=PROD)
    S.add("realtime-wrong-app-id-production", RT,
          sign(realtime_request(environment="Production", appAppleId=OTHER_APP_ID), key, chain),
          "wrong_app_id", verifier=PROD)
    S.add("notif-wrong-app-id-production-summary", N,
          sign(summary(env="Production", app_id=OTHER_APP_ID), key, chain), "wrong_app_id",
          verifier=PROD)

    # ======================================================== wrong kind
    S.add("notif-wrong-kind-given-transaction", N, sign(tx, key, chain), "wrong_kind",
          note="none of data/summary/externalPurchaseToken/appData present")
    S.add("notif-no-app-identifiers", N,
          sign(notification("TEST"), key, chain), "wrong_bundle",
          note="a notification without data/summary/externalPurchaseToken/appData names no app, "
               "so its (absent) bundle id cannot match (INVALID_APP_IDENTIFIER)")
    S.add("apptx-wrong-kind-given-transaction", A, sign(tx, key, chain), "wrong_kind", status="INVALID_ENVIRONMENT",
          note="Apple reports INVALID_ENVIRONMENT here (bundleId matches, receiptType absent); we keep that "
               "status and say wrong_kind. The payload "
               "has no receiptCreationDate, so the chain is checked at the current time "
               "(leaf valid until 2030-01-01)")
    S.add("renewal-wrong-kind-given-transaction", R, sign(tx, key, chain), "wrong_kind",
          note="project rule (stricter than Apple): Apple's libraries decode a transaction as "
               "renewal info and, with matching environment, return it as valid")
    S.add("tx-wrong-kind-given-renewal-info", T, sign(ri, key, chain), "wrong_kind",
          note="renewal info has no bundleId (Apple: INVALID_APP_IDENTIFIER as well)")
    S.add("tx-wrong-kind-given-notification", T, sign(test_notif(), key, chain), "wrong_kind")

    # ======================================================== environment
    S.add("tx-wrong-environment-production-payload", T,
          sign(transaction(environment="Production"), key, chain), "wrong_environment")
    S.add("tx-wrong-environment-sandbox-payload-production-verifier", T, sign(tx, key, chain),
          "wrong_environment", verifier=PROD)
    S.add("tx-wrong-environment-unknown-value", T,
          sign(transaction(environment="Sandboxxx"), key, chain), "wrong_environment",
          note="unknown environment raw value decodes but matches no verifier environment")
    S.add("renewal-wrong-environment", R, sign(renewal_info(environment="Production"), key, chain),
          "wrong_environment")
    S.add("apptx-wrong-environment-receipt-type", A,
          sign(app_transaction(receiptType="Production"), key, chain), "wrong_environment")
    S.add("realtime-wrong-environment", RT,
          sign(realtime_request(environment="Production"), key, chain), "wrong_environment")
    S.add("notif-wrong-environment-data", N, sign(did_renew(), key, chain), "wrong_environment",
          verifier=PROD, note="Sandbox data, Production verifier, appAppleId matches")
    S.add("notif-wrong-environment-external-purchase-token-production-id", N,
          sign(ext_token(sandbox=False), key, chain), "wrong_environment",
          note="externalPurchaseId without SANDBOX prefix means Production")
    S.add("notif-wrong-environment-external-purchase-token-sandbox-id", N,
          sign(ext_token(sandbox=True), key, chain), "wrong_environment", verifier=PROD)
    S.add("notif-wrong-environment-appdata", N, sign(rescind(env="Production"), key, chain),
          "wrong_environment")

    # ======================================================== verifier configuration
    S.add("config-no-trust-anchor", T, good, "no_trust_anchor",
          verifier=verifier(rootCertificates=[]))
    S.add("config-production-without-app-apple-id", N, sign(did_renew(), key, chain),
          "invalid_argument", verifier=verifier(environment="Production"))
    S.add("config-online-checks", RT, sign(rt, key, chain), "online_checks_unavailable",
          verifier=verifier(enableOnlineChecks=True))

    # ======================================================== fill the op x crypto-reason matrix
    # Every structural/cryptographic reason at least once per operation (generic variants).
    base = {N: ("notif", did_renew()), T: ("tx", tx), R: ("renewal", ri),
            A: ("apptx", at), RT: ("realtime", rt)}
    gen = {
        "malformed": lambda p: ".".join(sign(p, key, chain).split(".")[:2]),
        "unsupported_alg": lambda p: sign(p, key, chain, alg="ES384"),
        "missing_x5c": lambda p: sign(p, key, None),
        "empty_x5c": lambda p: sign(p, key, []),
        "chain_length": lambda p: sign(p, key, [pki.leaf, pki.inter]),
        "bad_certificate": lambda p: sign(p, key, ["not base64!", pki.inter, pki.root]),
        "untrusted_chain": lambda p: sign(p, pki.forged_leaf_key,
                                          [pki.forged_leaf, pki.forged_inter, pki.other_root]),
        "expired": lambda p: sign(p, pki.leaf_expired_key, exp_chain),
        "missing_marker_oid": lambda p: sign(p, pki.leaf_u_no_oid_key,
                                             [pki.leaf_u_no_oid, pki.inter_no_oid, pki.root]),
        "bad_signature": lambda p: tamper_sig(sign(p, key, chain), flip(200)),
    }
    have = {(c["operation"], c["expect"].get("reason")) for c in S.cases}
    for op, (prefix, payload) in base.items():
        for reason, make in gen.items():
            if (op, reason) not in have:
                S.add(f"{prefix}-{reason.replace('_', '-')}", op, make(payload), reason)
    return S


# --------------------------------------------------------------------------
# writing

README = """\
Fixtures generated by Tests/support/testpki.py (run it fresh: keys are random, the case
list and expectations are fixed). root.der (P-384, self-signed) -> intermediate.der (P-384,
CA pathlen 0, marker OID 1.2.840.113635.100.6.2.1) -> leaf.der (P-256, marker OID
1.2.840.113635.100.6.11.1, key in leaf_key.pem) mimic Apple's App Store signing chain; the
other *.der files are broken variants (other_root.der is an unrelated root with the same
subject as root.der; forged_* are issued under it; *_no_oid, *_not_ca, leaf_p384,
leaf_expired, leaf_self_signed, xcode.der). manifest.json lists each case: the JWS file
(jws/<id>.jws, one line; trim whitespace), the verify operation, the verifier configuration
(rootCertificates are paths relative to this directory; enableOnlineChecks false unless the
case expects a config error) and the expected outcome: {"result":"valid"} with "fields"
(top-level payload values to compare; UUID values compare case-insensitively, dates are
integer milliseconds), {"result":"error","status":...,"reason":...} using the project's
reason vocabulary, or {"result":"config_error","reason":...} when building the verifier must
fail. Offline, the chain is checked at the payload signedDate (app transactions:
receiptCreationDate) or at the current time when absent. The only current-time dependent
cases are apptx-wrong-kind-given-transaction (needs now < 2030-01-01, leaf notAfter) and
tx-expired-leaf-no-signed-date (needs now > 2021-01-01).
"""


def write(outdir: str, pki: PKI, suite: Suite):
    os.makedirs(os.path.join(outdir, "jws"), exist_ok=True)
    for fn, cert in pki.files().items():
        with open(os.path.join(outdir, fn), "wb") as f:
            f.write(der(cert))
    with open(os.path.join(outdir, "leaf_key.pem"), "wb") as f:
        f.write(pki.leaf_key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    # remove stale case files from an earlier run
    keep = {f"{c['id']}.jws" for c in suite.cases}
    for fn in os.listdir(os.path.join(outdir, "jws")):
        if fn.endswith(".jws") and fn not in keep:
            os.remove(os.path.join(outdir, "jws", fn))
    for cid, jws in suite.files.items():
        with open(os.path.join(outdir, "jws", f"{cid}.jws"), "w", encoding="ascii") as f:
            f.write(jws + "\n")
    manifest = {
        "generated_by": "Tests/support/testpki.py",
        "bundleId": BUNDLE,
        "appAppleId": APP_ID,
        "reason_status": REASON_STATUS,
        "config_reasons": list(CONFIG_REASONS),
        "cases": suite.cases,
    }
    with open(os.path.join(outdir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(outdir, "README.txt"), "w", encoding="utf-8") as f:
        f.write(README)


# --------------------------------------------------------------------------
# independent self-check (reads the files back; knows nothing about how they were made)

B64URL_SEG = re.compile(r"[A-Za-z0-9_-]*")


def _seg(s: str) -> bytes:
    if not B64URL_SEG.fullmatch(s) or len(s) % 4 == 1:
        raise ValueError("bad base64url")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def strict_json(b: bytes):
    """RFC 8259 as the library reads it: UTF-8 without BOM, no duplicate key, no lone surrogate, nesting <= 32."""
    if b.startswith(b"\xef\xbb\xbf"):
        raise ValueError("BOM")

    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    value = json.loads(b.decode("utf-8"), object_pairs_hook=no_dups)

    def walk(v, depth):
        if isinstance(v, (dict, list)):
            if depth > 32:
                raise ValueError("too deep")
            for x in (list(v.keys()) + list(v.values())) if isinstance(v, dict) else v:
                walk(x, depth + 1)
        elif isinstance(v, str):
            v.encode("utf-8")  # a lone surrogate cannot be encoded
    walk(value, 1)
    return value


def crypto_check(jws: str, roots, effective_date_of, now):
    """Return (reason or None, payload). Reasons follow CRYPTO_REASONS order."""
    parts = jws.split(".")
    if len(parts) != 3:
        return "malformed", None
    try:
        hdr = strict_json(_seg(parts[0]))
        payload = strict_json(_seg(parts[1]))
        sig = _seg(parts[2])
        if not isinstance(hdr, dict):
            raise ValueError
    except ValueError:
        return "malformed", None
    if hdr.get("alg") != "ES256":
        return "unsupported_alg", payload
    if "x5c" not in hdr:
        return "missing_x5c", payload
    x5c = hdr["x5c"]
    if x5c == []:
        return "empty_x5c", payload
    if not isinstance(x5c, list) or len(x5c) != 3:
        return "chain_length", payload
    try:
        leaf = x509.load_der_x509_certificate(base64.b64decode(x5c[0], validate=True))
        inter = x509.load_der_x509_certificate(base64.b64decode(x5c[1], validate=True))
    except ValueError:
        return "bad_certificate", payload

    # The leaf's shape, then the signature with its key, then the chain (the library's order: the signature is
    # checked before anything is learnt from the chain, the cache or OCSP).
    if OID_LEAF_MARKER not in {e.oid for e in leaf.extensions}:
        return "missing_marker_oid", payload
    pub = leaf.public_key()
    if not isinstance(pub, ec.EllipticCurvePublicKey) or not isinstance(pub.curve, ec.SECP256R1):
        return "bad_certificate", payload
    if len(sig) != 64:
        return "bad_signature", payload
    try:
        pub.verify(encode_dss_signature(int.from_bytes(sig[:32], "big"),
                                        int.from_bytes(sig[32:], "big")),
                   (parts[0] + "." + parts[1]).encode("ascii"), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "bad_signature", payload

    def issued(child, parent):
        try:
            child.verify_directly_issued_by(parent)
            return True
        except (ValueError, TypeError, InvalidSignature):
            return False

    def is_ca(c):
        try:
            return c.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            return False

    def ext(c, cls):
        try:
            return c.extensions.get_extension_for_class(cls)
        except x509.ExtensionNotFound:
            return None

    def rfc5280(c, ca, has_issuer_above):
        """The X509_STRICT rules the fixtures break: CAs with critical basicConstraints, keyUsage and a subject
        key id; below the anchor a non-critical authority key id with its keyIdentifier; no keyCertSign on leaves."""
        bc, ku, skid, akid = (ext(c, x) for x in (x509.BasicConstraints, x509.KeyUsage,
                                                   x509.SubjectKeyIdentifier, x509.AuthorityKeyIdentifier))
        if ca and (bc is None or not bc.critical or ku is None or skid is None):
            return False
        if has_issuer_above and (akid is None or akid.critical or akid.value.key_identifier is None):
            return False
        return ca or ku is None or not ku.value.key_cert_sign

    anchor = next((r for r in roots if issued(inter, r) and is_ca(r)), None)
    if anchor is None or not is_ca(inter) or not issued(leaf, inter):
        return "untrusted_chain", payload
    if not (rfc5280(leaf, False, True) and rfc5280(inter, True, True) and rfc5280(anchor, True, False)):
        return "untrusted_chain", payload
    when = effective_date_of(payload) or now
    for c in (leaf, inter, anchor):
        if not (c.not_valid_before_utc <= when <= c.not_valid_after_utc):
            return "expired", payload
    if OID_INTERMEDIATE_MARKER not in {e.oid for e in inter.extensions}:
        return "missing_marker_oid", payload
    return None, payload


UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
INT_KEYS = ("quantity", "price", "renewalPrice", "autoRenewStatus", "offerType", "appAppleId",
            "tokenCreationDate", "succeededCount", "failedCount", "status")
UUID_KEYS = ("appAccountToken", "deviceVerificationNonce", "requestIdentifier")
REALTIME_REQUIRED = ("originalTransactionId", "appAppleId", "productId", "userLocale",
                     "requestIdentifier", "signedDate", "environment")


def semantic_check(op, payload, v):
    """Second, independent reading of the section 1.3 rules (decode, kind, app id, env)."""
    if not isinstance(payload, dict):
        return "undecodable_payload"
    objs = [payload] + [payload[k] for k in ("data", "summary", "externalPurchaseToken", "appData")
                        if isinstance(payload.get(k), dict)]
    for o in objs:
        for k in INT_KEYS:
            if k in o and (isinstance(o[k], bool) or not isinstance(o[k], int)):
                return "undecodable_payload"
        for k in UUID_KEYS:
            if k in o and not (isinstance(o[k], str) and UUID_RE.fullmatch(o[k])):
                return "undecodable_payload"
    if op == "verifyAndDecodeRealtimeRequest" and any(k not in payload for k in REALTIME_REQUIRED):
        return "undecodable_payload"
    prod = v["environment"] == "Production"
    is_tx = "transactionId" in payload
    is_ri = "autoRenewProductId" in payload or "autoRenewStatus" in payload
    if op == "verifyAndDecodeTransaction":
        if not is_tx:
            return "wrong_kind"
        return ("wrong_bundle" if payload.get("bundleId") != v["bundleId"] else
                "wrong_environment" if payload.get("environment") != v["environment"] else None)
    if op == "verifyAndDecodeRenewalInfo":
        if is_tx and not is_ri:
            return "wrong_kind"
        return "wrong_environment" if payload.get("environment") != v["environment"] else None
    if op == "verifyAndDecodeAppTransaction":
        if "receiptType" not in payload and is_tx:
            return "wrong_kind"
        if payload.get("bundleId") != v["bundleId"]:
            return "wrong_bundle"
        if prod and payload.get("appAppleId") != v["appAppleId"]:
            return "wrong_app_id"
        return "wrong_environment" if payload.get("receiptType") != v["environment"] else None
    if op == "verifyAndDecodeRealtimeRequest":
        if prod and payload.get("appAppleId") != v["appAppleId"]:
            return "wrong_app_id"
        return "wrong_environment" if payload.get("environment") != v["environment"] else None
    # notification
    if "notificationType" not in payload and (is_tx or is_ri or "receiptType" in payload):
        return "wrong_kind"
    for k in ("data", "summary", "externalPurchaseToken", "appData"):
        sub = payload.get(k)
        if isinstance(sub, dict):
            break
    else:
        return "wrong_bundle"
    env = sub.get("environment")
    if k == "externalPurchaseToken":
        env = "Sandbox" if str(sub.get("externalPurchaseId", "")).startswith("SANDBOX") \
            else "Production"
    if sub.get("bundleId") != v["bundleId"]:
        return "wrong_bundle"
    if prod and sub.get("appAppleId") != v["appAppleId"]:
        return "wrong_app_id"
    return "wrong_environment" if env != v["environment"] else None


def selfcheck(outdir: str) -> list:
    with open(os.path.join(outdir, "manifest.json"), encoding="utf-8") as f:
        m = json.load(f)
    now = dt.datetime.now(dt.timezone.utc)
    problems = []
    root_cache = {}

    def load_root(p):
        if p not in root_cache:
            with open(os.path.join(outdir, p), "rb") as f:
                root_cache[p] = x509.load_der_x509_certificate(f.read())
        return root_cache[p]

    def eff(op):
        key = "receiptCreationDate" if op == "verifyAndDecodeAppTransaction" else "signedDate"

        def f(payload):
            v = payload.get(key) if isinstance(payload, dict) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return dt.datetime.fromtimestamp(v / 1000, dt.timezone.utc)
            return None
        return f

    nested_keys = {"signedTransactionInfo": "verifyAndDecodeTransaction",
                   "signedRenewalInfo": "verifyAndDecodeRenewalInfo",
                   "signedAppTransactionInfo": "verifyAndDecodeAppTransaction"}
    for c in m["cases"]:
        cid, v, exp = c["id"], c["verifier"], c["expect"]
        with open(os.path.join(outdir, c["path"]), encoding="ascii") as f:
            jws = f.read().strip()
        if exp["result"] == "config_error":
            ok = ((not v["rootCertificates"] and exp["reason"] == "no_trust_anchor")
                  or (v["environment"] == "Production" and v["appAppleId"] is None
                      and exp["reason"] == "invalid_argument")
                  or (v["enableOnlineChecks"] and exp["reason"] == "online_checks_unavailable"))
            if not ok:
                problems.append(f"{cid}: config expectation does not follow from verifier")
            continue
        if v["enableOnlineChecks"] or not v["rootCertificates"]:
            problems.append(f"{cid}: non-config case with a config-error verifier")
        if exp["result"] == "error" and REASON_STATUS.get(exp["reason"]) != exp["status"] and not (
                exp["reason"] == "wrong_kind" and exp["status"] in ("INVALID_APP_IDENTIFIER", "INVALID_ENVIRONMENT")):
            problems.append(f"{cid}: status/reason mismatch")
        want = exp.get("reason") if exp["result"] == "error" else None
        roots = [load_root(p) for p in v["rootCertificates"]]
        if v["environment"] in ("Xcode", "LocalTesting"):
            # no cryptographic checks in these modes: only format + payload rules
            try:
                payload = json.loads(_seg(jws.split(".")[1]))
            except (ValueError, IndexError):
                payload = None
            reason = None
        else:
            reason, payload = crypto_check(jws, roots, eff(c["operation"]), now)
        if want in CRYPTO_REASONS:
            if reason != want:
                problems.append(f"{cid}: expected {want}, independent check says {reason}")
            continue
        if reason is not None:
            problems.append(f"{cid}: expected {exp}, but crypto check fails with {reason}")
            continue
        sem = semantic_check(c["operation"], payload, v)
        if sem != want:
            problems.append(f"{cid}: expected {want or 'valid'}, rule check says {sem or 'valid'}")
        if exp["result"] == "valid":
            for k, val in c.get("fields", {}).items():
                if payload.get(k) != val:
                    problems.append(f"{cid}: field {k} mismatch")
            # nested JWS inside valid notifications must verify too
            for sub in ("data", "appData"):
                if v["environment"] in ("Xcode", "LocalTesting"):
                    break
                for nk, nop in nested_keys.items():
                    inner = (payload.get(sub) or {}).get(nk)
                    if inner:
                        r2, _ = crypto_check(inner, roots, eff(nop), now)
                        if r2 is not None:
                            problems.append(f"{cid}: nested {sub}.{nk} fails: {r2}")
    return problems


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    if len(args) != 1 or flags - {"--no-selfcheck", "--selfcheck"}:
        print("usage: testpki.py OUTDIR [--no-selfcheck]", file=sys.stderr)
        return 2
    outdir = args[0]
    pki = PKI()
    suite = build(pki)
    write(outdir, pki, suite)
    if "--no-selfcheck" not in flags:
        problems = selfcheck(outdir)
        if problems:
            for p in problems:
                print("testpki: selfcheck: " + p, file=sys.stderr)
            return 1
    print(f"testpki: wrote {len(suite.cases)} cases to {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
