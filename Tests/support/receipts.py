#!/usr/bin/env python3
"""receipts.py OUTDIR -- app receipts signed by the project's own CA, with what verification must return.

PKI in the shape of Apple's receipt chain (RSA 2048): root -> intermediate carrying the WWDR marker OID
1.2.840.113635.100.6.2.1 -> receipt signer carrying 1.2.840.113635.100.6.11.1, plus broken variants (no
markers, expired signer, an unrelated root, a four-level chain). The receipt payloads (Apple's ASN.1 attribute SET)
are written here byte by byte, then signed as PKCS#7 SignedData by `cryptography` (SHA-256 or SHA-1, without
signed attributes like Apple's, or with them; the SHA-1 of older Apple receipts is covered by the real
receipts, cryptography cannot sign with it); one receipt is re-encoded with BER indefinite lengths and a
segmented OCTET STRING as Xcode does; one has its attribute SET wrapped in an extra OCTET STRING (signed as
wrapped: valid, also BER re-encoded; signed unwrapped but carried wrapped and the reverse: bad signature).
Every expected value is computed here, independently of the library.

Writes OUTDIR/root.der, OUTDIR/other-root.der, OUTDIR/receipts/<id>.b64 and OUTDIR/manifest.json:
  cases[]: {id, path, verifier: {roots: [...], bundleId: str|null},
            expect: {result: "valid", json: {...}, effectiveDateSource, effectiveDate?}
                  | {result: "error", status, reason},
            extract: {first: str|null, transactionIds: [...], originalTransactionIds: [...],
                      cIdError?: {status, reason}}}
  extract.cIdError: appstore_receipt_extract_transaction_id (the bare id as a C string) must fail so.
  "json" is the exact expected output of the verify call without its "verification" object.

When the openssl command is available, the valid receipts are cross-checked with `openssl cms -verify -attime`
(chain and signature) and the tampered ones must fail it. Any disagreement exits with status 1.
Usage: python3 Tests/support/receipts.py OUTDIR      Dependencies: Python 3.9+, cryptography >= 42.
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

BUNDLE = "com.example.receipts"
OTHER_BUNDLE = "com.example.other"
OID_INTERMEDIATE_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")
OID_SIGNER_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")


def utc(y, m, d, hh=0, mm=0, ss=0):
    return dt.datetime(y, m, d, hh, mm, ss, tzinfo=dt.timezone.utc)


CA_FROM, CA_TO = utc(2015, 1, 1), utc(2045, 1, 1)
SIGNER_FROM, SIGNER_TO = utc(2024, 1, 1), utc(2040, 1, 1)
EXPIRED_FROM, EXPIRED_TO = utc(2020, 1, 1), utc(2021, 1, 1)

# --------------------------------------------------------------------------------------------------------------
# DER writing


def tlv(tag: int, content: bytes) -> bytes:
    n = len(content)
    if n < 0x80:
        head = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        head = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + head + content


def integer(v: int) -> bytes:
    raw = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    return tlv(0x02, raw)


def utf8(s: str) -> bytes:
    return tlv(0x0C, s.encode("utf-8"))


def ia5(s: str) -> bytes:
    return tlv(0x16, s.encode("ascii"))


def attr(typ: int, value: bytes, version: int = 1) -> bytes:
    return tlv(0x30, integer(typ) + integer(version) + tlv(0x04, value))


def attr_set(attrs) -> bytes:
    return tlv(0x31, b"".join(attrs))


def ms_of(text: str) -> int:
    """RFC 3339 -> milliseconds (fractions truncated to ms), with the standard library only."""
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return calendar.timegm(t.utctimetuple()) * 1000 + t.microsecond // 1000


# --------------------------------------------------------------------------------------------------------------
# receipt content: (attributes, expected JSON) built side by side


class Receipt:
    def __init__(self):
        self.attrs: list[bytes] = []
        self.json: dict = {}
        self.records: list[dict] = []
        self.ids: list[tuple[int, str]] = []  # (type, value) of 1703/1705 in encoding order

    def app(self, bundle=BUNDLE, version="42", original="1.0", created="2025-06-01T12:00:00Z",
            expires="2026-06-01T12:00:00Z"):
        self.attrs.append(attr(0, utf8("ProductionSandbox")))      # undocumented: ignored
        if bundle is not None:
            self.attrs.append(attr(2, utf8(bundle)))
            self.json["bundleId"] = bundle
        self.attrs.append(attr(3, utf8(version)))
        self.json["applicationVersion"] = version
        self.attrs.append(attr(4, os.urandom(16), version=2))       # opaque value
        self.attrs.append(attr(5, os.urandom(20)))                  # SHA-1 hash
        self.attrs.append(attr(19, utf8(original)))
        self.json["originalApplicationVersion"] = original
        if created is not None:
            self.attrs.append(attr(12, ia5(created)))
            if created[:1].isdigit():
                self.json["receiptCreationDate"] = ms_of(created)
        if expires is not None:
            self.attrs.append(attr(21, ia5(expires)))
            self.json["receiptExpirationDate"] = ms_of(expires)
        self.attrs.append(attr(1234, integer(7)))                   # unknown: ignored
        return self

    def in_app(self, fields: list[tuple[int, bytes]], expect: dict):
        self.attrs.append(attr(17, attr_set(attr(t, v) for t, v in fields)))
        self.records.append(expect)
        for t, v in fields:
            if t in (1703, 1705):
                self.ids.append((t, v[2:].decode()))
        return self

    def payload(self) -> bytes:
        return attr_set(self.attrs)

    def expected_json(self) -> dict:
        return {**self.json, "inApp": self.records}

    def extract(self) -> dict:
        tx = [v for t, v in self.ids if t == 1703]
        orig: list[str] = []
        for t, v in self.ids:
            if t == 1705 and v not in orig:
                orig.append(v)
        return {"first": self.ids[0][1] if self.ids else None, "transactionIds": tx, "originalTransactionIds": orig}


def full_receipt(**app) -> Receipt:
    r = Receipt().app(**app)
    r.in_app(
        [(1701, integer(2)), (1702, utf8("com.example.coins")), (1703, utf8("1000000000000001")),
         (1705, utf8("1000000000000001")), (1704, ia5("2025-05-01T10:00:00Z")), (1706, ia5("2025-05-01T10:00:00Z")),
         (1708, ia5("")), (1712, ia5("")), (1711, integer(0)), (1707, integer(1))],
        {"quantity": 2, "productId": "com.example.coins", "transactionId": "1000000000000001",
         "originalTransactionId": "1000000000000001", "purchaseDate": ms_of("2025-05-01T10:00:00Z"),
         "originalPurchaseDate": ms_of("2025-05-01T10:00:00Z"), "webOrderLineItemId": "0"})
    r.in_app(
        [(1701, integer(1)), (1702, utf8("com.example.monthly")), (1703, utf8("2000000000000002")),
         (1705, utf8("2000000000000001")), (1704, ia5("2025-05-15T08:30:00.250Z")),
         (1706, ia5("2025-04-15T08:30:00+02:00")), (1708, ia5("2025-06-15T08:30:00Z")),
         (1712, ia5("2025-05-20T00:00:00Z")), (1711, integer(2000000055813727)), (1719, integer(1)),
         (1713, integer(1)), (1721, utf8("PROMO1")), (1722, integer(0))],
        {"quantity": 1, "productId": "com.example.monthly", "transactionId": "2000000000000002",
         "originalTransactionId": "2000000000000001", "purchaseDate": ms_of("2025-05-15T08:30:00.250Z"),
         "originalPurchaseDate": ms_of("2025-04-15T06:30:00Z"), "expiresDate": ms_of("2025-06-15T08:30:00Z"),
         "cancellationDate": ms_of("2025-05-20T00:00:00Z"), "webOrderLineItemId": "2000000055813727",
         "isInIntroOfferPeriod": True})
    r.in_app(
        [(1702, utf8("com.example.monthly")), (1703, utf8("2000000000000003")), (1705, utf8("2000000000000001")),
         (1704, ia5("2025-06-15T08:30:00Z")), (1719, integer(0)), (1701, integer(1))],
        {"quantity": 1, "productId": "com.example.monthly", "transactionId": "2000000000000003",
         "originalTransactionId": "2000000000000001", "purchaseDate": ms_of("2025-06-15T08:30:00Z"),
         "isInIntroOfferPeriod": False})
    return r


# --------------------------------------------------------------------------------------------------------------
# PKI


def name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example Receipts TestPKI (not Apple)"),
                      x509.NameAttribute(NameOID.COUNTRY_NAME, "US")])


def key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def cert(subject, subject_key, issuer, issuer_key, not_before, not_after, *, ca, marker=None, path_len=None):
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
         .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(not_before).not_valid_after(not_after)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=path_len if ca else None), critical=True)
         .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                      data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                      encipher_only=False, decipher_only=False), critical=True))
    if marker is not None:
        b = b.add_extension(x509.UnrecognizedExtension(marker, b"\x05\x00"), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


class PKI:
    def __init__(self):
        self.root_key = key()
        self.root = cert(name("Receipts Test Root"), self.root_key, name("Receipts Test Root"), self.root_key,
                         CA_FROM, CA_TO, ca=True)
        self.int_key = key()
        self.intermediate = cert(name("Receipts Test WWDR"), self.int_key, self.root.subject, self.root_key,
                                 CA_FROM, CA_TO, ca=True, path_len=0, marker=OID_INTERMEDIATE_MARKER)
        self.signer_key = key()
        self.signer = cert(name("Receipts Test Signing"), self.signer_key, self.intermediate.subject, self.int_key,
                           SIGNER_FROM, SIGNER_TO, ca=False, marker=OID_SIGNER_MARKER)
        self.expired_signer = cert(name("Receipts Test Signing (2020)"), self.signer_key, self.intermediate.subject,
                                   self.int_key, EXPIRED_FROM, EXPIRED_TO, ca=False, marker=OID_SIGNER_MARKER)
        self.unmarked_signer = cert(name("Receipts Test Signing (no marker)"), self.signer_key,
                                    self.intermediate.subject, self.int_key, SIGNER_FROM, SIGNER_TO, ca=False)
        self.unmarked_int = cert(name("Receipts Test WWDR (no marker)"), self.int_key, self.root.subject,
                                 self.root_key, CA_FROM, CA_TO, ca=True, path_len=0)
        self.signer_under_unmarked = cert(name("Receipts Test Signing (under unmarked)"), self.signer_key,
                                          self.unmarked_int.subject, self.int_key, SIGNER_FROM, SIGNER_TO, ca=False,
                                          marker=OID_SIGNER_MARKER)
        # a four-level chain: root -> upper -> intermediate4 -> signer4
        self.upper_key = key()
        self.upper = cert(name("Receipts Test Upper CA"), self.upper_key, self.root.subject, self.root_key,
                          CA_FROM, CA_TO, ca=True, path_len=1)
        self.int4 = cert(name("Receipts Test WWDR (level 3)"), self.int_key, self.upper.subject, self.upper_key,
                         CA_FROM, CA_TO, ca=True, path_len=0, marker=OID_INTERMEDIATE_MARKER)
        self.signer4 = cert(name("Receipts Test Signing (level 4)"), self.signer_key, self.int4.subject,
                            self.int_key, SIGNER_FROM, SIGNER_TO, ca=False, marker=OID_SIGNER_MARKER)
        # an unrelated PKI with the same shape
        self.other_root_key = key()
        self.other_root = cert(name("Other Test Root"), self.other_root_key, name("Other Test Root"),
                               self.other_root_key, CA_FROM, CA_TO, ca=True)
        self.other_int = cert(name("Other Test WWDR"), self.int_key, self.other_root.subject, self.other_root_key,
                              CA_FROM, CA_TO, ca=True, path_len=0, marker=OID_INTERMEDIATE_MARKER)
        self.other_signer = cert(name("Other Test Signing"), self.signer_key, self.other_int.subject, self.int_key,
                                 SIGNER_FROM, SIGNER_TO, ca=False, marker=OID_SIGNER_MARKER)


def sign(payload: bytes, signer, signer_key, extra_certs, *, digest=None, attributes=False, certs=True,
         second_signer=None) -> bytes:
    b = pkcs7.PKCS7SignatureBuilder().set_data(payload).add_signer(signer, signer_key, digest or hashes.SHA256())
    if second_signer is not None:
        b = b.add_signer(second_signer[0], second_signer[1], hashes.SHA256())
    for c in extra_certs:
        b = b.add_certificate(c)
    options = [pkcs7.PKCS7Options.Binary]
    if not attributes:
        options.append(pkcs7.PKCS7Options.NoAttributes)
    if not certs:
        options.append(pkcs7.PKCS7Options.NoCerts)
    return b.sign(serialization.Encoding.DER, options)


# --------------------------------------------------------------------------------------------------------------
# BER re-encoding (Xcode style)


def parse_der(data: bytes, i=0):
    """Returns (tag, content, end) of the DER element at i."""
    tag = data[i]
    n = data[i + 1]
    j = i + 2
    if n & 0x80:
        k = n & 0x7F
        n = int.from_bytes(data[j:j + k], "big")
        j += k
    return tag, data[j:j + n], j + n


def children(content: bytes):
    out, i = [], 0
    while i < len(content):
        tag, c, end = parse_der(content, i)
        out.append((tag, c, content[i:end]))
        i = end
    return out


def indefinite(tag: int, parts: list[bytes]) -> bytes:
    return bytes([tag, 0x80]) + b"".join(parts) + b"\x00\x00"


def ber_reencode(der: bytes) -> bytes:
    """ContentInfo, SignedData, encapContentInfo and the [0]s with indefinite lengths; eContent as a constructed
    OCTET STRING of two segments. The signature covers the content octets, so it stays valid."""
    _, ci, _ = parse_der(der)
    oid, content0 = children(ci)
    (sd_tag, sd, _), = children(content0[1])
    sd_parts = children(sd)
    version, digests, encap = sd_parts[0], sd_parts[1], sd_parts[2]
    e_oid, e_content = children(encap[1])
    (_, octets, _), = children(e_content[1])
    half = len(octets) // 2
    segmented = indefinite(0x24, [tlv(0x04, octets[:half]), tlv(0x04, octets[half:])])
    new_encap = indefinite(0x30, [e_oid[2], indefinite(0xA0, [segmented])])
    new_sd = indefinite(0x30, [version[2], digests[2], new_encap] + [p[2] for p in sd_parts[3:]])
    return indefinite(0x30, [oid[2], indefinite(0xA0, [new_sd])])


def replace_econtent(der: bytes, octets: bytes) -> bytes:
    """The same SignedData (DER) with the eContent OCTET STRING replaced by `octets`: signature and certificates
    unchanged, so the signature no longer covers the content unless `octets` is what was signed."""
    _, ci, _ = parse_der(der)
    oid, content0 = children(ci)
    (_, sd, _), = children(content0[1])
    sd_parts = children(sd)
    e_oid, _ = children(sd_parts[2][1])
    new_encap = tlv(0x30, e_oid[2] + tlv(0xA0, tlv(0x04, octets)))
    new_sd = tlv(0x30, sd_parts[0][2] + sd_parts[1][2] + new_encap + b"".join(p[2] for p in sd_parts[3:]))
    return tlv(0x30, oid[2] + tlv(0xA0, new_sd))


def flip_in(data: bytes, needle: bytes, offset=0) -> bytes:
    at = data.index(needle) + offset
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


# --------------------------------------------------------------------------------------------------------------


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(os.path.join(out, "receipts"), exist_ok=True)
    pki = PKI()
    der = lambda c: c.public_bytes(serialization.Encoding.DER)  # noqa: E731
    with open(os.path.join(out, "root.der"), "wb") as f:
        f.write(der(pki.root))
    with open(os.path.join(out, "other-root.der"), "wb") as f:
        f.write(der(pki.other_root))
    chain = [pki.intermediate, pki.root]  # Apple's receipts carry intermediate and root too

    cases, files = [], {}

    def add(cid, receipt_der, expect, receipt=None, roots=("root.der",), bundle=BUNDLE, extract=None, check=None):
        path = f"receipts/{cid}.b64"
        files[path] = receipt_der
        with open(os.path.join(out, path), "w") as f:
            f.write(base64.b64encode(receipt_der).decode("ascii") + "\n")
        c = {"id": cid, "path": path, "verifier": {"roots": list(roots), "bundleId": bundle}, "expect": expect}
        if extract is not None:
            c["extract"] = extract
        elif receipt is not None:
            c["extract"] = receipt.extract()
        if check is not None:
            c["opensslCheck"] = check
        cases.append(c)

    def valid(receipt, source="receiptCreationDate"):
        e = {"result": "valid", "json": receipt.expected_json(), "effectiveDateSource": source}
        if source == "receiptCreationDate":
            e["effectiveDate"] = receipt.json["receiptCreationDate"]
        return e

    def error(status, reason):
        return {"result": "error", "status": status, "reason": reason}

    full = full_receipt()
    full_der = sign(full.payload(), pki.signer, pki.signer_key, chain)
    add("valid-full", full_der, valid(full), full, check="valid")
    add("valid-full-no-bundle-check", full_der, valid(full), full, bundle=None)
    add("wrong-bundle", full_der, error("INVALID_APP_IDENTIFIER", "wrong_bundle"), full, bundle=OTHER_BUNDLE)
    add("wrong-root", full_der, error("VERIFICATION_FAILURE", "untrusted_chain"), full, roots=("other-root.der",))
    add("valid-two-roots", full_der, valid(full), full, roots=("other-root.der", "root.der"))
    add("valid-ber-indefinite", ber_reencode(full_der), valid(full), full, check="valid")

    r = full_receipt()
    add("valid-signed-attributes", sign(r.payload(), pki.signer, pki.signer_key, chain, attributes=True), valid(r), r,
        check="valid")
    r = full_receipt()
    add("valid-sha512", sign(r.payload(), pki.signer, pki.signer_key, chain, digest=hashes.SHA512()), valid(r), r,
        check="valid")

    r = Receipt().app()
    add("valid-no-in-app", sign(r.payload(), pki.signer, pki.signer_key, chain), valid(r), r, check="valid")
    r = full_receipt(created=None)
    add("valid-no-creation-date", sign(r.payload(), pki.signer, pki.signer_key, chain), valid(r, "now"), r)

    r = full_receipt()
    add("expired-signer", sign(r.payload(), pki.expired_signer, pki.signer_key, chain),
        error("VERIFICATION_FAILURE", "expired"), r)
    r = full_receipt(created="2020-06-01T00:00:00Z", expires=None)
    add("valid-expired-signer-created-in-window", sign(r.payload(), pki.expired_signer, pki.signer_key, chain),
        valid(r), r, check="valid")
    r = full_receipt()
    add("signer-without-marker", sign(r.payload(), pki.unmarked_signer, pki.signer_key, chain),
        error("VERIFICATION_FAILURE", "missing_marker_oid"), r)
    r = full_receipt()
    add("intermediate-without-marker", sign(r.payload(), pki.signer_under_unmarked, pki.signer_key,
                                            [pki.unmarked_int, pki.root]),
        error("VERIFICATION_FAILURE", "missing_marker_oid"), r)
    r = full_receipt()
    add("untrusted-signer", sign(r.payload(), pki.other_signer, pki.signer_key, [pki.other_int, pki.other_root]),
        error("VERIFICATION_FAILURE", "untrusted_chain"), r)
    r = full_receipt()
    add("chain-of-four", sign(r.payload(), pki.signer4, pki.signer_key, [pki.int4, pki.upper]),
        error("VERIFICATION_FAILURE", "untrusted_chain"), r)
    r = full_receipt()
    add("no-certificates", sign(r.payload(), pki.signer, pki.signer_key, [], certs=False),
        error("VERIFICATION_FAILURE", "signer_missing"), r)
    r = full_receipt()
    add("two-signers", sign(r.payload(), pki.signer, pki.signer_key, chain,
                            second_signer=(pki.other_signer, pki.signer_key)),
        error("INVALID_RECEIPT", "receipt_malformed"), r)

    add("tampered-content", flip_in(full_der, BUNDLE.encode(), 4),
        error("VERIFICATION_FAILURE", "bad_signature"), None,
        extract=full.extract(), check="invalid")
    add("tampered-signature", full_der[:-5] + bytes([full_der[-5] ^ 0x80]) + full_der[-4:],
        error("VERIFICATION_FAILURE", "bad_signature"), full, check="invalid")

    # The signature is checked before the creation date is used: a flipped digit of attribute 12 ("3025-06-01",
    # after the signer's notAfter) is tampering, not an expired certificate.
    add("tampered-creation-date", flip_in(full_der, b"2025-06-01T12:00:00Z", 0),
        error("VERIFICATION_FAILURE", "bad_signature"), None, extract=full.extract(), check="invalid")

    # Xcode-style extra wrapping: the eContent octets are an OCTET STRING that holds the attribute SET. The signature
    # covers the eContent octets as they are (wrapped), which is also what the parser must have read; as DER and
    # re-encoded with indefinite lengths and a segmented eContent.
    r = full_receipt()
    wrapped = tlv(0x04, r.payload())
    wrapped_der = sign(wrapped, pki.signer, pki.signer_key, chain)
    add("valid-xcode-wrapped", wrapped_der, valid(r), r, check="valid")
    add("valid-xcode-wrapped-ber-indefinite", ber_reencode(wrapped_der), valid(r), r, check="valid")
    # The wrapping is part of what is signed: signed unwrapped but carried wrapped, and the reverse, do not verify
    # (a verifier that unwrapped before checking the signature would accept both).
    add("wrapped-content-signed-unwrapped",
        replace_econtent(sign(r.payload(), pki.signer, pki.signer_key, chain), wrapped),
        error("VERIFICATION_FAILURE", "bad_signature"), r, check="invalid")
    add("unwrapped-content-signed-wrapped", replace_econtent(wrapped_der, r.payload()),
        error("VERIFICATION_FAILURE", "bad_signature"), r, check="invalid")

    r = full_receipt(created="June 1st, 2025")
    add("undecodable-creation-date", sign(r.payload(), pki.signer, pki.signer_key, chain),
        error("INVALID_RECEIPT", "undecodable_payload"), r)
    # A signed but unreadable creation date leaves no date to validate the chain at: trust is still checked first
    # (without validity periods), then the date is reported.
    r = full_receipt(created="June 1st, 2025")
    add("undecodable-creation-date-untrusted-signer",
        sign(r.payload(), pki.other_signer, pki.signer_key, [pki.other_int, pki.other_root]),
        error("VERIFICATION_FAILURE", "untrusted_chain"), r)
    r = full_receipt(created="June 1st, 2025")
    add("undecodable-creation-date-expired-signer", sign(r.payload(), pki.expired_signer, pki.signer_key, chain),
        error("INVALID_RECEIPT", "undecodable_payload"), r)
    r = full_receipt()
    r.attrs.append(attr(2, utf8(OTHER_BUNDLE)))
    add("duplicate-bundle-id", sign(r.payload(), pki.signer, pki.signer_key, chain),
        error("INVALID_RECEIPT", "undecodable_payload"), r)
    r = Receipt().app()
    r.in_app([(1701, utf8("one"))], {})
    add("undecodable-quantity", sign(r.payload(), pki.signer, pki.signer_key, chain),
        error("INVALID_RECEIPT", "undecodable_payload"), r)

    # Apple's Python/Java/Node take the first 1703 OR 1705 in encoding order: here an original transaction id.
    r = Receipt().app()
    r.in_app([(1705, utf8("3000000000000001")), (1703, utf8("3000000000000009")), (1701, integer(1))],
             {"quantity": 1, "transactionId": "3000000000000009", "originalTransactionId": "3000000000000001"})
    add("valid-first-id-is-original", sign(r.payload(), pki.signer, pki.signer_key, chain), valid(r), r)

    # A transaction id with a NUL byte: verified and in the JSON outputs (escaped as \u0000), but the C call that
    # returns the bare id as a C string must refuse it rather than hand back a truncated "1000000000000".
    r = Receipt().app()
    nul_id = "1000000000000\x00042"
    r.in_app([(1701, integer(1)), (1703, utf8(nul_id)), (1705, utf8("1000000000000042"))],
             {"quantity": 1, "transactionId": nul_id, "originalTransactionId": "1000000000000042"})
    add("valid-transaction-id-with-nul", sign(r.payload(), pki.signer, pki.signer_key, chain), valid(r), r,
        extract={**r.extract(), "cIdError": {"status": "INVALID_RECEIPT", "reason": "receipt_malformed"}})

    manifest = {
        "title": "app receipts signed by the project's own CA (Tests/support/receipts.py)",
        "bundleId": BUNDLE,
        "cases": cases,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    problems = openssl_cross_check(out, cases, files, pki)
    for p in problems:
        print("FAIL " + p)
    print(f"receipt fixtures: {len(cases)} cases written to {out}"
          + (f", {len(problems)} cross-check problems" if problems else ""))
    return 1 if problems else 0


def openssl_cross_check(out, cases, files, pki) -> list[str]:
    """`openssl cms -verify` (an independent PKCS#7 verifier) must accept the "valid" receipts at their creation
    date and reject the "invalid" ones."""
    openssl = shutil.which("openssl")
    if not openssl:
        print("receipt fixtures: openssl not found, cross-check skipped")
        return []
    problems = []
    with tempfile.TemporaryDirectory() as d:
        ca = os.path.join(d, "root.pem")
        with open(ca, "wb") as f:
            f.write(pki.root.public_bytes(serialization.Encoding.PEM))
        for c in cases:
            want = c.get("opensslCheck")
            if not want:
                continue
            src = os.path.join(d, c["id"] + ".p7")
            with open(src, "wb") as f:
                f.write(files[c["path"]])
            at = c["expect"].get("effectiveDate", ms_of("2025-06-01T12:00:00Z")) // 1000
            res = subprocess.run([openssl, "cms", "-verify", "-inform", "DER", "-in", src, "-binary", "-CAfile", ca,
                                  "-purpose", "any", "-attime", str(at), "-out", os.devnull],
                                 capture_output=True, text=True)
            ok = res.returncode == 0
            if ok != (want == "valid"):
                problems.append(f"{c['id']}: openssl cms -verify {'rejected' if want == 'valid' else 'accepted'} it: "
                                f"{res.stderr.strip()[:300]}")
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv))
