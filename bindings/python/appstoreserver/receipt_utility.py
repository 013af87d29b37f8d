"""ReceiptUtility (Apple's appstoreserverlibrary.receipt_utility) on libappstoreserver, plus what Apple's library
does not offer: every transaction id of an app receipt, and real verification of app receipts (ReceiptVerifier).

The extraction calls check no signature: anyone can build a receipt that parses. Use the ids only to look the
customer up with the App Store Server API; verify a receipt (ReceiptVerifier) to trust its contents.
"""

from __future__ import annotations

from ctypes import byref, c_char_p, c_size_t, c_void_p
from typing import Any, List, Optional

from . import _args
from ._docs import from_header
from ._generated.errors import AppStoreStatus, FailureReason
from ._native import lib, new_handle, read_error, take_string
from .models.AppReceiptTransactionIds import AppReceiptTransactionIds
from .models.VerifiedAppReceiptFields import VerifiedAppReceiptFields
from .signed_data_verifier import VerificationException, exception_from

__all__ = ["ReceiptUtility", "ReceiptVerifier", "ReceiptException", "VerificationException", "PKCS7_OID", "IN_APP_ARRAY",
           "TRANSACTION_IDENTIFIER", "ORIGINAL_TRANSACTION_IDENTIFIER"]

# Apple's module constants.
PKCS7_OID = "1.2.840.113549.1.7.2"
IN_APP_ARRAY = 17
TRANSACTION_IDENTIFIER = 1703
ORIGINAL_TRANSACTION_IDENTIFIER = 1705


class ReceiptException(ValueError):
    """A receipt that cannot be read (a ValueError, as Apple's library raises): .status (AppStoreStatus), .reason
    (FailureReason) and .message say why."""

    def __init__(self, message: str, status: Optional[AppStoreStatus] = None,
                 reason: Optional[FailureReason] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason


def _extract(fn: Any, receipt: Any, name: str) -> Optional[bytes]:
    data = _args.text_or_bytes(receipt, name)
    out = c_void_p()
    err = c_void_p()
    st = fn(data, len(data), byref(out), byref(err))
    if st == 0:
        return take_string(out)
    info = read_error(err, st)
    if st == AppStoreStatus.NOT_FOUND:
        return None
    v = exception_from(info)
    raise ReceiptException(info.message, v.appstore_status, v.reason)


class ReceiptUtility:
    """Transaction ids of legacy receipts, for teams moving off verifyReceipt (Apple's methods)."""

    @from_header("appstore_receipt_extract_transaction_id")
    def extract_transaction_id_from_app_receipt(self, app_receipt: str) -> Optional[str]:
        """None when the receipt has no in-app purchases. Any problem raises ValueError (ReceiptException)."""
        v = _extract(lib.appstore_receipt_extract_transaction_id, app_receipt, "app_receipt")
        return None if v is None else v.decode("utf-8")

    @from_header("appstore_transaction_receipt_extract_transaction_id")
    def extract_transaction_id_from_transaction_receipt(self, transaction_receipt: str) -> Optional[str]:
        """None when the receipt has no transaction id. A receipt that cannot be read raises ValueError
        (ReceiptException; Apple's library raises binascii.Error or UnicodeDecodeError, both ValueErrors)."""
        v = _extract(lib.appstore_transaction_receipt_extract_transaction_id, transaction_receipt,
                     "transaction_receipt")
        return None if v is None else v.decode("utf-8")

    @from_header("appstore_receipt_extract_transaction_ids")
    def extract_transaction_ids_from_app_receipt(self, app_receipt: str) -> AppReceiptTransactionIds:
        """Returns AppReceiptTransactionIds; .firstTransactionId is what extract_transaction_id_from_app_receipt
        returns. Any problem raises ValueError (ReceiptException)."""
        import json

        data = _args.text_or_bytes(app_receipt, "app_receipt")
        out = c_void_p()
        err = c_void_p()
        st = lib.appstore_receipt_extract_transaction_ids(data, len(data), byref(out), byref(err))
        if st != 0:
            info = read_error(err, st)
            v = exception_from(info)
            raise ReceiptException(info.message, v.appstore_status, v.reason)
        return AppReceiptTransactionIds.from_dict(json.loads(take_string(out)))


class ReceiptVerifier:
    """Verifies base64 app receipts (PKCS#7 signature, the signer's chain to one of root_certificates at the
    receipt's creation date, Apple's marker extensions, the bundle id). Beyond Apple's libraries. For App Store
    receipts the root is Apple Inc. Root. Immutable and thread-safe.

    verify() returns the receipt's fields (VerifiedAppReceiptFields) or raises VerificationException (.status in
    Apple's vocabulary, .appstore_status / .reason / .message precise)."""

    def __init__(self, root_certificates: List[bytes], bundle_id: Optional[str] = None):
        roots = _args.blob_list(root_certificates, "root_certificates")
        bundle = _args.text(bundle_id, "bundle_id", optional=True)
        n = len(roots)
        ders = (c_char_p * max(n, 1))(*roots)
        lens = (c_size_t * max(n, 1))(*[len(r) for r in roots])
        handle, info = new_handle("appstore_receipt_verifier_new", ders if n else None, lens if n else None, n, bundle)
        if handle is None:
            assert info is not None
            raise ValueError(info.message)
        self._handle = handle
        self._h = handle.ptr

    @from_header("appstore_receipt_verifier_verify")
    def verify(self, app_receipt: str) -> VerifiedAppReceiptFields:
        """Returns VerifiedAppReceiptFields; a receipt that does not verify raises VerificationException."""
        import json

        data = _args.text_or_bytes(app_receipt, "app_receipt")
        out = c_void_p()
        err = c_void_p()
        st = lib.appstore_receipt_verifier_verify(self._h, data, len(data), byref(out), byref(err))
        if st != 0:
            raise exception_from(read_error(err, st))
        return VerifiedAppReceiptFields.from_dict(json.loads(take_string(out)))

