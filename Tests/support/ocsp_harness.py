#!/usr/bin/env python3
"""ocsp_harness.py -- a test PKI whose certificates name local OCSP responders, and those responders.

Builds a PKI in the shape of Apple's App Store chain (P-384 root -> P-384 intermediate with Apple's marker OID
1.2.840.113635.100.6.2.1 -> P-256 leaves with 1.2.840.113635.100.6.11.1), where every non-root certificate carries an
Authority Information Access extension whose OCSP URL points at a responder on 127.0.0.1, then starts real
`openssl ocsp` responders for them (one per issuing CA and behaviour), signs transactions with every leaf, and
describes each case with the outcome online checks must give (setup.json).

Responders (each but `canned` its own `openssl ocsp -index ... -CA ... -rsigner ... -rkey ... -port N` process on an
internal port; the URLs in the certificates point at relays in this process, which count every request they get):
  root       CA = root, signed by the root itself; knows the intermediates (one of them revoked)
  inter      CA = intermediate, signed by a delegated responder certificate (EKU OCSPSigning) the intermediate issued
  inter_rev  CA = the revoked intermediate, signed by it
  other      CA = a sibling intermediate under the same root: answers, but is not authorised for our leaves
  foreign    CA = an unrelated self-signed root: its answers chain to nothing we trust
  noeku      CA = intermediate, signed by a certificate the intermediate issued WITHOUT the OCSPSigning extended key
             usage (the delegated-responder attack: no other certificate of the CA may vouch for its siblings)
  stale      like `inter`, but run 3 days in the past (faketime), -ndays 1: nextUpdate was 2 days ago
  future     like `inter`, but run 2 days in the future (faketime): thisUpdate is tomorrow
  short      like `inter`, but run 55 s in the past with -nmin 1: its answers are good for SHORT_SECONDS more seconds
             (nextUpdate = now + 5 s), so a cached chain must be checked again long before the cache TTL
  slow       a relay that waits SLOW_DELAY seconds, then forwards to `inter`
  canned     answers built here with `cryptography`'s OCSP builder at request time, signed by the delegated responder,
             never echoing the nonce (as responders serving pre-signed answers do), with update times relative to
             the moment of the request (CANNED: the URL path names the behaviour) -- for exact skew boundaries
  down       a port this process holds bound but never listens on (connections are refused; nobody else can take it)
  control    GET /counts: what the relays received, as JSON {"total": N, "byResponder": {key: N},
             "bySerial": {SERIAL: N}} (SERIAL: the requested certificate's serial in upper-case hex, as in setup.json;
             every certificate of the PKI has its own serial). Counting happens before the request is answered, so
             a client that got its answer sees it counted.

Usage:
  ocsp_harness.py generate OUTDIR
      only write the PKI, keys, indexes, JWS and OUTDIR/setup.json (no responders; e.g. for the OCSP fuzz target)
  ocsp_harness.py serve OUTDIR [--lifetime SECONDS]
      generate, start, write OUTDIR/setup.json, print "READY OUTDIR/setup.json" on stdout, then run until standard
      input reaches end of file (the parent test process exited or closed it), SIGTERM/SIGINT, or the lifetime
      (default 900 s) passes; then stop every process it started.
  ocsp_harness.py run OUTDIR [--lifetime SECONDS] -- CMD [ARG...]
      the same, but run CMD with APPSTORE_OCSP_SETUP=OUTDIR/setup.json in its environment and exit with its status.

Never open a connection to an `openssl ocsp` responder without sending a request on it: OpenSSL 3.0's responder
spins on a connection that closes before a request arrives. Readiness is therefore read from the responder's
stderr ("waiting for OCSP client connections"), not probed.

Dependencies: Python >= 3.9, cryptography >= 42, the openssl command line tool, faketime (Debian package).
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from cryptography import x509
from cryptography.x509 import ocsp
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testpki import DER_NULL, OID_INTERMEDIATE_MARKER, OID_LEAF_MARKER, b64std, b64u, jdump, raw_sig  # noqa: E402

BUNDLE = "com.example.ocsp"
SLOW_DELAY = 600.0                    # seconds the slow relay waits: far beyond any test's bound (at most 120 s,
                                      # >= 4x the slowest loaded run), so only a deadline ends the exchange in time
SHORT_SECONDS = 5                     # how long the `short` responder's answers stay current
REVOKED_AT = dt.datetime(2025, 5, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
REVOKED_AT_TEXT = "2025-05-01T12:00:00Z"
NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
# Canned answers: (thisUpdate, nextUpdate or None) in seconds relative to the moment of the request. The verifier
# allows 60 s of clock skew; without nextUpdate an answer counts for 3600 s after thisUpdate.
CANNED = {
    "no_nonce": (0, 3600),                       # a fresh answer that does not echo the request's nonce
    "no_next_update": (-60, None),               # the 1 h rule: thisUpdate a minute ago
    "no_next_update_edge": (-3600 - 30, None),   # 1 h 30 s ago: inside the skew
    "no_next_update_old": (-3600 - 90, None),    # 1 h 90 s ago: stale
    "next_update_30s_ago": (-3600, -30),         # inside the skew
    "next_update_90s_ago": (-3600, -90),         # stale
}
EFFECTIVE_DATE_SHIFT = dt.timedelta(days=10)     # signedDate of the effective-date cases: 10 days ago


def name(cn: str) -> x509.Name:
    return x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example OCSP TestPKI (not Apple)"),
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
    ])


def key_usage(*, ca: bool, sign: bool = True) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=sign and not ca, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


class Cert:
    """A certificate, its key, and (for CAs) the OCSP index entries of what it issued."""

    serial_counter = 0x1000

    def __init__(self, cn: str, *, issuer: "Cert | None", curve, ca: bool, marker=None,
                 ocsp_url: "str | list[str] | None" = None, ocsp_signer: bool = False, days_before: int = 30,
                 days_after: int = 3650, not_before: dt.datetime | None = None, not_after: dt.datetime | None = None):
        Cert.serial_counter += 0x11
        self.serial = Cert.serial_counter
        self.cn, self.name = cn, name(cn)
        self.key = ec.generate_private_key(curve)
        issuer_name = issuer.name if issuer else self.name
        issuer_key = issuer.key if issuer else self.key
        self.not_before = not_before or NOW - dt.timedelta(days=days_before)
        self.not_after = not_after or NOW + dt.timedelta(days=days_after)
        b = (x509.CertificateBuilder()
             .subject_name(self.name).issuer_name(issuer_name)
             .public_key(self.key.public_key())
             .serial_number(self.serial)
             .not_valid_before(self.not_before).not_valid_after(self.not_after)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca and issuer else None), critical=True)
             .add_extension(key_usage(ca=ca), critical=True)
             .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False))
        if issuer:
            b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                                critical=False)
        if marker is not None:
            b = b.add_extension(x509.UnrecognizedExtension(marker, DER_NULL), critical=False)
        if ocsp_url is not None:
            urls = [ocsp_url] if isinstance(ocsp_url, str) else ocsp_url
            b = b.add_extension(x509.AuthorityInformationAccess([x509.AccessDescription(
                AuthorityInformationAccessOID.OCSP, x509.UniformResourceIdentifier(u)) for u in urls]), critical=False)
        if ocsp_signer:
            b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.OCSP_SIGNING]), critical=False)
            b = b.add_extension(x509.OCSPNoCheck(), critical=False)
        self.cert = b.sign(issuer_key, hashes.SHA384() if isinstance(issuer_key.curve, ec.SECP384R1) else hashes.SHA256())
        self.index: list[str] = []   # this CA's OCSP index lines

    def der(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.DER)

    def serial_hex(self) -> str:
        return serial_hex(self.serial)

    def index_line(self, revoked: bool = False) -> str:
        """An `openssl ca` index.txt line: status, expiry, revocation, serial (BN_bn2hex form), file, subject."""
        serial = self.serial_hex()
        expiry = self.not_after.strftime("%y%m%d%H%M%SZ")
        rev = REVOKED_AT.strftime("%y%m%d%H%M%SZ") + ",keyCompromise" if revoked else ""
        subject = "/CN=" + self.cn
        return "\t".join(["R" if revoked else "V", expiry, rev, serial, "unknown", subject])

    def write(self, outdir: str, stem: str):
        with open(os.path.join(outdir, stem + ".der"), "wb") as f:
            f.write(self.der())
        with open(os.path.join(outdir, stem + ".pem"), "wb") as f:
            f.write(self.cert.public_bytes(serialization.Encoding.PEM))
        with open(os.path.join(outdir, stem + ".key.pem"), "wb") as f:
            f.write(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))


def serial_hex(n: int) -> str:
    """A serial as OpenSSL's BN_bn2hex prints it (upper case, even length): the form setup.json and /counts use."""
    h = "%X" % n
    return "0" + h if len(h) % 2 else h


