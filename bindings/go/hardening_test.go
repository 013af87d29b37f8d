package appstoreserver

// Wrong arguments are errors with a reason, never a panic or a crash (run with GODEBUG=cgocheck=2 by run-tests).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func wantError(t *testing.T, what string, err error, status VerificationStatus, reason Reason) {
	t.Helper()
	var e *Error
	var ve *VerificationError
	switch {
	case errors.As(err, &e):
		if e.Status != status || (reason >= 0 && e.Reason != reason) {
			t.Errorf("%s: %v, want %s (%s)", what, err, status, reason)
		}
	case errors.As(err, &ve):
		if ve.Status != status || (reason >= 0 && ve.Reason != reason) {
			t.Errorf("%s: %v, want %s (%s)", what, err, status, reason)
		}
	default:
		t.Errorf("%s: %T %v, want %s (%s)", what, err, err, status, reason)
	}
}

func TestWrongArguments(t *testing.T) {
	root, err := os.ReadFile(filepath.Join(testpkiDir(t), "root.der"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewSignedDataVerifier([][]byte{root}, false, EnvironmentSandbox, "com.example\x00evil", 0)
	wantError(t, "a bundle id with a NUL byte", err, VerificationStatusInvalidArgument, ReasonInvalidArgument)
	_, err = NewSignedDataVerifier([][]byte{root}, false, Environment("Staging"), "com.example", 0)
	wantError(t, "an unknown environment", err, VerificationStatusInvalidArgument, ReasonInvalidArgument)
	_, err = NewSignedDataVerifier(nil, false, EnvironmentSandbox, "com.example", 0)
	wantError(t, "no roots", err, VerificationStatusConfigurationError, ReasonNoTrustAnchor)
	_, err = NewSignedDataVerifier([][]byte{[]byte("not a certificate")}, false, EnvironmentSandbox, "com.example", 0)
	wantError(t, "a root that is no certificate", err, VerificationStatusConfigurationError, ReasonBadCertificate)
	_, err = NewSignedDataVerifier([][]byte{root}, false, EnvironmentProduction, "com.example", 0)
	wantError(t, "Production without an app Apple ID", err, VerificationStatusConfigurationError, -1)

	v, err := NewSignedDataVerifierWithOptions(VerifierOptions{RootCertificates: [][]byte{root}, Environment: EnvironmentSandbox,
		BundleID: "com.example.testpki", MaxJWSBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	_, err = v.VerifyAndDecodeTransaction(ctx, strings.Repeat("a", 4097))
	wantError(t, "a JWS over the limit", err, VerificationStatusInvalidJwtFormat, ReasonInputTooLarge)
	for _, jws := range []string{"", ".", "a.b.c", "\x00\x00.\xff.\x01", strings.Repeat(".", 100)} {
		_, err = v.VerifyAndDecodeNotification(ctx, jws)
		var ve *VerificationError
		if !errors.As(err, &ve) {
			t.Errorf("%q: %v", jws, err)
		}
	}
	if _, err := v.VerifyAndDecodeJSON(ctx, Operation(99), "a.b.c"); err == nil {
		t.Error("an unknown operation was accepted")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := v.VerifyAndDecodeTransaction(cancelled, "a.b.c"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}

	// Receipts.
	_, err = ExtractTransactionIDFromAppReceipt("not base64 at all!")
	wantError(t, "a receipt that is not base64", err, VerificationStatusInvalidReceipt, ReasonReceiptMalformed)
	_, err = ExtractTransactionIDFromAppReceipt("")
	wantError(t, "an empty receipt", err, VerificationStatusInvalidArgument, -1)
	_, err = NewReceiptVerifier(nil, "")
	wantError(t, "a receipt verifier without roots", err, VerificationStatusConfigurationError, ReasonNoTrustAnchor)
	rv, err := NewReceiptVerifier([][]byte{AppleIncRoot()}, "com.example")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rv.Verify("MIIB")
	wantError(t, "a truncated receipt", err, VerificationStatusInvalidReceipt, ReasonReceiptMalformed)
	rv.Close()
	if _, err := rv.Verify("MIIB"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}

	// The API client.
	p8, _ := testP8(t)
	_, err = NewAppStoreServerAPIClient(p8, testKeyID, testIssuer, testBundle, EnvironmentXcode)
	wantError(t, "an Xcode client", err, VerificationStatusConfigurationError, ReasonUnsupportedEnvironment)
	key, err := NewSigningKey(p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	_, err = NewAppStoreServerAPIClientWithKey(key, EnvironmentSandbox, &ClientOptions{MaxRetries: 101})
	wantError(t, "101 retries", err, VerificationStatusInvalidArgument, ReasonInvalidArgument)
	_, err = NewAppStoreServerAPIClientWithKey(key, EnvironmentSandbox, &ClientOptions{SandboxFallback: true})
	wantError(t, "a Sandbox client with the Sandbox fallback", err, VerificationStatusConfigurationError, -1)
	c, err := NewAppStoreServerAPIClientWithKey(key, EnvironmentSandbox, &ClientOptions{BaseURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = c.CallJSON(ctx, "noSuchEndpoint", nil)
	wantError(t, "an unknown endpoint", err, VerificationStatusInvalidArgument, ReasonUnknownEndpoint)
	_, err = c.GetTransactionInfo(ctx, "")
	wantError(t, "an empty transaction id", err, VerificationStatusInvalidArgument, -1)
	_, _, err = c.CallJSON(ctx, "getTransactionInfo", map[string]any{"transactionId": "1", "nope": 2})
	wantError(t, "an unknown parameter", err, VerificationStatusInvalidArgument, ReasonInvalidParameters)
	// Nothing listens on port 9: a transport failure, never retried, an *APIError.
	_, err = c.GetTransactionInfo(ctx, "1")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != VerificationStatusTransportError {
		t.Errorf("nothing listening: %v", err)
	}
	if _, err := NewSigningKeyWithSigner(nil, testKeyID, testIssuer, testBundle, 0); err == nil {
		t.Error("a nil signer was accepted")
	}
	if _, err := OpenLedger("sqlite::memory:", nil); err == nil {
		t.Error("a ledger without a verifier was accepted")
	}
	l, err := OpenLedger("sqlite::memory:", v)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Customer("a\x00b", time.Time{})
	wantError(t, "a customer id with a NUL byte", err, VerificationStatusInvalidArgument, ReasonInvalidArgument)
	_, err = OpenLedger("mysql://nope", v)
	wantError(t, "an unknown database URL", err, VerificationStatusInvalidArgument, -1)

	// Nil handles are refused like closed ones.
	var nv *SignedDataVerifier
	if _, err := nv.VerifyAndDecodeTransaction(ctx, "a.b.c"); !errors.Is(err, ErrClosed) {
		t.Errorf("a nil verifier: %v", err)
	}
	nv.Close()
	var nk *SigningKey
	if _, err := nk.CreateAPIToken(time.Time{}, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("a nil key: %v", err)
	}
	if _, err := NewAppStoreServerAPIClientWithKey(nil, EnvironmentSandbox, nil); err == nil {
		t.Error("a nil key was accepted by the client")
	}
	var nc *AppStoreServerAPIClient
	if _, err := nc.GetTransactionInfo(ctx, "1"); !errors.Is(err, ErrClosed) {
		t.Errorf("a nil client: %v", err)
	}
	var nl *Ledger
	if _, err := nl.Summary(); !errors.Is(err, ErrClosed) {
		t.Errorf("a nil ledger: %v", err)
	}
	var nr *ReceiptVerifier
	if _, err := nr.Verify("MIIB"); !errors.Is(err, ErrClosed) {
		t.Errorf("a nil receipt verifier: %v", err)
	}
}
