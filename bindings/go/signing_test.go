package appstoreserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"

	"appstoreserver.dev/appstoreserver/model"
)

// verifyES256 checks a compact JWS with Go's crypto/ecdsa (never the library under test) and returns its header and
// claims.
func verifyES256(t *testing.T, jws string, pub *ecdsa.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", jws)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature: %v (%d bytes)", err, len(sig))
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		t.Fatal("the ES256 signature does not verify with the key's public key")
	}
	var header, claims map[string]any
	for i, out := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, out) != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	return header, claims
}

func TestSigning(t *testing.T) {
	p8, priv := testP8(t)
	key, err := NewSigningKey(p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	iat := time.Unix(1800000000, 0)
	token, err := key.CreateAPIToken(iat, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, c := verifyES256(t, token, &priv.PublicKey)
	if h["alg"] != "ES256" || h["kid"] != testKeyID || h["typ"] != "JWT" || c["iss"] != testIssuer || c["bid"] != testBundle ||
		c["aud"] != "appstoreconnect-v1" || c["iat"] != float64(1800000000) || c["exp"] != float64(1800000300) {
		t.Fatalf("token %v %v", h, c)
	}
	if _, err := key.CreateAPIToken(iat, 2*time.Hour); err == nil {
		t.Fatal("a token of 2 hours (Apple's maximum is 1) was made")
	}

	// Promotional offer v1: base64 DER over the U+2063-joined fields (application username and nonce lowercased).
	nonce := "5C0D9B3A-1D4E-4F0A-8C8B-6B1E7D3F2A10"
	sig, err := key.CreatePromotionalOfferSignature("com.example.product", "offer1", "User", nonce, 1698148900000)
	if err != nil {
		t.Fatal(err)
	}
	der, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Join([]string{testBundle, testKeyID, "com.example.product", "offer1", "user", strings.ToLower(nonce),
		"1698148900000"}, "\u2063")
	digest := sha256.Sum256([]byte(payload))
	if !ecdsa.VerifyASN1(&priv.PublicKey, digest[:], der) {
		t.Fatal("the promotional offer v1 signature does not verify")
	}

	v2, err := key.CreatePromotionalOfferV2Signature("com.example.product", "offer2", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, c := verifyES256(t, v2, &priv.PublicKey); c["aud"] != "promotional-offer" || c["productId"] != "com.example.product" ||
		c["offerIdentifier"] != "offer2" || c["transactionId"] != nil {
		t.Fatalf("v2 claims %v", c)
	}
	intro, err := key.CreateIntroductoryOfferEligibilitySignature("com.example.product", true, "2000000000000001")
	if err != nil {
		t.Fatal(err)
	}
	if _, c := verifyES256(t, intro, &priv.PublicKey); c["aud"] != "introductory-offer-eligibility" || c["allowIntroductoryOffer"] != true {
		t.Fatalf("intro claims %v", c)
	}

	// Advanced Commerce: the model (with operation and version), checked against Apple's limits.
	req := model.AdvancedCommerceOneTimeChargeCreateRequest{Currency: "USD", TaxCode: "C003-00-1",
		Item:        model.AdvancedCommerceOneTimeChargeItem{SKU: "sku1", Description: "d", DisplayName: "n", Price: 990},
		RequestInfo: model.AdvancedCommerceRequestInfo{RequestReferenceID: "5c0d9b3a-1d4e-4f0a-8c8b-6b1e7d3f2a10"}}
	ac, err := key.CreateAdvancedCommerceInAppSignature(req)
	if err != nil {
		t.Fatal(err)
	}
	_, c = verifyES256(t, ac, &priv.PublicKey)
	inner, _ := base64.StdEncoding.DecodeString(c["request"].(string))
	var sent map[string]any
	if c["aud"] != "advanced-commerce-api" || json.Unmarshal(inner, &sent) != nil || sent["operation"] != "CREATE_ONE_TIME_CHARGE" || sent["version"] != "1" {
		t.Fatalf("advanced commerce claims %v / %s", c, inner)
	}
	req.Item.SKU = strings.Repeat("x", 129)
	_, err = key.CreateAdvancedCommerceInAppSignature(req)
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonInvalidRequest || !strings.Contains(e.Message, "SKU") {
		t.Fatalf("a 129-character SKU: %v", err)
	}

	// Keys the library refuses.
	for _, bad := range [][]byte{nil, []byte("not a key"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")} {
		_, err := NewSigningKey(bad, testKeyID, testIssuer, testBundle)
		if !errors.As(err, &e) || (e.Status != VerificationStatusInvalidKey && e.Status != VerificationStatusInvalidArgument) {
			t.Fatalf("key %q: %v", bad, err)
		}
	}
	key.Close()
	if _, err := key.CreateAPIToken(time.Time{}, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// Apple's creators give what the key's methods give: checked with crypto/ecdsa.
func TestAppleCreators(t *testing.T) {
	p8, priv := testP8(t)
	v1, err := NewPromotionalOfferSignatureCreator(p8, testKeyID, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	nonce := "5c0d9b3a-1d4e-4f0a-8c8b-6b1e7d3f2a10"
	sig, err := v1.CreateSignature("p", "o", "", nonce, 1698148900000)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := base64.StdEncoding.DecodeString(sig)
	digest := sha256.Sum256([]byte(strings.Join([]string{testBundle, testKeyID, "p", "o", "", nonce, "1698148900000"}, "\u2063")))
	if !ecdsa.VerifyASN1(&priv.PublicKey, digest[:], der) {
		t.Fatal("v1 does not verify")
	}
	v2, err := NewPromotionalOfferV2SignatureCreator(p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	jws, err := v2.CreateSignature("p", "o", "2000000000000001")
	if err != nil {
		t.Fatal(err)
	}
	if _, c := verifyES256(t, jws, &priv.PublicKey); c["transactionId"] != "2000000000000001" {
		t.Fatalf("v2 claims %v", c)
	}
	intro, err := NewIntroductoryOfferEligibilitySignatureCreator(p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer intro.Close()
	jws, err = intro.CreateSignature("p", false, "2000000000000001")
	if err != nil {
		t.Fatal(err)
	}
	if _, c := verifyES256(t, jws, &priv.PublicKey); c["allowIntroductoryOffer"] != false {
		t.Fatalf("intro claims %v", c)
	}
	ac, err := NewAdvancedCommerceAPIInAppSignatureCreator(p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	if _, err := ac.CreateSignature([]byte(`{"operation":"NO_SUCH_OPERATION"}`)); err == nil {
		t.Fatal("an unknown operation was signed")
	}
	// WithNonce (the Go form of Apple's Java createNonce() hook): the given nonce is signed, lowercase.
	fixed := "0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10"
	acRequest := []byte(`{"operation":"CREATE_ONE_TIME_CHARGE","currency":"USD","taxCode":"C003-00-1",` +
		`"requestInfo":{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"},` +
		`"item":{"SKU":"sku","description":"A thing","displayName":"Thing","price":990}}`)
	for name, sign := range map[string]func(...SignatureOption) (string, error){
		"v2":    func(o ...SignatureOption) (string, error) { return v2.CreateSignature("p", "o", "", o...) },
		"intro": func(o ...SignatureOption) (string, error) { return intro.CreateSignature("p", true, "1", o...) },
		"ac":    func(o ...SignatureOption) (string, error) { return ac.CreateSignature(acRequest, o...) },
	} {
		jws, err := sign(WithNonce(fixed))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, c := verifyES256(t, jws, &priv.PublicKey); c["nonce"] != strings.ToLower(fixed) {
			t.Fatalf("%s: nonce %v, want the given one", name, c["nonce"])
		}
		a, _ := sign()
		b, _ := sign()
		if _, ca := verifyES256(t, a, &priv.PublicKey); ca["nonce"] == strings.ToLower(fixed) {
			t.Fatalf("%s: without WithNonce the nonce is still the given one", name)
		} else if _, cb := verifyES256(t, b, &priv.PublicKey); ca["nonce"] == cb["nonce"] {
			t.Fatalf("%s: two signatures share the nonce %v", name, ca["nonce"])
		}
		if _, err := sign(WithNonce("not-a-uuid")); err == nil || !strings.Contains(err.Error(), "nonce must be a UUID") {
			t.Fatalf("%s: a nonce that is no UUID: %v", name, err)
		}
	}
	if _, err := NewPromotionalOfferSignatureCreator([]byte("garbage"), testKeyID, testBundle); err == nil {
		t.Fatal("a garbage key was accepted")
	}
}

type failingSigner struct {
	crypto.Signer
	panic bool
}

func (f failingSigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	if f.panic {
		panic("the HSM client panicked")
	}
	return nil, errors.New("the KMS is down")
}

func TestExternalSigner(t *testing.T) {
	_, priv := testP8(t)
	key, err := NewSigningKeyWithSigner(priv, testKeyID, testIssuer, testBundle, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	token, err := key.CreateAPIToken(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	verifyES256(t, token, &priv.PublicKey)
	for _, panics := range []bool{false, true} {
		bad, err := NewSigningKeyWithSigner(failingSigner{Signer: priv, panic: panics}, testKeyID, testIssuer, testBundle, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.CreateAPIToken(time.Time{}, 0)
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonSignerFailed {
			t.Fatalf("a failing signer (panics %v): %v", panics, err)
		}
		bad.Close()
	}
	// Another key's signer: the library checks each signature with the public key it was given.
	_, other := testP8(t)
	mixed, err := NewSigningKeyWithSigner(mixedSigner{other, priv}, testKeyID, testIssuer, testBundle, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mixed.Close()
	if _, err := mixed.CreateAPIToken(time.Time{}, 0); err == nil {
		t.Fatal("a signature by another key was used")
	}
}

// mixedSigner presents one key's public key and signs with another's.
type mixedSigner struct{ public, signs *ecdsa.PrivateKey }

func (m mixedSigner) Public() crypto.PublicKey { return m.public.Public() }
func (m mixedSigner) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	return m.signs.Sign(r, d, o)
}