def free_ports(keys) -> dict:
    """A distinct free port on 127.0.0.1 for each key (all held bound until every one is chosen)."""
    held = []
    try:
        for _ in keys:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(s)
            s.bind(("127.0.0.1", 0))
        return {k: s.getsockname()[1] for k, s in zip(keys, held)}
    finally:
        for s in held:
            s.close()


def transaction(i: int, signed_ms: int | None = None) -> dict:
    now_ms = int(time.time() * 1000) if signed_ms is None else signed_ms
    return {
        "transactionId": f"30000000000000{i:02d}", "originalTransactionId": "3000000000000000",
        "bundleId": BUNDLE, "productId": "com.example.ocsp.monthly", "purchaseDate": now_ms - 60_000,
        "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "quantity": 1,
        "signedDate": now_ms, "environment": "Sandbox", "price": 4990, "currency": "EUR",
    }


def jws(payload: dict, leaf: Cert, inter: Cert, root: Cert) -> str:
    header = {"alg": "ES256", "x5c": [b64std(c.der()) for c in (leaf, inter, root)], "typ": "JWT"}
    signing_input = b64u(jdump(header)) + "." + b64u(jdump(payload))
    return signing_input + "." + b64u(raw_sig(leaf.key, signing_input.encode("ascii")))


# --------------------------------------------------------------------------------------------------------------
# generation


