"""The purchase ledger: who is entitled to what, at any instant, from signed App Store data only (docs/ledger.md).

    from appstoreserver.ledger import Ledger

    with Ledger.open("sqlite:/var/lib/app/ledger.db", verifier) as ledger:
        ledger.ingest_notification(body["signedPayload"])        # returns once the event is durable
        customer = ledger.customer(app_account_token)             # now; or at=milliseconds since 1970 / a datetime
        then = ledger.customer(app_account_token, at=oct3, as_of=oct3)   # as known on October 3
        for e in customer.entitlements or []:
            print(e.productId, e.reason, e.until)

Every value is verified with the ledger's SignedDataVerifier before it is stored; a value the verifier refuses raises
its VerificationException (Apple's `status`, this library's `appstore_status`, `reason`, `message`) and changes
nothing. Answers are the generated models (LedgerSubscription, LedgerCustomer, LedgerSummary, LedgerIngestResult).
One ledger may be shared by threads: calls are serialized inside the library and run without the GIL.
"""

from __future__ import annotations

import json
import os
from ctypes import byref, c_void_p
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Callable, Optional, Type, Union

from . import _args
from ._docs import from_header
from ._generated.errors import AppStoreStatus, FailureReason
from ._native import ErrorInfo, Handle, lib, read_error, take_string
from .models.LedgerCustomer import LedgerCustomer
from .models.LedgerDisagreementPage import LedgerDisagreementPage
from .models.LedgerIdPage import LedgerIdPage
from .models.LedgerExportResult import LedgerExportResult
from .models.LedgerImportResult import LedgerImportResult
from .models.LedgerIngestResult import LedgerIngestResult
from .models.LedgerReverifyResult import LedgerReverifyResult
from .models.LedgerSubscription import LedgerSubscription
from .models.LedgerSummary import LedgerSummary
from .signed_data_verifier import SignedDataVerifier, VerificationException, exception_from

__all__ = ["Ledger", "LedgerError", "LedgerCustomer", "LedgerImportResult", "LedgerIngestResult", "LedgerReverifyResult", "LedgerSubscription",
           "LedgerSummary", "VerificationException"]

Instant = Union[int, datetime, None]

# The statuses a refused value comes with: the verifier's (spec/errors.json, the verification family).
_VERIFICATION_STATUSES = {AppStoreStatus.VERIFICATION_FAILURE, AppStoreStatus.RETRYABLE_VERIFICATION_FAILURE,
                          AppStoreStatus.INVALID_APP_IDENTIFIER, AppStoreStatus.INVALID_ENVIRONMENT,
                          AppStoreStatus.INVALID_CHAIN_LENGTH, AppStoreStatus.INVALID_CERTIFICATE,
                          AppStoreStatus.INVALID_JWT_FORMAT}


class LedgerError(Exception):
    """The ledger cannot be opened or written: a database of a newer schema or of another app or environment than the
    verifier's (reason ledger_identity_mismatch), or PostgreSQL without libpq (CONFIGURATION_ERROR), or the database failed (STORAGE_ERROR / storage_failed, with the database's own message:
    I/O error, disk full, a corrupt file, a server that cannot be reached). Nothing was acknowledged: give the value
    again later.

    appstore_status  AppStoreStatus
    reason           FailureReason
    message          what failed, in words
    """

    def __init__(self, appstore_status: Any, reason: Any, message: str):
        super().__init__(message)
        self.appstore_status = appstore_status
        self.reason = reason
        self.message = message

    def __repr__(self) -> str:
        return f"LedgerError(appstore_status={self.appstore_status!s}, reason={self.reason!s}, message={self.message!r})"


def _enum_or_int(enum: Any, value: int) -> Any:
    try:
        return enum(value)
    except ValueError:
        return value


def _failure(info: ErrorInfo) -> Exception:
    """The exception for a failed ledger call: the verifier's for refused input, ValueError for an argument the
    ledger cannot use (a URL), LedgerError for the database."""
    if info.status in _VERIFICATION_STATUSES:
        return exception_from(info)
    if info.status == AppStoreStatus.INVALID_ARGUMENT:
        return ValueError(info.message)
    return LedgerError(_enum_or_int(AppStoreStatus, info.status), _enum_or_int(FailureReason, info.reason),
                       info.message)


def _instant(at: Instant, name: str = "at") -> int:
    """at / as_of: None (now), milliseconds since 1970, or a datetime (naive means UTC) -> the C ABI's at_ms /
    as_of_ms (0 = now)."""
    if at is None:
        return 0
    if isinstance(at, datetime):
        if at.tzinfo is None:
            at = at.replace(tzinfo=timezone.utc)
        ms = int(round(at.timestamp() * 1000))
    else:
        ms = _args.integer(at, name)  # type: ignore[assignment]
    if ms is None or ms <= 0:
        raise ValueError(f"{name} must be an instant after 1970 (milliseconds since 1970 or a datetime), got {at!r}")
    return ms


