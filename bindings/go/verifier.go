package appstoreserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"time"
	"unsafe"

	"appstoreserver.dev/appstoreserver/internal/capi"
	"appstoreserver.dev/appstoreserver/model"
)

// VerifierOptions configures a SignedDataVerifier beyond Apple's constructor (NewSignedDataVerifierWithOptions).
type VerifierOptions struct {
	// RootCertificates are the trusted roots, DER or PEM (for App Store data: AppleRootCAG3()). Required except for
	// the Xcode and LocalTesting environments, which check no signatures.
	RootCertificates [][]byte
	// EnableOnlineChecks checks the chain for revocation at the OCSP responders it names (at the current time),
	// over HTTPClient.
	EnableOnlineChecks bool
	Environment        Environment
	BundleID           string
	// AppAppleID is the app's Apple ID; required for Production (0: none).
	AppAppleID int64
	// HTTPClient carries the OCSP exchanges (nil: a client of its own). Redirects are never followed.
	HTTPClient *http.Client
	// OCSPTimeout bounds one OCSP exchange (0: 30 s, Apple's).
	OCSPTimeout time.Duration
	// ChainCacheEntries and ChainCacheTTL size the verified-chain cache (both nil: 32 chains for 900 s; 0 entries
	// turns the cache off).
	ChainCacheEntries *uint32
	ChainCacheTTL     *time.Duration
	// MaxJWSBytes is the largest JWS accepted (0: 1 MiB); a longer one is refused before it is read.
	MaxJWSBytes int
	// NotificationCheck, when set, decides on the app a notification names (the Go form of Apple's verifyNotification
	// hook): VerifyAndDecodeNotification calls it after the signature, the chain and the payload passed, with the
	// bundle ID, app Apple ID (0: none) and environment ("": none) the notification carries (data, summary,
	// externalPurchaseToken or appData, in Apple's order), instead of the verifier's own check; a non-nil error fails
	// the call with that error. v.CheckNotificationApp is the default check, for a function that defers to it.
	NotificationCheck func(v *SignedDataVerifier, bundleID string, appAppleID int64, environment Environment) error
}

// SignedDataVerifier verifies and decodes App Store signed data (Apple's SignedDataVerifier): the ES256
// signature first, then the x5c chain against the given roots only (with Apple's marker OIDs, at the payload's
// signed date, or at the current time with OCSP when online checks are on), then the bundle ID, app Apple ID and
// environment. Immutable and safe for concurrent use by any number of goroutines.
type SignedDataVerifier struct {
	h                 handle[capi.Verifier]
	transport         *transportBridge // online checks only
	notificationCheck func(v *SignedDataVerifier, bundleID string, appAppleID int64, environment Environment) error
}

// NewSignedDataVerifier makes a verifier as Apple's libraries do (roots, online checks, environment, bundle ID,
// app Apple ID; appAppleID 0 = none, which Production refuses). Errors: *Error (CONFIGURATION_ERROR with
// ReasonNoTrustAnchor, ReasonBadCertificate, ReasonInvalidArgument, ...).
func NewSignedDataVerifier(roots [][]byte, enableOnlineChecks bool, environment Environment, bundleID string,
	appAppleID int64) (*SignedDataVerifier, error) {
	return NewSignedDataVerifierWithOptions(VerifierOptions{RootCertificates: roots, EnableOnlineChecks: enableOnlineChecks,
		Environment: environment, BundleID: bundleID, AppAppleID: appAppleID})
}

