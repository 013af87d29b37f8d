"""appstoreserver: Apple's App Store Server Library for Python (same modules, classes and methods as Apple's
appstoreserverlibrary) on libappstoreserver, one verified implementation in Swift reached through its C ABI.

    from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException
    from appstoreserver.api_client import AppStoreServerAPIClient, APIException
    from appstoreserver.models.Environment import Environment

The native library is bundled in the package (libappstoreserver.so.0, self-contained: no Swift runtime or
system OpenSSL needed at run time).
"""

from ._generated.errors import AppStoreStatus, FailureReason
from ._native import LIBRARY_VERSION, library_path
from ._signing import ExternalSigner, Signer, SigningError
from .roots import (AppleRootCertificate, apple_receipt_root_certificates, apple_root_certificate_details,
                    apple_root_certificates)

__version__ = LIBRARY_VERSION

__all__ = ["AppStoreStatus", "AppleRootCertificate", "ExternalSigner", "FailureReason", "LIBRARY_VERSION", "Signer",
           "SigningError", "__version__", "apple_receipt_root_certificates", "apple_root_certificate_details",
           "apple_root_certificates", "library_path"]
