package appstoreserver

/*
#cgo pkg-config: appstoreserver
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <appstoreserver.h>
appstore_status appstore_go_signing_key_new_with_signer(void *user_data, const uint8_t *public_key,
    size_t public_key_len, uint32_t timeout_ms, const char *key_id, const char *issuer_id, const char *bundle_id,
    appstore_signing_key **key_out, appstore_error **err_out);
*/
import "C"

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"errors"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"appstoreserver.dev/appstoreserver/internal/capi"
)

// SigningKey is an App Store Connect key (the .p8, or a crypto.Signer holding it in a KMS or HSM) with the
// identifiers every signature needs. It makes the API client's bearer tokens and Apple's signatures (promotional
// offers v1 and v2, introductory-offer eligibility, Advanced Commerce in-app requests). Safe for concurrent use.
type SigningKey struct {
	h      handle[capi.SigningKey]
	signer *signerContext // external signer only
}

// signerContext is the external signer's callback user data (C memory holding a cgo.Handle). The key's C object and
// every client made with it may call the signer, so it lives until the key and those clients are all closed.
type signerContext struct {
	slot   unsafe.Pointer
	handle cgo.Handle
	refs   atomic.Int32
}

func (s *signerContext) retain() {
	if s != nil {
		s.refs.Add(1)
	}
}