// NewSignedDataVerifierWithOptions makes a verifier with the options Apple's constructor does not have.
func NewSignedDataVerifierWithOptions(o VerifierOptions) (*SignedDataVerifier, error) {
	env := cEnvironment(o.Environment)
	if env == 0 {
		return nil, argError("environment", "is not one of Sandbox, Production, Xcode, LocalTesting: "+quote(string(o.Environment)))
	}
	if o.MaxJWSBytes < 0 {
		return nil, argError("MaxJWSBytes", "is negative")
	}
	opts, err := capi.VerifierOptionsNew()
	if err != nil {
		return nil, plainError(err)
	}
	defer capi.VerifierOptionsFree(opts)
	for _, r := range o.RootCertificates {
		if err := capi.VerifierOptionsAddRoot(opts, r); err != nil {
			return nil, plainError(err)
		}
	}
	if err := capi.VerifierOptionsSetBundleID(opts, o.BundleID); err != nil {
		return nil, plainError(err)
	}
	if o.AppAppleID != 0 {
		if err := capi.VerifierOptionsSetAppAppleID(opts, o.AppAppleID); err != nil {
			return nil, plainError(err)
		}
	}
	if err := capi.VerifierOptionsSetEnvironment(opts, env); err != nil {
		return nil, plainError(err)
	}
	if o.ChainCacheEntries != nil || o.ChainCacheTTL != nil {
		entries, ttl := uint32(32), int64(900)
		if o.ChainCacheEntries != nil {
			entries = *o.ChainCacheEntries
		}
		if o.ChainCacheTTL != nil {
			ttl = int64(*o.ChainCacheTTL / time.Second)
		}
		if err := capi.VerifierOptionsSetChainCache(opts, entries, ttl); err != nil {
			return nil, plainError(err)
		}
	}
	if o.MaxJWSBytes > 0 {
		if err := capi.VerifierOptionsSetMaxJwsBytes(opts, uint64(o.MaxJWSBytes)); err != nil {
			return nil, plainError(err)
		}
	}
	var bridge *transportBridge
	if o.EnableOnlineChecks {
		if err := capi.VerifierOptionsSetOnlineChecks(opts, 1); err != nil {
			return nil, plainError(err)
		}
		timeout := o.OCSPTimeout
		if timeout < 0 || timeout > time.Duration(1<<32-1)*time.Millisecond {
			return nil, argError("OCSPTimeout", "is out of range")
		}
		bridge, err = newTransportBridge(o.HTTPClient)
		if err != nil {
			return nil, plainError(err)
		}
		// The options and the verifier keep their own reference to the transport handle; the bridge's user data
		// lives until the verifier is closed.
		err = capi.VerifierOptionsSetTransport(opts, bridge.transport, uint32(timeout/time.Millisecond))
		bridge.freeTransport()
		if err != nil {
			bridge.close()
			return nil, plainError(err)
		}
	}
	p, err := capi.VerifierNew(opts)
	if err != nil {
		if bridge != nil {
			bridge.close()
		}
		return nil, plainError(err)
	}
	v := &SignedDataVerifier{transport: bridge, notificationCheck: o.NotificationCheck}
	v.h = handle[capi.Verifier]{p: p, free: func(p capi.Verifier) {
		capi.VerifierFree(p)
		if bridge != nil {
			bridge.release()
		}
	}}
	runtime.SetFinalizer(v, (*SignedDataVerifier).Close)
	return v, nil
}

// Close releases the verifier. Calls after Close fail with ErrClosed; Close waits for calls in progress.
func (v *SignedDataVerifier) Close() error {
	if v == nil {
		return nil
	}
	v.h.close()
	return nil
}

type verifyFunc func(capi.Verifier, []byte) ([]byte, error)

type verifyIntoFunc func(capi.Verifier, []byte, func([]byte) error) error

// call runs one verify call: the handle held, the caller's context reaching the OCSP transport.
func (v *SignedDataVerifier) call(ctx context.Context, jws string, fn func(capi.Verifier, []byte) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if v == nil {
		return ErrClosed
	}
	p, ok := v.h.get()
	if !ok {
		return ErrClosed
	}
	defer v.h.release()
	in := stringBytes(jws) // the library only reads it, during the call
	var err error
	if v.transport != nil {
		err = withCallContext(ctx, func() error { return fn(p, in) })
	} else {
		err = fn(p, in)
	}
	runtime.KeepAlive(jws)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return verificationError(err)
	}
	return nil
}

