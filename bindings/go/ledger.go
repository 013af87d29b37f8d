package appstoreserver

import (
	"errors"
	"runtime"
	"time"

	"appstoreserver.dev/appstoreserver/internal/capi"
	"appstoreserver.dev/appstoreserver/model"
)

// Ledger is a durable record of verified App Store data and, from it, what each customer is entitled to at any
// instant (docs/ledger.md). Only values its verifier accepts enter; each ingest is acknowledged once durable. Safe
// for concurrent use (calls are serialized inside); several processes may share one SQLite file.
type Ledger struct {
	h handle[capi.Ledger]
}

// The ledger's C object holds the verifier's, which may call the verifier's Go transport (online checks): the
// transport's user data lives until the verifier and every ledger made with it are closed.

// OpenLedger opens (creating or migrating) the ledger at url: "sqlite:/path/ledger.db", "sqlite::memory:" or
// "postgresql://user@host:port/database". Every value it records is verified with verifier (the ledger keeps its
// own reference: the verifier may be closed). Errors: *Error (INVALID_ARGUMENT, CONFIGURATION_ERROR,
// STORAGE_ERROR).
func OpenLedger(url string, verifier *SignedDataVerifier) (*Ledger, error) {
	if verifier == nil {
		return nil, argError("verifier", "is nil")
	}
	vp, ok := verifier.h.get()
	if !ok {
		return nil, ErrClosed
	}
	p, err := capi.LedgerOpen(url, vp)
	bridge := verifier.transport
	if err == nil && bridge != nil {
		bridge.retain()
	}
	verifier.h.release()
	if err != nil {
		return nil, plainError(err)
	}
	l := &Ledger{}
	l.h = handle[capi.Ledger]{p: p, free: func(p capi.Ledger) {
		capi.LedgerFree(p)
		if bridge != nil {
			bridge.release()
		}
	}}
	runtime.SetFinalizer(l, (*Ledger).Close)
	return l, nil
}

// Close closes the database.
func (l *Ledger) Close() error {
	if l == nil {
		return nil
	}
	l.h.close()
	return nil
}