class PKI:
    """The objects the harness itself needs at run time (the canned responder signs with them)."""

    def __init__(self, inter: Cert, responder: Cert, leaves: dict):
        self.inter, self.responder = inter, responder
        self.by_serial = {c.serial: c for c in leaves.values()}


def generate(outdir: str) -> tuple[dict, PKI]:
    """Writes certificates, keys, indexes and JWS to outdir; returns the setup (responders not started yet)."""
    os.makedirs(os.path.join(outdir, "jws"), exist_ok=True)
    openssl_keys = ("root", "inter", "inter_rev", "other", "foreign", "noeku", "stale", "future", "short")
    # Public ports (in the certificates' URLs, served by this process) and the openssl responders' internal ports.
    public_keys = openssl_keys + ("slow", "canned", "down", "control")
    chosen = free_ports(list(public_keys) + ["upstream_" + k for k in openssl_keys])
    ports = {k: chosen[k] for k in public_keys}
    upstream = {k: chosen["upstream_" + k] for k in openssl_keys}
    url = {k: f"http://127.0.0.1:{p}/ocsp03-{k.replace('_', '-')}" for k, p in ports.items()}
    canned_url = {k: f"http://127.0.0.1:{ports['canned']}/ocsp03-canned/{k}" for k in CANNED}
    p384, p256 = ec.SECP384R1(), ec.SECP256R1()

    root = Cert("OCSP TestPKI Root CA - G3", issuer=None, curve=p384, ca=True, days_before=365)
    inter = Cert("OCSP TestPKI WWDR CA - G6", issuer=root, curve=p384, ca=True, marker=OID_INTERMEDIATE_MARKER,
                 ocsp_url=url["root"], days_before=365)
    inter_rev = Cert("OCSP TestPKI WWDR CA - G6 (revoked)", issuer=root, curve=p384, ca=True,
                     marker=OID_INTERMEDIATE_MARKER, ocsp_url=url["root"], days_before=365)
    other = Cert("OCSP TestPKI WWDR CA - G7 (sibling)", issuer=root, curve=p384, ca=True,
                 marker=OID_INTERMEDIATE_MARKER, ocsp_url=url["root"], days_before=365)
    foreign = Cert("OCSP Foreign Root", issuer=None, curve=p384, ca=True)
    responder = Cert("OCSP TestPKI WWDR G6 OCSP Responder", issuer=inter, curve=p256, ca=False, ocsp_signer=True)
    # Issued by the intermediate like the responder above, but without EKU OCSPSigning: not a delegated responder.
    no_eku = Cert("OCSP TestPKI WWDR G6 ordinary certificate (no OCSPSigning)", issuer=inter, curve=p256, ca=False)
    root.index = [inter.index_line(), inter_rev.index_line(revoked=True), other.index_line()]

    def leaf(cn, responder_key, issuer=inter, in_index=True, revoked=False, urls=None, **validity):
        if urls is None:
            urls = url[responder_key] if responder_key else None
        c = Cert(cn, issuer=issuer, curve=p256, ca=False, marker=OID_LEAF_MARKER, ocsp_url=urls,
                 days_before=1, days_after=730, **validity)
        if in_index:
            issuer.index.append(c.index_line(revoked=revoked))
        return c

    leaves = {
        "good": leaf("Leaf good", "inter"),
        "leaf_revoked": leaf("Leaf revoked", "inter", revoked=True),
        "leaf_unknown": leaf("Leaf unknown", "inter", in_index=False),
        "responder_down": leaf("Leaf responder down", "down"),
        "responder_slow": leaf("Leaf responder slow", "slow"),
        "wrong_responder": leaf("Leaf answered by a sibling CA", "other"),
        "foreign_responder": leaf("Leaf answered by a foreign root", "foreign"),
        "responder_without_eku": leaf("Leaf answered by a certificate without OCSPSigning", "noeku"),
        "stale_response": leaf("Leaf stale response", "stale"),
        "future_response": leaf("Leaf response from the future", "future"),
        "short_lived_answer": leaf("Leaf with short-lived answers", "short"),
        "no_ocsp_url": leaf("Leaf without AIA", None),
        "intermediate_revoked": leaf("Leaf under the revoked intermediate", "inter_rev", issuer=inter_rev),
        # Effective date: valid at the payload's signedDate (10 days ago) but expired now ...
        "leaf_expired_now": leaf("Leaf expired now, valid at signedDate", "inter",
                                 not_before=NOW - dt.timedelta(days=20), not_after=NOW - dt.timedelta(days=5)),
        # ... and not yet valid at signedDate (issued a day ago) but valid now.
        "leaf_not_valid_at_signed_date": leaf("Leaf valid now, not yet at signedDate", "inter"),
        # AIA with an ldap URL first: other schemes are skipped.
        "aia_http_after_ldap": leaf("Leaf with an ldap OCSP URL before the http one", None,
                                    urls=["ldap://127.0.0.1/cn=ocsp", url["inter"]]),
        "aia_no_http": leaf("Leaf with only non-http OCSP URLs", None,
                            urls=["ldap://127.0.0.1/cn=ocsp", "ftp://127.0.0.1/ocsp"]),
        # Several http OCSP URLs: asked in order until one answers good or revoked.
        "aia_down_then_good": leaf("Leaf whose first responder is down", None, urls=[url["down"], url["inter"]]),
        "aia_wrong_then_good": leaf("Leaf whose first responder answers for another CA", None,
                                    urls=[url["other"], url["inter"]]),
        "aia_good_then_down": leaf("Leaf whose second responder is down", None, urls=[url["inter"], url["down"]]),
        "aia_revoked_then_good": leaf("Leaf revoked at its first responder", None, revoked=True,
                                      urls=[url["inter"], url["down"]]),
        "aia_all_down": leaf("Leaf whose responders are all down", None,
                             urls=[url["down"], url["down"] + "-again"]),
        "aia_wrong_then_down": leaf("Leaf whose responders fail in two ways", None, urls=[url["other"], url["down"]]),
    }
    for k in CANNED:
        leaves[k] = leaf(f"Leaf with canned answers {k}", None, urls=canned_url[k])
    other.index = [leaves["wrong_responder"].index_line()]  # it would even say "good": the signature is what fails
    foreign.index = [leaves["foreign_responder"].index_line()]

    for stem, c in [("root", root), ("intermediate", inter), ("intermediate_revoked", inter_rev),
                    ("intermediate_other", other), ("foreign_root", foreign), ("ocsp_responder", responder),
                    ("ocsp_signer_no_eku", no_eku)]:
        c.write(outdir, stem)
    for k, c in leaves.items():
        c.write(outdir, "leaf_" + k)
    for stem, c in [("root", root), ("intermediate", inter), ("intermediate_revoked", inter_rev),
                    ("intermediate_other", other), ("foreign_root", foreign)]:
        with open(os.path.join(outdir, f"index_{stem}.txt"), "w") as f:
            f.write("".join(line + "\n" for line in c.index))

    def expect(status, reason=None, requests=2, contains=None, offline=None, responder_requests=None):
        """Online outcome (status, reason, OCSP requests of the first call, how many of those reach a responder,
        message pieces) and the offline one."""
        e = {"status": status, "requests": requests,
             "responderRequests": requests if responder_requests is None else responder_requests,
             "offline": offline or {"status": "OK"}}
        if reason:
            e["reason"] = reason
        if contains:
            e["messageContains"] = contains
        return e

    expectations = {
        "good": expect("OK"),
        "leaf_revoked": expect("VERIFICATION_FAILURE", "revoked", contains=[REVOKED_AT_TEXT, "keyCompromise", "leaf"]),
        "leaf_unknown": expect("VERIFICATION_FAILURE", "ocsp_unknown"),
        "responder_down": expect("RETRYABLE_VERIFICATION_FAILURE", "ocsp_unreachable", responder_requests=1),
        "responder_slow": expect("RETRYABLE_VERIFICATION_FAILURE", "ocsp_timeout"),
        "wrong_responder": expect("VERIFICATION_FAILURE", "ocsp_bad_signature"),
        "foreign_responder": expect("VERIFICATION_FAILURE", "ocsp_bad_signature"),
        "responder_without_eku": expect("VERIFICATION_FAILURE", "ocsp_bad_signature", contains=["ocspsigning"]),
        "stale_response": expect("VERIFICATION_FAILURE", "ocsp_stale", contains=["nextUpdate"]),
        "future_response": expect("VERIFICATION_FAILURE", "ocsp_stale", contains=["thisUpdate"]),
        "short_lived_answer": expect("OK"),
        "no_ocsp_url": expect("VERIFICATION_FAILURE", "ocsp_no_responder", requests=1),
        "intermediate_revoked": expect("VERIFICATION_FAILURE", "revoked", requests=1,
                                       contains=[REVOKED_AT_TEXT, "intermediate"]),
        # Online checks validate the chain at the current time, offline verifiers at the payload's signedDate.
        "leaf_expired_now": expect("VERIFICATION_FAILURE", "expired", requests=0, contains=["leaf"]),
        "leaf_not_valid_at_signed_date": expect("OK", offline={"status": "VERIFICATION_FAILURE", "reason": "expired"}),
        "aia_http_after_ldap": expect("OK"),
        "aia_no_http": expect("VERIFICATION_FAILURE", "ocsp_no_responder", requests=1,
                              contains=["ldap://127.0.0.1/cn=ocsp", "ftp://127.0.0.1/ocsp"]),
        # requests: the intermediate's + each leaf URL asked; responderRequests: those that reached a responder.
        "aia_down_then_good": expect("OK", requests=3, responder_requests=2),
        "aia_wrong_then_good": expect("OK", requests=3),
        "aia_good_then_down": expect("OK"),
        "aia_revoked_then_good": expect("VERIFICATION_FAILURE", "revoked", contains=[REVOKED_AT_TEXT, "leaf"]),
        "aia_all_down": expect("RETRYABLE_VERIFICATION_FAILURE", "ocsp_unreachable", requests=3, responder_requests=1,
                               contains=["responders asked: 2"]),
        "aia_wrong_then_down": expect("VERIFICATION_FAILURE", "ocsp_bad_signature", requests=3, responder_requests=2,
                                      contains=["responders asked: 2", "ocsp_unreachable"]),
        "no_nonce": expect("OK"),
        "no_next_update": expect("OK"),
        "no_next_update_edge": expect("OK"),
        "no_next_update_old": expect("VERIFICATION_FAILURE", "ocsp_stale", contains=["no nextUpdate"]),
        "next_update_30s_ago": expect("OK"),
        "next_update_90s_ago": expect("VERIFICATION_FAILURE", "ocsp_stale", contains=["nextUpdate"]),
    }
    assert set(expectations) == set(leaves)
    shifted_ms = int((NOW - EFFECTIVE_DATE_SHIFT).timestamp() * 1000)
    cases = {}
    for k, c in leaves.items():
        issuer = inter_rev if k == "intermediate_revoked" else inter
        signed_ms = shifted_ms if k in ("leaf_expired_now", "leaf_not_valid_at_signed_date") else None
        paths = []
        for i in range(8 if k == "good" else 2):
            p = os.path.join(outdir, "jws", f"{k}-{i}.jws")
            with open(p, "w") as f:
                f.write(jws(transaction(i, signed_ms), c, issuer, root))
            paths.append(p)
        cases[k] = {"jws": paths, "leaf": os.path.join(outdir, f"leaf_{k}.der"),
                    "intermediate": os.path.join(outdir, "intermediate_revoked.der" if k == "intermediate_revoked"
                                                 else "intermediate.der"),
                    "leafKey": os.path.join(outdir, f"leaf_{k}.key.pem"), "expect": expectations[k],
                    "serial": c.serial_hex(), "intermediateSerial": issuer.serial_hex()}

    responders = {
        "root": dict(ca="root", signer="root", index="root"),
        "inter": dict(ca="intermediate", signer="ocsp_responder", index="intermediate"),
        "inter_rev": dict(ca="intermediate_revoked", signer="intermediate_revoked", index="intermediate_revoked"),
        "other": dict(ca="intermediate_other", signer="intermediate_other", index="intermediate_other"),
        "foreign": dict(ca="foreign_root", signer="foreign_root", index="foreign_root"),
        "noeku": dict(ca="intermediate", signer="ocsp_signer_no_eku", index="intermediate"),
        "stale": dict(ca="intermediate", signer="ocsp_responder", index="intermediate", faketime="-3d"),
        "future": dict(ca="intermediate", signer="ocsp_responder", index="intermediate", faketime="+2d"),
        "short": dict(ca="intermediate", signer="ocsp_responder", index="intermediate",
                      faketime=f"-{60 - SHORT_SECONDS}s", nmin=1),
    }
    setup = {
        "dir": outdir, "root": os.path.join(outdir, "root.der"), "bundleId": BUNDLE,
        "slowDelaySeconds": SLOW_DELAY, "shortAnswerSeconds": SHORT_SECONDS, "revokedAt": REVOKED_AT_TEXT,
        "ports": ports, "upstreamPorts": upstream, "urls": url, "cannedUrls": canned_url,
        "controlUrl": f"http://127.0.0.1:{ports['control']}/counts",
        "serials": {"intermediate": inter.serial_hex(), "intermediate_revoked": inter_rev.serial_hex()},
        "responders": responders, "cases": cases,
    }
    return setup, PKI(inter, responder, leaves)


