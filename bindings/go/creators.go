package appstoreserver

// Apple's signature creators (PromotionalOfferSignatureCreator, PromotionalOfferV2SignatureCreator,
// IntroductoryOfferEligibilitySignatureCreator, AdvancedCommerceAPIInAppSignatureCreator), each over a SigningKey made
// from the .p8: the same constructors and createSignature methods as Apple's other libraries, in Go's idiom. A key
// held in a KMS or HSM: NewSigningKeyWithSigner, then the SigningKey methods.

// PromotionalOfferSignatureCreator makes promotional offer signatures v1 (StoreKit 1).
type PromotionalOfferSignatureCreator struct{ key *SigningKey }

// NewPromotionalOfferSignatureCreator reads the .p8 key (no issuer ID is needed for v1 signatures).
func NewPromotionalOfferSignatureCreator(signingKey []byte, keyID, bundleID string) (*PromotionalOfferSignatureCreator, error) {
	k, err := NewSigningKey(signingKey, keyID, "", bundleID)
	if err != nil {
		return nil, err
	}
	return &PromotionalOfferSignatureCreator{k}, nil
}

// CreateSignature is SigningKey.CreatePromotionalOfferSignature (nonce: a UUID; timestamp: ms since 1970).
func (c *PromotionalOfferSignatureCreator) CreateSignature(productIdentifier, subscriptionOfferID, applicationUsername,
	nonce string, timestamp int64) (string, error) {
	if c == nil {
		return "", ErrClosed
	}
	return c.key.CreatePromotionalOfferSignature(productIdentifier, subscriptionOfferID, applicationUsername, nonce, timestamp)
}

// Close releases the key.
func (c *PromotionalOfferSignatureCreator) Close() error {
	if c == nil {
		return nil
	}
	return c.key.Close()
}

// PromotionalOfferV2SignatureCreator makes promotional offer V2 JWS.
type PromotionalOfferV2SignatureCreator struct{ key *SigningKey }

// NewPromotionalOfferV2SignatureCreator reads the .p8 key.
func NewPromotionalOfferV2SignatureCreator(signingKey []byte, keyID, issuerID, bundleID string) (*PromotionalOfferV2SignatureCreator, error) {
	k, err := NewSigningKey(signingKey, keyID, issuerID, bundleID)
	if err != nil {
		return nil, err
	}
	return &PromotionalOfferV2SignatureCreator{k}, nil
}

// CreateSignature is SigningKey.CreatePromotionalOfferV2Signature (transactionID "": none; WithNonce: the nonce).
func (c *PromotionalOfferV2SignatureCreator) CreateSignature(productID, offerIdentifier, transactionID string,
	opts ...SignatureOption) (string, error) {
	if c == nil {
		return "", ErrClosed
	}
	return c.key.CreatePromotionalOfferV2Signature(productID, offerIdentifier, transactionID, opts...)
}

// Close releases the key.
func (c *PromotionalOfferV2SignatureCreator) Close() error {
	if c == nil {
		return nil
	}
	return c.key.Close()
}

// IntroductoryOfferEligibilitySignatureCreator makes introductory offer eligibility JWS.
type IntroductoryOfferEligibilitySignatureCreator struct{ key *SigningKey }

// NewIntroductoryOfferEligibilitySignatureCreator reads the .p8 key.
func NewIntroductoryOfferEligibilitySignatureCreator(signingKey []byte, keyID, issuerID, bundleID string) (*IntroductoryOfferEligibilitySignatureCreator, error) {
	k, err := NewSigningKey(signingKey, keyID, issuerID, bundleID)
	if err != nil {
		return nil, err
	}
	return &IntroductoryOfferEligibilitySignatureCreator{k}, nil
}

// CreateSignature is SigningKey.CreateIntroductoryOfferEligibilitySignature (WithNonce: the nonce).
func (c *IntroductoryOfferEligibilitySignatureCreator) CreateSignature(productID string, allowIntroductoryOffer bool,
	transactionID string, opts ...SignatureOption) (string, error) {
	if c == nil {
		return "", ErrClosed
	}
	return c.key.CreateIntroductoryOfferEligibilitySignature(productID, allowIntroductoryOffer, transactionID, opts...)
}

// Close releases the key.
func (c *IntroductoryOfferEligibilitySignatureCreator) Close() error {
	if c == nil {
		return nil
	}
	return c.key.Close()
}

// AdvancedCommerceAPIInAppSignatureCreator makes Advanced Commerce in-app request JWS.
type AdvancedCommerceAPIInAppSignatureCreator struct{ key *SigningKey }

// NewAdvancedCommerceAPIInAppSignatureCreator reads the .p8 key.
func NewAdvancedCommerceAPIInAppSignatureCreator(signingKey []byte, keyID, issuerID, bundleID string) (*AdvancedCommerceAPIInAppSignatureCreator, error) {
	k, err := NewSigningKey(signingKey, keyID, issuerID, bundleID)
	if err != nil {
		return nil, err
	}
	return &AdvancedCommerceAPIInAppSignatureCreator{k}, nil
}

// CreateSignature is SigningKey.CreateAdvancedCommerceInAppSignature (WithNonce: the nonce).
func (c *AdvancedCommerceAPIInAppSignatureCreator) CreateSignature(advancedCommerceInAppRequest any,
	opts ...SignatureOption) (string, error) {
	if c == nil {
		return "", ErrClosed
	}
	return c.key.CreateAdvancedCommerceInAppSignature(advancedCommerceInAppRequest, opts...)
}

// Close releases the key.
func (c *AdvancedCommerceAPIInAppSignatureCreator) Close() error {
	if c == nil {
		return nil
	}
	return c.key.Close()
}