class Ledger:
    """A purchase ledger (docs/ledger.md): verified App Store data in, who is entitled to what out, durably.

    Open one with Ledger.open(url, verifier). Close it with close() or a `with` block (closing twice is fine; a call
    on a closed ledger raises ValueError).
    """

    __slots__ = ("_handle", "_verifier", "_url")

    def __init__(self, url: str, verifier: SignedDataVerifier):
        """Opens (creating it if needed) the ledger at `url`: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
        "sqlite::memory:" (lives until close()). The schema is created or migrated; no stored event is read (queries
        read their key's events; "?cache_mib=N" bounds the cache of those states). Every value is verified with
        `verifier`."""
        u = _args.text(url, "url")
        if not isinstance(verifier, SignedDataVerifier):
            raise TypeError(f"verifier must be a SignedDataVerifier, not {type(verifier).__name__}")
        if verifier._handle is None:
            # A verifier without roots refuses everything (Apple's behaviour); a ledger over it could store nothing.
            assert verifier._failure is not None
            raise ValueError(f"the verifier cannot verify anything: {verifier._failure.message}")
        out = c_void_p()
        err = c_void_p()
        st = lib.appstore_ledger_open(u, verifier._h, byref(out), byref(err))
        if st != 0:
            raise _failure(read_error(err, st)) from None
        self._handle = Handle(out.value, "appstore_ledger_free")  # type: ignore[arg-type]
        self._verifier = verifier
        self._url = url

    @classmethod
    @from_header("appstore_ledger_open")
    def open(cls, url: str, verifier: SignedDataVerifier) -> "Ledger":
        """The same as Ledger(url, verifier). A failure raises LedgerError."""
        return cls(url, verifier)

    @property
    def url(self) -> str:
        """The URL the ledger was opened with."""
        return self._url

    @property
    def verifier(self) -> SignedDataVerifier:
        """The verifier every ingested value goes through."""
        return self._verifier

    # ---- ingest -----------------------------------------------------------------------------------------------

    @from_header("appstore_ledger_ingest_notification")
    def ingest_notification(self, signed_payload: Union[str, bytes]) -> LedgerIngestResult:
        """An App Store Server Notification V2 signedPayload; returns once it is durable. A refused value raises the
        verifier's VerificationException."""
        return self._ingest(_ingest_notification, signed_payload, "signed_payload")

    @from_header("appstore_ledger_ingest_transaction")
    def ingest_transaction(self, signed_transaction: Union[str, bytes]) -> LedgerIngestResult:
        """A signed transaction; returns once it is durable. A refused value raises the verifier's
        VerificationException."""
        return self._ingest(_ingest_transaction, signed_transaction, "signed_transaction")

    @from_header("appstore_ledger_ingest_renewal_info")
    def ingest_renewal_info(self, signed_renewal_info: Union[str, bytes]) -> LedgerIngestResult:
        """A signed renewal info; returns once it is durable. A refused value raises the verifier's
        VerificationException."""
        return self._ingest(_ingest_renewal, signed_renewal_info, "signed_renewal_info")

    def _ingest(self, fn: Callable[..., int], signed: Any, name: str) -> LedgerIngestResult:
        data = _args.text_or_bytes(signed, name)
        h = self._handle.ptr
        out = c_void_p()
        err = c_void_p()
        st = fn(h, data, len(data), byref(out), byref(err))
        if st != 0:
            raise _failure(read_error(err, st)) from None
        return LedgerIngestResult.from_dict(json.loads(take_string(out)))

    # ---- queries ----------------------------------------------------------------------------------------------

    @from_header("appstore_ledger_query_subscription")
    def subscription(self, original_transaction_id: str, at: Instant = None, *,
                     as_of: Instant = None) -> Optional[LedgerSubscription]:
        """`at`: the instant asked about; `as_of`: the knowledge time (only facts signed by then count; as_of=at: as
        known then). Each None (now), milliseconds since 1970 or a datetime. No subscription: None."""
        key = _args.text(original_transaction_id, "original_transaction_id")
        data = self._query(_query_subscription, key, _instant(at), _instant(as_of, "as_of"))
        return None if data is None else LedgerSubscription.from_dict(data)

    @from_header("appstore_ledger_query_customer")
    def customer(self, customer_id: str, at: Instant = None, *, as_of: Instant = None) -> LedgerCustomer:
        """`at`: the instant asked about; `as_of`: the knowledge time (as_of=at: as known then). Each None (now),
        milliseconds since 1970 or a datetime."""
        key = _args.text(customer_id, "customer_id")
        return LedgerCustomer.from_dict(self._query(_query_customer, key, _instant(at), _instant(as_of, "as_of")))

    @from_header("appstore_ledger_query_summary")
    def summary(self) -> LedgerSummary:
        """The notifications the ledger does not reproduce are in `disagreements`."""
        return LedgerSummary.from_dict(self._query(_query_summary))

    def _query(self, fn: Callable[..., int], *args: Any) -> Any:
        h = self._handle.ptr
        out = c_void_p()
        err = c_void_p()
        st = fn(h, *args, byref(out), byref(err))
        if st != 0:
            raise _failure(read_error(err, st)) from None
        return json.loads(take_string(out))

    @from_header("appstore_ledger_query_disagreements")
    def disagreements(self, after: Optional[str] = None, limit: int = 1000) -> LedgerDisagreementPage:
        """Every disagreement, a page at a time, in the summary's order: at most `limit` (1...10000) after `after`
        (the previous page's `next`; None or "": the first page). `next` is None after the last page; a cursor this
        call did not make raises ValueError."""
        a = _args.text(after, "after", optional=True)
        n = _args.integer(limit, "limit", (1, 10000))
        return LedgerDisagreementPage.from_dict(self._query(_query_disagreements, a, n))

    @from_header("appstore_ledger_query_subscription_ids")
    def subscription_ids(self, after: Optional[str] = None, limit: int = 1000) -> LedgerIdPage:
        """The ledger's subscription ids (originalTransactionIds), a page at a time in the database's order: at most `limit`
        (1...10000) after `after` (the previous page's `next`, its last id; None or "": the first page). `next` is
        None after the last page."""
        a = _args.text(after, "after", optional=True)
        n = _args.integer(limit, "limit", (1, 10000))
        return LedgerIdPage.from_dict(self._query(_query_subscription_ids, a, n))

    @from_header("appstore_ledger_query_customer_ids")
    def customer_ids(self, after: Optional[str] = None, limit: int = 1000) -> LedgerIdPage:
        """The ledger's customer ids (what `customer()` answers for), a page at a time, as `subscription_ids`."""
        a = _args.text(after, "after", optional=True)
        n = _args.integer(limit, "limit", (1, 10000))
        return LedgerIdPage.from_dict(self._query(_query_customer_ids, a, n))

    @from_header("appstore_ledger_reverify")
    def reverify(self) -> LedgerReverifyResult:
        """Every stored value verified again with the ledger's verifier: `checked`, and `refused` (each with
        eventId, kind and the verifier's status, reason and message). Changes nothing."""
        return LedgerReverifyResult.from_dict(self._query(_reverify))

    @from_header("appstore_ledger_import_jsonl")
    def import_jsonl(self, path: Union[str, "os.PathLike[str]"], batch_size: int = 0) -> LedgerImportResult:
        """Imports a JSON lines file of signed values (docs/ledger.md, "Bulk import"); re-running it after an
        interruption stores what is missing and nothing twice. Refused lines are in the result (`refusedCount`, and
        `refused` with line numbers), not raised; a file that cannot be read raises ValueError."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, not {_args.shown(path)}")
        p = _args.text(os.fspath(path), "path")
        n = _args.integer(batch_size, "batch_size", _args.UINT32)
        return LedgerImportResult.from_dict(self._query(_import_jsonl, p, n))

    @from_header("appstore_ledger_export_jsonl")
    def export_jsonl(self, path: Union[str, "os.PathLike[str]"]) -> LedgerExportResult:
        """Writes every stored value as the JSON lines `import_jsonl` reads (docs/ledger.md, "Export"), each JWS byte
        for byte as ingested: written beside `path` (mode 0600), flushed, then renamed over it. A file that cannot be
        created raises ValueError; a failed write (disk full) raises LedgerError (STORAGE_ERROR)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, not {_args.shown(path)}")
        p = _args.text(os.fspath(path), "path")
        return LedgerExportResult.from_dict(self._query(_export_jsonl, p))

    # ---- lifetime ---------------------------------------------------------------------------------------------

    @from_header("appstore_ledger_free")
    def close(self) -> None:
        """What was acknowledged is on disk already. Idempotent."""
        self._handle.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self._url!r})"


_ingest_notification = lib.appstore_ledger_ingest_notification
_ingest_transaction = lib.appstore_ledger_ingest_transaction
_ingest_renewal = lib.appstore_ledger_ingest_renewal_info
_query_subscription = lib.appstore_ledger_query_subscription
_query_customer = lib.appstore_ledger_query_customer
_query_summary = lib.appstore_ledger_query_summary
_query_disagreements = lib.appstore_ledger_query_disagreements
_query_subscription_ids = lib.appstore_ledger_query_subscription_ids
_query_customer_ids = lib.appstore_ledger_query_customer_ids
_reverify = lib.appstore_ledger_reverify
_import_jsonl = lib.appstore_ledger_import_jsonl
_export_jsonl = lib.appstore_ledger_export_jsonl
