package appstoreserver

import (
	"errors"
	"runtime"

	"appstoreserver.dev/appstoreserver/internal/capi"
	"appstoreserver.dev/appstoreserver/model"
)

// Legacy receipts, for teams migrating off verifyReceipt. None of the extraction functions checks a signature:
// anyone can build a receipt that parses. Use the ids only to look the customer up with the App Store Server API
// (Get Transaction History); use ReceiptVerifier to trust a receipt's contents.

func extracted(id string, err error) (string, error) {
	var ce *capi.Error
	if errors.As(err, &ce) && VerificationStatus(ce.Status) == VerificationStatusNotFound {
		return "", nil // Apple's libraries return null
	}
	if err != nil {
		return "", plainError(err)
	}
	return id, nil
}

// ExtractTransactionIDFromAppReceipt is Apple's ReceiptUtility.extractTransactionIdFromAppReceipt: the first
// in-app transaction id of a base64 app receipt, "" (and no error) when it has none. Errors: *Error with status
// INVALID_RECEIPT.
func ExtractTransactionIDFromAppReceipt(appReceipt string) (string, error) {
	return extracted(capi.ReceiptExtractTransactionID([]byte(appReceipt)))
}

// ExtractTransactionIDFromTransactionReceipt is Apple's ReceiptUtility.extractTransactionIdFromTransactionReceipt:
// the transaction id of an old-style (iOS 6) transaction receipt, "" (and no error) when it has none.
func ExtractTransactionIDFromTransactionReceipt(transactionReceipt string) (string, error) {
	return extracted(capi.TransactionReceiptExtractTransactionID([]byte(transactionReceipt)))
}

// ExtractTransactionIDs returns every transaction id of a base64 app receipt (which no Apple library offers).
func ExtractTransactionIDs(appReceipt string) (*model.AppReceiptTransactionIds, error) {
	raw, err := capi.ReceiptExtractTransactionIds([]byte(appReceipt))
	if err != nil {
		return nil, plainError(err)
	}
	var out model.AppReceiptTransactionIds
	if err := decodeInto(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReceiptVerifier verifies app receipts (PKCS #7 signature, then the chain to the given roots at the receipt's
// creation date with Apple's marker OIDs, then the bundle ID). Safe for concurrent use.
type ReceiptVerifier struct {
	h handle[capi.ReceiptVerifier]
}

// NewReceiptVerifier makes a receipt verifier: roots DER or PEM (for App Store receipts AppleIncRoot()); bundleID
// "" accepts any bundle ID.
func NewReceiptVerifier(roots [][]byte, bundleID string) (*ReceiptVerifier, error) {
	p, err := capi.ReceiptVerifierNew(roots, optional(bundleID))
	if err != nil {
		return nil, plainError(err)
	}
	v := &ReceiptVerifier{}
	v.h = handle[capi.ReceiptVerifier]{p: p, free: capi.ReceiptVerifierFree}
	runtime.SetFinalizer(v, (*ReceiptVerifier).Close)
	return v, nil
}

// Close releases the verifier.
func (v *ReceiptVerifier) Close() error {
	if v == nil {
		return nil
	}
	v.h.close()
	return nil
}

// Verify verifies a base64 app receipt and returns its documented fields and how it was verified. Errors:
// *VerificationError (signature, chain, bundle ID) or *Error (INVALID_RECEIPT, INVALID_ARGUMENT).
func (v *ReceiptVerifier) Verify(appReceipt string) (*model.VerifiedAppReceiptFields, error) {
	if v == nil {
		return nil, ErrClosed
	}
	p, ok := v.h.get()
	if !ok {
		return nil, ErrClosed
	}
	defer v.h.release()
	raw, err := capi.ReceiptVerifierVerify(p, []byte(appReceipt))
	if err != nil {
		var ce *capi.Error
		if errors.As(err, &ce) && VerificationStatus(ce.Status) == VerificationStatusInvalidReceipt {
			return nil, plainError(err)
		}
		return nil, verificationError(err)
	}
	var out model.VerifiedAppReceiptFields
	if err := decodeInto(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