func (l *Ledger) ingest(fn func(capi.Ledger, []byte) ([]byte, error), jws string) (*model.LedgerIngestResult, error) {
	if l == nil {
		return nil, ErrClosed
	}
	p, ok := l.h.get()
	if !ok {
		return nil, ErrClosed
	}
	defer l.h.release()
	raw, err := fn(p, []byte(jws))
	if err != nil {
		var ce *capi.Error
		if errors.As(err, &ce) && VerificationStatus(ce.Status) == VerificationStatusStorageError {
			return nil, plainError(err)
		}
		return nil, verificationError(err)
	}
	var out model.LedgerIngestResult
	if err := decodeInto(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// IngestNotification verifies and records a notification's signedPayload (its signed transaction and renewal info
// too). Errors: *VerificationError (refused: nothing changed), *Error with status STORAGE_ERROR (nothing was
// acknowledged: give the value again later).
func (l *Ledger) IngestNotification(signedPayload string) (*model.LedgerIngestResult, error) {
	return l.ingest(capi.LedgerIngestNotification, signedPayload)
}

// IngestTransaction verifies and records a signed transaction (from the app or the App Store Server API).
func (l *Ledger) IngestTransaction(signedTransaction string) (*model.LedgerIngestResult, error) {
	return l.ingest(capi.LedgerIngestTransaction, signedTransaction)
}

// IngestRenewalInfo verifies and records a signed renewal info (Get All Subscription Statuses).
func (l *Ledger) IngestRenewalInfo(signedRenewalInfo string) (*model.LedgerIngestResult, error) {
	return l.ingest(capi.LedgerIngestRenewalInfo, signedRenewalInfo)
}

func atMs(at time.Time) int64 {
	if at.IsZero() {
		return 0
	}
	return at.UnixMilli()
}

// Subscription is one subscription (its originalTransactionId) at an instant (zero: now), from everything the
// ledger knows now; nil when the ledger knows nothing of it. SubscriptionAsOf chooses the knowledge time.
func (l *Ledger) Subscription(originalTransactionID string, at time.Time) (*model.LedgerSubscription, error) {
	return l.SubscriptionAsOf(originalTransactionID, at, time.Time{})
}

// SubscriptionAsOf is Subscription at instant at from the facts signed at or before asOf (each zero: now; asOf equal
// to at: as known then; docs/ledger.md, "Bitemporal queries"). An instant before 1970 is an *Error with
// INVALID_ARGUMENT.
func (l *Ledger) SubscriptionAsOf(originalTransactionID string, at, asOf time.Time) (*model.LedgerSubscription, error) {
	if l == nil {
		return nil, ErrClosed
	}
	p, ok := l.h.get()
	if !ok {
		return nil, ErrClosed
	}
	defer l.h.release()
	raw, err := capi.LedgerQuerySubscription(p, originalTransactionID, atMs(at), atMs(asOf))
	if err != nil {
		return nil, plainError(err)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	var out model.LedgerSubscription
	if err := decodeInto(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Customer is one customer (an appAccountToken, or the originalTransactionId of purchases without one) at an
// instant (zero: now), from everything the ledger knows now: entitlements, subscriptions, purchases, consumables.
// CustomerAsOf chooses the knowledge time.
func (l *Ledger) Customer(customerID string, at time.Time) (*model.LedgerCustomer, error) {
	return l.CustomerAsOf(customerID, at, time.Time{})
}

// CustomerAsOf is Customer at instant at from the facts signed at or before asOf (each zero: now; asOf equal to at:
// as known then).
func (l *Ledger) CustomerAsOf(customerID string, at, asOf time.Time) (*model.LedgerCustomer, error) {
	return query[model.LedgerCustomer](l, func(p capi.Ledger) ([]byte, error) {
		return capi.LedgerQueryCustomer(p, customerID, atMs(at), atMs(asOf))
	})
}

// Summary is the ledger's counts and the notifications whose data.status it does not reproduce.
func (l *Ledger) Summary() (*model.LedgerSummary, error) {
	return query[model.LedgerSummary](l, capi.LedgerQuerySummary)
}

// Reverify verifies every stored value again with the ledger's verifier: how many were checked (Checked) and the
// ones it refuses now (Refused, each with the verifier's status, reason and message). With online checks on, a
// certificate revoked since the value was stored is found. Nothing is changed.
func (l *Ledger) Reverify() (*model.LedgerReverifyResult, error) {
	return query[model.LedgerReverifyResult](l, capi.LedgerReverify)
}

// Disagreements is every disagreement of the oracle, a page at a time, in the summary's order (every CONTRADICTION
// first, then INCOMPLETE_HISTORY, each by signedDate, then notificationUUID): at most limit (1 to 10000; 0 means 1000)
// after the cursor after (the previous page's Next; "" for the first page). Next is nil after the last page. A cursor
// this method did not make, or a limit above 10000, is an *Error (VerificationStatusInvalidArgument).
func (l *Ledger) Disagreements(after string, limit uint32) (*model.LedgerDisagreementPage, error) {
	return query[model.LedgerDisagreementPage](l, func(p capi.Ledger) ([]byte, error) {
		return capi.LedgerQueryDisagreements(p, after, limit)
	})
}

// SubscriptionIds is the ledger's subscription ids (originalTransactionIds), a page at a time in the database's order: at most
// limit (1 to 10000; 0 means 1000) after the cursor after (the previous page's Next, its last id; "" for the first
// page). Next is nil after the last page. A limit above 10000 is an *Error (VerificationStatusInvalidArgument).
func (l *Ledger) SubscriptionIds(after string, limit uint32) (*model.LedgerIdPage, error) {
	return query[model.LedgerIdPage](l, func(p capi.Ledger) ([]byte, error) {
		return capi.LedgerQuerySubscriptionIds(p, after, limit)
	})
}

// CustomerIds is the ledger's customer ids (what Customer answers for), a page at a time, as SubscriptionIds.
func (l *Ledger) CustomerIds(after string, limit uint32) (*model.LedgerIdPage, error) {
	return query[model.LedgerIdPage](l, func(p capi.Ledger) ([]byte, error) {
		return capi.LedgerQueryCustomerIds(p, after, limit)
	})
}

// ImportJSONL imports a file of JSON lines of signed values (docs/ledger.md, "Bulk import"): each line
// {"notification": JWS}, {"signedPayload": JWS}, {"transaction": JWS}, {"renewalInfo": JWS} or a bare JWS (a
// notification). Values are verified on every core and committed batchSize lines per transaction (0: 1000); running
// the same file again after an interruption stores what is missing and nothing twice. Refused lines are in the result
// (RefusedCount, and Refused with their line numbers), not an error; a file that cannot be read is an error.
func (l *Ledger) ImportJSONL(path string, batchSize uint32) (*model.LedgerImportResult, error) {
	return query[model.LedgerImportResult](l, func(p capi.Ledger) ([]byte, error) {
		return capi.LedgerImportJsonl(p, path, batchSize)
	})
}

// ExportJSONL writes every stored value as the JSON lines ImportJSONL reads (docs/ledger.md, "Export"), each JWS
// byte for byte as ingested: written beside path (mode 0600), flushed, then renamed over it, so path is the whole
// export or what it was before. A file that cannot be created is an *Error (VerificationStatusInvalidArgument); a
// failed write (disk full) an *Error with VerificationStatusStorageError.
func (l *Ledger) ExportJSONL(path string) (*model.LedgerExportResult, error) {
	return query[model.LedgerExportResult](l, func(p capi.Ledger) ([]byte, error) {
		return capi.LedgerExportJsonl(p, path)
	})
}

// query calls a ledger function that answers JSON, holding the handle for the call, and decodes the answer into a T.
func query[T any](l *Ledger, call func(capi.Ledger) ([]byte, error)) (*T, error) {
	if l == nil {
		return nil, ErrClosed
	}
	p, ok := l.h.get()
	if !ok {
		return nil, ErrClosed
	}
	defer l.h.release()
	raw, err := call(p)
	if err != nil {
		return nil, plainError(err)
	}
	var out T
	if err := decodeInto(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