# --------------------------------------------------------------------------------------------------------------
# running


def read_request(conn: socket.socket) -> tuple[bytes, bytes, bytes] | None:
    """One HTTP request: (request line + headers, body, request target), or None when the peer closed early."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    parts = lines[0].split(b" ")
    return head, body[:length], parts[1] if len(parts) > 1 else b"/"


def http_reply(status: str, content_type: str, body: bytes) -> bytes:
    return (f"HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode("ascii") + body


class Harness:
    def __init__(self, outdir: str, setup: dict, pki: PKI):
        self.outdir, self.setup, self.pki = outdir, setup, pki
        self.procs: list[subprocess.Popen] = []
        self.logs = []
        self.stopping = threading.Event()
        self.listeners: dict[socket.socket, str] = {}
        self.down: socket.socket | None = None
        self.count_lock = threading.Lock()
        self.by_responder: dict[str, int] = {}
        self.by_serial: dict[str, int] = {}
        self.total = 0

    def start(self):
        # "down": bound, not listening. Connecting is refused, and the port cannot be taken by anything else.
        self.down = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.down.bind(("127.0.0.1", self.setup["ports"]["down"]))
        # libfaketime makes a shared-memory segment and a semaphore per process, named by its PID, and never removes
        # them when the process is stopped by a signal (as ours are): they piled up in /dev/shm and a later responder
        # with a reused PID failed ("sem_open: File exists"). So the library is preloaded directly (no wrapper
        # process: the PID is the responder's), stop() removes what our responders made, and leftovers of processes
        # that no longer exist are removed here.
        remove_faketime_leftovers()
        faketime = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
                                    + glob.glob("/usr/lib/faketime/libfaketime.so.1"))), None)
        for key, r in self.setup["responders"].items():
            d = self.outdir
            cmd = ["openssl", "ocsp", "-index", f"{d}/index_{r['index']}.txt", "-CA", f"{d}/{r['ca']}.pem",
                   "-rsigner", f"{d}/{r['signer']}.pem", "-rkey", f"{d}/{r['signer']}.key.pem",
                   "-port", str(self.setup["upstreamPorts"][key]), "-ignore_err", "-timeout", "5"]
            cmd += ["-nmin", str(r["nmin"])] if "nmin" in r else ["-ndays", "1"]
            env = None
            if "faketime" in r:
                if not faketime:
                    raise RuntimeError("libfaketime is not installed (the Debian package faketime; scripts/install-deps)")
                preload = " ".join(x for x in (os.environ.get("LD_PRELOAD"), faketime) if x)
                env = dict(os.environ, LD_PRELOAD=preload, FAKETIME=r["faketime"])
            log = open(os.path.join(self.outdir, f"responder_{key}.log"), "w+b")
            self.logs.append(log)
            self.procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                               start_new_session=True))
        self.start_relays()
        # Readiness: every responder has printed "waiting for OCSP client connections" (never probe: see above).
        deadline = time.time() + 20
        for key, p, log in zip(self.setup["responders"], self.procs, self.logs):
            while True:
                log.seek(0)
                text = log.read().decode("utf-8", "replace")
                if "waiting for OCSP client connections" in text:
                    break
                if p.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"OCSP responder {key} did not start (exit {p.poll()}): {text.strip()}")
                time.sleep(0.05)

    # ---- the relays: every public port ----------------------------------------------------------------------

    def count(self, key: str, body: bytes):
        try:
            serial = serial_hex(ocsp.load_der_ocsp_request(body).serial_number)
        except Exception:  # noqa: BLE001 - not an OCSP request: counted, under "?"
            serial = "?"
        with self.count_lock:
            self.total += 1
            self.by_responder[key] = self.by_responder.get(key, 0) + 1
            self.by_serial[serial] = self.by_serial.get(serial, 0) + 1

    def counts(self) -> bytes:
        with self.count_lock:
            return json.dumps({"total": self.total, "byResponder": dict(self.by_responder),
                               "bySerial": dict(self.by_serial)}).encode("ascii")

    def canned(self, target: bytes, body: bytes) -> bytes:
        """An answer built now for the behaviour the URL path names (see CANNED), signed by the delegated responder."""
        behaviour = target.decode("ascii", "replace").rstrip("/").rsplit("/", 1)[-1]
        try:
            request = ocsp.load_der_ocsp_request(body)
        except ValueError:
            return ocsp.OCSPResponseBuilder.build_unsuccessful(ocsp.OCSPResponseStatus.MALFORMED_REQUEST) \
                .public_bytes(serialization.Encoding.DER)
        cert = self.pki.by_serial.get(request.serial_number)
        if behaviour not in CANNED or cert is None:
            return ocsp.OCSPResponseBuilder.build_unsuccessful(ocsp.OCSPResponseStatus.UNAUTHORIZED) \
                .public_bytes(serialization.Encoding.DER)
        this_offset, next_offset = CANNED[behaviour]
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        rsp = self.pki.responder
        builder = (ocsp.OCSPResponseBuilder()
                   .add_response(cert=cert.cert, issuer=self.pki.inter.cert, algorithm=hashes.SHA1(),
                                 cert_status=ocsp.OCSPCertStatus.GOOD,
                                 this_update=now + dt.timedelta(seconds=this_offset),
                                 next_update=None if next_offset is None else now + dt.timedelta(seconds=next_offset),
                                 revocation_time=None, revocation_reason=None)
                   .responder_id(ocsp.OCSPResponderEncoding.HASH, rsp.cert)
                   .certificates([rsp.cert]))
        return builder.sign(rsp.key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)

    def serve_one(self, key: str, conn: socket.socket):
        try:
            conn.settimeout(10)
            request = read_request(conn)
            if request is None:
                return
            head, body, target = request
            if key == "control":
                if target.split(b"?")[0] == b"/counts":
                    conn.sendall(http_reply("200 OK", "application/json", self.counts()))
                else:
                    conn.sendall(http_reply("404 Not Found", "text/plain", b"GET /counts\n"))
                return
            if not body:
                return  # never hand openssl a request without a body
            self.count(key, body)
            if key == "canned":
                conn.sendall(http_reply("200 OK", "application/ocsp-response", self.canned(target, body)))
                return
            if key == "slow" and self.stopping.wait(SLOW_DELAY):
                return
            port = self.setup["upstreamPorts"]["inter" if key == "slow" else key]
            with socket.create_connection(("127.0.0.1", port), timeout=10) as up:
                up.sendall(head + b"\r\n\r\n" + body)
                reply = b""
                while True:
                    chunk = up.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
            try:
                conn.sendall(reply)
            except OSError:
                pass  # the client gave up (the slow relay: that is the point)
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def start_relays(self):
        for key in list(self.setup["responders"]) + ["slow", "canned", "control"]:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listeners[s] = key
            s.bind(("127.0.0.1", self.setup["ports"][key]))
            s.listen(64)

        def accept_loop():
            while not self.stopping.is_set():
                try:
                    ready, _, _ = select.select(list(self.listeners), [], [], 0.2)
                    for s in ready:
                        conn, _ = s.accept()
                        threading.Thread(target=self.serve_one, args=(self.listeners[s], conn), daemon=True).start()
                except OSError:
                    return

        threading.Thread(target=accept_loop, daemon=True).start()

    def stop(self):
        self.stopping.set()
        for s in list(self.listeners) + [self.down]:
            if s:
                s.close()
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 5
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        for log in self.logs:
            log.close()
        remove_faketime_leftovers([p.pid for p in self.procs])


def remove_faketime_leftovers(pids=None):
    """libfaketime's per-process segments: those of `pids`, else of every PID that no longer runs."""
    for path in glob.glob("/dev/shm/faketime_shm_*") + glob.glob("/dev/shm/sem.faketime_sem_*"):
        pid = path.rsplit("_", 1)[-1]
        if not pid.isdigit():
            continue
        if (int(pid) in pids) if pids is not None else not os.path.exists(f"/proc/{pid}"):
            try:
                os.unlink(path)
            except OSError:
                pass


