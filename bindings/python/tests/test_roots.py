"""Apple's roots as the library carries them (appstoreserver.apple_root_certificates), and roots given as PEM text
(one or several certificates) wherever roots go: SignedDataVerifier and ReceiptVerifier."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

import appstoreserver
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import SignedDataVerifier

from conftest import shared_manifest

BUNDLE = "com.example.testpki"


def pem(der: bytes, newline: str = "\n") -> bytes:
    b64 = base64.b64encode(der).decode()
    lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
    return newline.join(["-----BEGIN CERTIFICATE-----", *lines, "-----END CERTIFICATE-----", ""]).encode()


def test_the_bundled_roots_and_their_fingerprints() -> None:
    details = appstoreserver.apple_root_certificate_details()
    assert [d.name for d in details] == ["Apple Root CA - G3", "Apple Inc. Root"]
    # As Apple publishes them (https://www.apple.com/certificateauthority/), typed here, and recomputed.
    import hashlib

    for d, want in zip(details, ["63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79",
                                 "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24"]):
        assert d.sha256_fingerprint == want
        assert ":".join(f"{b:02X}" for b in hashlib.sha256(d.der).digest()) == want
    assert appstoreserver.apple_root_certificates() == [details[0].der]
    assert appstoreserver.apple_receipt_root_certificates() == [details[1].der]


def test_a_real_notification_with_the_bundled_root_alone(conformance: Path) -> None:
    files = [f for f in shared_manifest()["files"] if f.get("kind") == "notification" and f.get("signedDate")]
    assert files, "no real notification in the manifest"
    f = files[0]
    assert appstoreserver.apple_root_certificates()[0] == (conformance / "certs/apple-root-ca-g3.der").read_bytes()
    v = SignedDataVerifier(appstoreserver.apple_root_certificates(), False, Environment(f["environment"]), f["bundleId"],
                           f.get("appAppleId") or 1)
    n = v.verify_and_decode_notification((conformance / f["path"]).read_text().strip())
    assert n.notificationUUID


@pytest.mark.parametrize("shape", ["pem", "pem-crlf", "bundle"])
def test_pem_roots_verify_like_der(testpki: Path, shape: str) -> None:
    der = (testpki / "root.der").read_bytes()
    root = {"pem": pem(der), "pem-crlf": pem(der, "\r\n"),
            "bundle": pem(appstoreserver.apple_root_certificates()[0]) + b"-----BEGIN PRIVATE KEY-----\nAAAA\n"
                      b"-----END PRIVATE KEY-----\n" + pem(der)}[shape]
    v = SignedDataVerifier([root], False, Environment.SANDBOX, BUNDLE)
    t = v.verify_and_decode_signed_transaction((testpki / "jws/tx-valid.jws").read_text().strip())
    assert t.transactionId


@pytest.mark.parametrize("bad", [b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
                                 b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                                 b"not a certificate"])
def test_roots_that_are_neither_der_nor_pem_certificates(testpki: Path, bad: bytes) -> None:
    # Refused when the verifier is made, saying which root and why (the constructor's ValueError, as before).
    with pytest.raises(ValueError, match=r"root certificate 0( is PEM text whose CERTIFICATE blocks do not decode|"
                                         r": a PEM block is not an X.509 certificate| is not a DER X.509 certificate)"):
        SignedDataVerifier([bad], False, Environment.SANDBOX, BUNDLE)
