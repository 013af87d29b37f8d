// Package appstoreserver verifies App Store signed data (notifications V2, transactions, renewal info, app
// transactions, Retention Messaging requests), calls the App Store Server API, creates Apple's signatures, reads
// legacy receipts and keeps a purchase ledger, through libappstoreserver (the project's one verified
// implementation; cgo over the self-contained library, found with `pkg-config appstoreserver`).
//
// Every handle (SignedDataVerifier, AppStoreServerAPIClient, SigningKey, ReceiptVerifier, Ledger) is safe for
// concurrent use by many goroutines; Close releases it (a finalizer does so too, as a safety net). Failures are
// *VerificationError (signed data that does not verify), *APIError (App Store Server API calls) and *Error
// (everything else: bad arguments, configuration, keys, receipts, the ledger's storage); use errors.As.
//
// The models are in package model (spec/models.json: Apple's JSON keys, optional fields as pointers, enums as named
// types that keep values Apple adds later). See docs/go.md.
package appstoreserver