def launch(outdir: str) -> Harness:
    """Generates and starts; a responder that cannot start (a port taken meanwhile) means new ports, up to 3 times."""
    last = None
    for _ in range(3):
        setup, pki = generate(outdir)
        h = Harness(outdir, setup, pki)
        try:
            h.start()
        except (RuntimeError, OSError) as e:
            last = e
            h.stop()
            continue
        path = os.path.join(outdir, "setup.json")
        with open(path, "w") as f:
            json.dump(setup, f, indent=1)
        return h
    raise SystemExit(f"ocsp_harness: could not start the responders: {last}")


def main(argv) -> int:
    if len(argv) == 3 and argv[1] == "generate":
        setup, _ = generate(os.path.abspath(argv[2]))
        with open(os.path.join(argv[2], "setup.json"), "w") as f:
            json.dump(setup, f, indent=1)
        return 0
    if len(argv) < 3 or argv[1] not in ("serve", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, outdir, rest = argv[1], os.path.abspath(argv[2]), argv[3:]
    lifetime = 900.0
    if rest[:1] == ["--lifetime"]:
        lifetime, rest = float(rest[1]), rest[2:]
    if mode == "run":
        if rest[:1] != ["--"] or len(rest) < 2:
            print("ocsp_harness: run OUTDIR [--lifetime S] -- CMD [ARG...]", file=sys.stderr)
            return 2
        rest = rest[1:]
    os.makedirs(outdir, exist_ok=True)
    h = launch(outdir)
    setup_path = os.path.join(outdir, "setup.json")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if mode == "serve":
            print("READY " + setup_path, flush=True)

            def watch_stdin():
                try:
                    while sys.stdin.buffer.read(4096):
                        pass
                except (OSError, ValueError):
                    pass
                stop.set()
            threading.Thread(target=watch_stdin, daemon=True).start()
            stop.wait(lifetime)
            return 0
        env = dict(os.environ, APPSTORE_OCSP_SETUP=setup_path)
        child = subprocess.Popen(rest, env=env)
        deadline = time.time() + lifetime
        while child.poll() is None:
            if stop.wait(0.2) or time.time() > deadline:
                print(f"ocsp_harness: stopping {rest[0]} (signal or {lifetime:.0f} s lifetime)", file=sys.stderr)
                child.terminate()
                try:
                    child.wait(5)
                except subprocess.TimeoutExpired:
                    child.kill()
                return 124
        return child.returncode
    finally:
        h.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
