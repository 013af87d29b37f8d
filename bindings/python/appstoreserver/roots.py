"""Apple's root certificates, as the library carries them: each checked against the SHA-256 fingerprint Apple
publishes (https://www.apple.com/certificateauthority/) before use, so a verifier needs no download.

    from appstoreserver import apple_root_certificates
    verifier = SignedDataVerifier(apple_root_certificates(), True, Environment.PRODUCTION, bundle_id, app_apple_id)
"""

from __future__ import annotations

from ctypes import byref, c_size_t, string_at
from typing import List, NamedTuple

from ._docs import from_header
from ._native import lib


class AppleRootCertificate(NamedTuple):
    """One of Apple's roots: its name, its SHA-256 fingerprint as Apple publishes it, and the DER bytes."""

    name: str
    sha256_fingerprint: str
    der: bytes


@from_header("appstore_apple_root_der")
def apple_root_certificate_details() -> List[AppleRootCertificate]:
    """Every root the library carries, as AppleRootCertificate (name, sha256_fingerprint, der)."""
    out = []
    for i in range(lib.appstore_apple_root_count()):
        size = c_size_t()
        ptr = lib.appstore_apple_root_der(i, byref(size))
        out.append(AppleRootCertificate(lib.appstore_apple_root_name(i).decode(), lib.appstore_apple_root_sha256(i).decode(),
                                        string_at(ptr, size.value)))
    return out


def apple_root_certificates() -> List[bytes]:
    """The DER bytes of Apple Root CA - G3, the anchor of every App Store signed payload: what SignedDataVerifier's
    root_certificates takes (a list, as Apple's)."""
    return [r.der for r in apple_root_certificate_details() if r.name == "Apple Root CA - G3"]


def apple_receipt_root_certificates() -> List[bytes]:
    """The DER bytes of Apple Inc. Root, the anchor of app receipts (ReceiptVerifier)."""
    return [r.der for r in apple_root_certificate_details() if r.name == "Apple Inc. Root"]