func (s *signerContext) release() {
	if s != nil && s.refs.Add(-1) == 0 {
		C.free(s.slot)
		s.handle.Delete()
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewSigningKey reads a .p8 (PKCS#8 PEM, EC P-256) key. issuerID may be "" when only promotional offer v1
// signatures are made. Errors: *Error with status INVALID_KEY (ReasonKeyNotPem, ReasonKeyEncrypted,
// ReasonKeyMalformed, ReasonKeyNotEc, ReasonKeyWrongCurve) or INVALID_ARGUMENT.
func NewSigningKey(p8 []byte, keyID, issuerID, bundleID string) (*SigningKey, error) {
	p, err := capi.SigningKeyNew(p8, keyID, optional(issuerID), bundleID)
	if err != nil {
		return nil, plainError(err)
	}
	k := &SigningKey{}
	k.h = handle[capi.SigningKey]{p: p, free: capi.SigningKeyFree}
	runtime.SetFinalizer(k, (*SigningKey).Close)
	return k, nil
}

// NewSigningKeyWithSigner uses a key held outside the process: every signature is asked of signer (its Public() must
// be an ECDSA P-256 key; Sign gets the SHA-256 digest and returns an ASN.1 DER or 64-byte r||s signature, which the
// library checks with the public key before use). timeout bounds one signature (0: 10 s), and an API call's
// deadline bounds it further (what is left of the client's timeout): Sign runs on a goroutine of its own and is
// waited for that long; Go cannot interrupt it, so an overrunning Sign is abandoned (its signature discarded, the call
// failing at its deadline) and finishes on its own. Sign may be called from several goroutines at once.
func NewSigningKeyWithSigner(signer crypto.Signer, keyID, issuerID, bundleID string, timeout time.Duration) (*SigningKey, error) {
	if signer == nil {
		return nil, argError("signer", "is nil")
	}
	if timeout < 0 || timeout > time.Duration(1<<32-1)*time.Millisecond {
		return nil, argError("timeout", "is out of range")
	}
	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, &Error{Status: VerificationStatusInvalidKey, Reason: ReasonKeyMalformed,
			Message: "the signer's public key cannot be encoded: " + err.Error()}
	}
	for _, s := range []string{keyID, issuerID, bundleID} {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, argError("key id, issuer id or bundle id", "contains a NUL byte")
		}
	}
	h := cgo.NewHandle(signer)
	slot := C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(slot) = C.uintptr_t(h)
	ckid, ciss, cbid := C.CString(keyID), (*C.char)(nil), C.CString(bundleID)
	defer C.free(unsafe.Pointer(ckid))
	defer C.free(unsafe.Pointer(cbid))
	if issuerID != "" {
		ciss = C.CString(issuerID)
		defer C.free(unsafe.Pointer(ciss))
	}
	var key *C.appstore_signing_key
	var cerr *C.appstore_error
	st := C.appstore_go_signing_key_new_with_signer(slot, (*C.uint8_t)(unsafe.Pointer(&pub[0])), C.size_t(len(pub)),
		C.uint32_t(timeout/time.Millisecond), ckid, ciss, cbid, &key, &cerr)
	if st != 0 {
		C.free(slot)
		h.Delete()
		return nil, plainError(capi.ReadError(int32(st), unsafe.Pointer(cerr)))
	}
	ctx := &signerContext{slot: slot, handle: h}
	ctx.refs.Store(1)
	k := &SigningKey{signer: ctx}
	k.h = handle[capi.SigningKey]{p: capi.SigningKey(unsafe.Pointer(key)), free: func(p capi.SigningKey) {
		capi.SigningKeyFree(p)
		ctx.release()
	}}
	runtime.SetFinalizer(k, (*SigningKey).Close)
	return k, nil
}

//export appstoreGoSign
func appstoreGoSign(userData unsafe.Pointer, message *C.uint8_t, messageLen C.size_t, digest *C.uint8_t,
	signature *C.uint8_t, signatureCap C.size_t, signatureLen *C.size_t, timeoutMs C.uint32_t) (result C.int32_t) {
	defer func() {
		if recover() != nil { // a panicking signer fails the signature; it never unwinds through C
			result = 1
		}
	}()
	signer := cgo.Handle(*(*C.uintptr_t)(userData)).Value().(crypto.Signer)
	d := C.GoBytes(unsafe.Pointer(digest), 32)
	// Sign runs on a goroutine of its own, waited for at most the time it has (the key's timeout, or what is left of
	// an API call's deadline): Go cannot interrupt it, so one that overruns is abandoned (its signature discarded)
	// and finishes on its own.
	type signed struct {
		sig []byte
		err error
	}
	done := make(chan signed, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- signed{err: errSignerPanicked}
			}
		}()
		sig, err := signer.Sign(rand.Reader, d, crypto.SHA256)
		done <- signed{sig, err}
	}()
	wait := time.Duration(timeoutMs) * time.Millisecond
	if wait <= 0 {
		wait = 10 * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var r signed
	select {
	case r = <-done:
	case <-timer.C:
		return 1
	}
	if r.err != nil || len(r.sig) == 0 || len(r.sig) > int(signatureCap) {
		return 1
	}
	C.memcpy(unsafe.Pointer(signature), unsafe.Pointer(&r.sig[0]), C.size_t(len(r.sig)))
	*signatureLen = C.size_t(len(r.sig))
	return 0
}

var errSignerPanicked = errors.New("the signer panicked")

// Close releases the key. Clients made with it keep it until they are closed.
func (k *SigningKey) Close() error {
	if k == nil {
		return nil
	}
	k.h.close()
	return nil
}

func (k *SigningKey) use(fn func(capi.SigningKey) (string, error)) (string, error) {
	if k == nil {
		return "", ErrClosed
	}
	p, ok := k.h.get()
	if !ok {
		return "", ErrClosed
	}
	defer k.h.release()
	s, err := fn(p)
	if err != nil {
		return "", plainError(err)
	}
	return s, nil
}

// CreateAPIToken makes an App Store Server API bearer token (ES256; iss, iat, exp, aud "appstoreconnect-v1",
// bid). issuedAt zero: now; lifetime 0: 5 minutes, at most 1 hour (Apple's maximum).
func (k *SigningKey) CreateAPIToken(issuedAt time.Time, lifetime time.Duration) (string, error) {
	var iat int64
	if !issuedAt.IsZero() {
		iat = issuedAt.Unix()
	}
	return k.use(func(p capi.SigningKey) (string, error) {
		return capi.SigningKeyCreateApiToken(p, iat, int64(lifetime/time.Second))
	})
}