// verify is the payload's JSON exactly as signed.
func (v *SignedDataVerifier) verify(ctx context.Context, fn verifyFunc, jws string) ([]byte, error) {
	var out []byte
	err := v.call(ctx, jws, func(p capi.Verifier, in []byte) error {
		var err error
		out, err = fn(p, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// verifyInto decodes the payload into out straight from the library's memory.
func (v *SignedDataVerifier) verifyInto(ctx context.Context, fn verifyIntoFunc, jws string, out json.Unmarshaler) error {
	var decodeErr error
	err := v.call(ctx, jws, func(p capi.Verifier, in []byte) error {
		return fn(p, in, func(raw []byte) error {
			decodeErr = decodeInto(raw, out)
			return nil
		})
	})
	if err != nil {
		return err
	}
	return decodeErr
}

// unmarshal decodes JSON the core produced into a model: its generated decoder directly (encoding/json would first
// scan the whole text again).
func unmarshal(raw []byte, out any) error {
	if u, ok := out.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(raw)
	}
	return json.Unmarshal(raw, out)
}

func decodeInto(raw []byte, out any) error {
	if err := unmarshal(raw, out); err != nil {
		// The core decoded the same JSON into the model; a Go type error here is a bug of the binding's models.
		return &VerificationError{Status: VerificationStatusVerificationFailure, Reason: ReasonUndecodablePayload,
			Message: "the verified payload does not decode into the Go model: " + err.Error()}
	}
	return nil
}

// VerifyAndDecodeNotification verifies and decodes an App Store Server Notification V2 signedPayload.
func (v *SignedDataVerifier) VerifyAndDecodeNotification(ctx context.Context, signedPayload string) (*model.ResponseBodyV2DecodedPayload, error) {
	var out model.ResponseBodyV2DecodedPayload
	if v != nil && v.notificationCheck != nil {
		return v.verifyNotificationWithCheck(ctx, signedPayload)
	}
	if err := v.verifyInto(ctx, capi.VerifierVerifyNotificationInto, signedPayload, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifyAndDecodeTransaction verifies and decodes a signedTransaction (bundle ID, then environment).
func (v *SignedDataVerifier) VerifyAndDecodeTransaction(ctx context.Context, signedTransaction string) (*model.JWSTransactionDecodedPayload, error) {
	var out model.JWSTransactionDecodedPayload
	if err := v.verifyInto(ctx, capi.VerifierVerifyTransactionInto, signedTransaction, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifyAndDecodeRenewalInfo verifies and decodes a signedRenewalInfo (the environment is checked; Apple checks
// no bundle ID).
func (v *SignedDataVerifier) VerifyAndDecodeRenewalInfo(ctx context.Context, signedRenewalInfo string) (*model.JWSRenewalInfoDecodedPayload, error) {
	var out model.JWSRenewalInfoDecodedPayload
	if err := v.verifyInto(ctx, capi.VerifierVerifyRenewalInfoInto, signedRenewalInfo, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifyAndDecodeAppTransaction verifies and decodes a signed AppTransaction.
func (v *SignedDataVerifier) VerifyAndDecodeAppTransaction(ctx context.Context, signedAppTransaction string) (*model.AppTransaction, error) {
	var out model.AppTransaction
	if err := v.verifyInto(ctx, capi.VerifierVerifyAppTransactionInto, signedAppTransaction, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifyAndDecodeRealtimeRequest verifies and decodes a Retention Messaging "Get Retention Message" realtime
// request body's signedPayload.
func (v *SignedDataVerifier) VerifyAndDecodeRealtimeRequest(ctx context.Context, signedPayload string) (*model.DecodedRealtimeRequestBody, error) {
	var out model.DecodedRealtimeRequestBody
	if err := v.verifyInto(ctx, capi.VerifierVerifyRealtimeRequestInto, signedPayload, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifyAndDecodeNotificationDeep verifies a notification and the signed values nested in it
// (data.signedTransactionInfo, data.signedRenewalInfo, appData.signedAppTransactionInfo), each at its own
// effective date, and returns them all decoded. A nested failure fails the call; its message starts with the
// field's name.
func (v *SignedDataVerifier) VerifyAndDecodeNotificationDeep(ctx context.Context, signedPayload string) (*model.VerifiedNotification, error) {
	var out model.VerifiedNotification
	if err := v.verifyInto(ctx, capi.VerifierVerifyNotificationDeepInto, signedPayload, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Operation names a verify call, for VerifyAndDecodeJSON.
type Operation int

const (
	OperationNotification Operation = iota + 1
	OperationTransaction
	OperationRenewalInfo
	OperationAppTransaction
	OperationRealtimeRequest
	OperationNotificationDeep
)

var operations = map[Operation]verifyFunc{
	OperationNotification:     capi.VerifierVerifyNotification,
	OperationTransaction:      capi.VerifierVerifyTransaction,
	OperationRenewalInfo:      capi.VerifierVerifyRenewalInfo,
	OperationAppTransaction:   capi.VerifierVerifyAppTransaction,
	OperationRealtimeRequest:  capi.VerifierVerifyRealtimeRequest,
	OperationNotificationDeep: capi.VerifierVerifyNotificationDeep,
}

// VerifyAndDecodeJSON verifies as the operation's method does and returns the payload's JSON exactly as Apple
// signed it (keys this version's models do not know included).
func (v *SignedDataVerifier) VerifyAndDecodeJSON(ctx context.Context, op Operation, jws string) ([]byte, error) {
	fn, ok := operations[op]
	if !ok {
		return nil, argError("operation", "is not one of the Operation constants")
	}
	return v.verify(ctx, fn, jws)
}

// CacheStats are the chain cache's counters since the verifier was made: hits, misses and chains cached now.
func (v *SignedDataVerifier) CacheStats() (hits, misses, entries uint64, err error) {
	if v == nil {
		return 0, 0, 0, ErrClosed
	}
	p, ok := v.h.get()
	if !ok {
		return 0, 0, 0, ErrClosed
	}
	defer v.h.release()
	hits, misses, entries, err = capi.VerifierCacheStats(p)
	return hits, misses, entries, plainErrorOrNil(err)
}

func plainErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return plainError(err)
}

// AppleRootCAG3 is Apple Root CA - G3 (DER), the root of App Store signed data, as the library carries it (checked
// against Apple's published SHA-256 fingerprint).
func AppleRootCAG3() []byte { return capi.AppleRootDer(0) }

// AppleIncRoot is Apple Inc. Root (DER), the root of legacy app receipts.
func AppleIncRoot() []byte { return capi.AppleRootDer(1) }

// Version is the loaded library's version ("0.3.0").
func Version() string { return capi.Version() }

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// stringBytes is s's bytes without a copy, for inputs the library only reads during a call (a JWS of a notification
// is some 15 KB; Go 1.19 has no unsafe.StringData).
func stringBytes(s string) []byte {
	if s == "" {
		return nil
	}
	h := (*reflect.StringHeader)(unsafe.Pointer(&s))
	return unsafe.Slice((*byte)(unsafe.Pointer(h.Data)), len(s))
}

// verifyNotificationWithCheck: the library verifies all but the app, which VerifierOptions.NotificationCheck decides.
func (v *SignedDataVerifier) verifyNotificationWithCheck(ctx context.Context, signedPayload string) (*model.ResponseBodyV2DecodedPayload, error) {
	var raw []byte
	var identity string
	if err := v.call(ctx, signedPayload, func(p capi.Verifier, in []byte) error {
		var err error
		raw, identity, err = capi.VerifierNotificationLeavingIdentity(p, in)
		return err
	}); err != nil {
		return nil, err
	}
	var id struct {
		BundleID    string `json:"bundleId"`
		AppAppleID  int64  `json:"appAppleId"`
		Environment string `json:"environment"`
	}
	if err := json.Unmarshal([]byte(identity), &id); err != nil {
		return nil, fmt.Errorf("appstoreserver: the library's notification identity is not JSON: %w", err)
	}
	if err := v.notificationCheck(v, id.BundleID, id.AppAppleID, Environment(id.Environment)); err != nil {
		return nil, err
	}
	var out model.ResponseBodyV2DecodedPayload
	if err := decodeInto(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CheckNotificationApp is the verifier's own check of the app a notification names (bundle ID, the app Apple ID in
// Production, environment; appAppleID 0 and environment "" mean none): nil, or a *VerificationError with Apple's
// INVALID_APP_IDENTIFIER / INVALID_ENVIRONMENT. The default NotificationCheck defers to it.
func (v *SignedDataVerifier) CheckNotificationApp(bundleID string, appAppleID int64, environment Environment) error {
	if v == nil {
		return ErrClosed
	}
	p, ok := v.h.get()
	if !ok {
		return ErrClosed
	}
	defer v.h.release()
	err := capi.VerifierCheckNotificationIdentity(p, optional(bundleID), appAppleID, optional(string(environment)))
	if err != nil {
		return verificationError(err)
	}
	return nil
}