// CreatePromotionalOfferSignature makes a promotional offer signature v1 (StoreKit 1; Apple's
// PromotionalOfferSignatureCreator.createSignature): standard base64 DER ECDSA over bundle ID, key ID, product,
// offer, lowercase application username and nonce, and timestamp (ms since 1970).
func (k *SigningKey) CreatePromotionalOfferSignature(productIdentifier, subscriptionOfferID, applicationUsername, nonce string,
	timestamp int64) (string, error) {
	if timestamp <= 0 {
		return "", argError("timestamp", "must be milliseconds since 1970")
	}
	return k.use(func(p capi.SigningKey) (string, error) {
		sig, _, _, err := capi.SigningKeyCreatePromotionalOfferV1(p, productIdentifier, subscriptionOfferID,
			&applicationUsername, optional(nonce), timestamp)
		return sig, err
	})
}

// SignatureOption adjusts one JWS signature (promotional offer V2, introductory offer eligibility, Advanced Commerce).
type SignatureOption func(*signatureOptions)

type signatureOptions struct {
	nonce *string
}

// WithNonce signs the given nonce (a UUID, signed lowercase) instead of a fresh random one: the Go form of the
// createNonce() hook Apple's Java signature creators let a subclass override. Anything but a UUID is refused.
func WithNonce(nonce string) SignatureOption {
	return func(o *signatureOptions) { o.nonce = &nonce }
}

func nonceOf(opts []SignatureOption) *string {
	var o signatureOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o.nonce
}

// CreatePromotionalOfferV2Signature makes a promotional offer V2 JWS (Apple's
// PromotionalOfferV2SignatureCreator.createSignature); transactionID "" leaves it out.
func (k *SigningKey) CreatePromotionalOfferV2Signature(productID, offerIdentifier, transactionID string,
	opts ...SignatureOption) (string, error) {
	nonce := nonceOf(opts)
	return k.use(func(p capi.SigningKey) (string, error) {
		return capi.SigningKeyCreatePromotionalOfferV2(p, productID, offerIdentifier, optional(transactionID), nonce)
	})
}

// CreateIntroductoryOfferEligibilitySignature makes an introductory offer eligibility JWS (Apple's
// IntroductoryOfferEligibilitySignatureCreator.createSignature).
func (k *SigningKey) CreateIntroductoryOfferEligibilitySignature(productID string, allowIntroductoryOffer bool,
	transactionID string, opts ...SignatureOption) (string, error) {
	nonce := nonceOf(opts)
	allow := int32(0)
	if allowIntroductoryOffer {
		allow = 1
	}
	return k.use(func(p capi.SigningKey) (string, error) {
		return capi.SigningKeyCreateIntroductoryOfferEligibility(p, productID, allow, transactionID, nonce)
	})
}

// CreateAdvancedCommerceInAppSignature makes an Advanced Commerce in-app request JWS (Apple's
// AdvancedCommerceInAppSignatureCreator.createSignature). request is one of the four in-app request models
// (model.AdvancedCommerceOneTimeChargeCreateRequest, ...SubscriptionCreateRequest, ...SubscriptionModifyInAppRequest,
// ...SubscriptionReactivateInAppRequest), or its JSON as []byte / json.RawMessage; it is checked against Apple's
// limits (the error names the field).
func (k *SigningKey) CreateAdvancedCommerceInAppSignature(request any, opts ...SignatureOption) (string, error) {
	nonce := nonceOf(opts)
	var body []byte
	switch r := request.(type) {
	case nil:
		return "", argError("request", "is nil")
	case []byte:
		body = r
	case json.RawMessage:
		body = r
	default:
		b, err := json.Marshal(request)
		if err != nil {
			return "", argError("request", "does not encode as JSON: "+err.Error())
		}
		body = b
	}
	return k.use(func(p capi.SigningKey) (string, error) {
		return capi.SigningKeyCreateAdvancedCommerceInApp(p, body, nonce)
	})
}
