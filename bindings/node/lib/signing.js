'use strict';
// Apple's four signature creators. createSignature is synchronous and returns the signature, as in Apple's library;
// createSignatureAsync does the same signing on the libuv thread pool and returns a Promise. signingKey: the .p8 PEM,
// or an ExternalSigner (lib/signer.js), which only createSignatureAsync can use (the signer runs on the JS thread).
const native = require('./native.js');
const args = require('./args.js');
const { convert, guard } = require('./errors.js');
const { newKey, isSigner, syncRefused } = require('./signer.js');

function key(creator, where, signingKey, keyId, issuerId, bundleId) {
  const handle = newKey(where, signingKey, keyId, issuerId, bundleId);
  Object.defineProperty(creator, '_key', { value: handle });
  Object.defineProperty(creator, '_external', { value: isSigner(signingKey) });
}

function sign(creator, where, fn, argv) {
  if (creator._external) throw syncRefused(`${where}.createSignature`, 'createSignatureAsync');
  return guard('sign', () => native[fn](...argv));
}

function signAsync(fn, argv) {
  let p;
  try {
    p = native.async[fn](...argv);
  } catch (e) {
    return Promise.reject(convert(e, 'sign'));
  }
  return p; // rejects with the converted exception (lib/native.js)
}

class SignatureCreator {
  /** Frees the library's key now (key memory is cleansed); later calls throw. With an ExternalSigner, signatures
   *  still waiting for it fail (signer_failed). */
  close() {
    if (this._external) native.signerClose(this._key);
    native.close(this._key);
  }
}

/** The base of the three JWS creators (Apple's BaseSignatureCreator). */
class BaseSignatureCreator extends SignatureCreator {
  /** The nonce of the next signature (as Apple's Java createNonce(); Apple's Node has no such hook): undefined lets the
   *  library make a random UUID; a subclass may return its own UUID string, signed lowercase. Called once per
   *  createSignature / createSignatureAsync, before anything is signed. */
  createNonce() {
    return undefined;
  }

  _nonce(where) {
    const nonce = this.createNonce();
    if (nonce === undefined || nonce === null) return null;
    if (typeof nonce !== 'string') throw new TypeError(`${where}: createNonce() must return a string or undefined, got ${typeof nonce}`);
    return nonce;
  }
}

/** Promotional offer signature v1 (StoreKit 1): standard base64 DER ECDSA. Apple's constructor (no issuer id). */
class PromotionalOfferSignatureCreator extends SignatureCreator {
  constructor(signingKey, keyId, bundleId) {
    super();
    key(this, 'PromotionalOfferSignatureCreator', signingKey, keyId, null, bundleId);
  }

  _argv(productIdentifier, subscriptionOfferID, appAccountToken, nonce, timestamp) {
    const w = 'PromotionalOfferSignatureCreator.createSignature';
    args.string(w, 'productIdentifier', productIdentifier);
    args.string(w, 'subscriptionOfferID', subscriptionOfferID);
    args.string(w, 'appAccountToken', appAccountToken);
    args.string(w, 'nonce', nonce);
    args.integer(w, 'timestamp', timestamp);
    return [this._key, productIdentifier, subscriptionOfferID, appAccountToken, nonce, timestamp];
  }

  createSignature(productIdentifier, subscriptionOfferID, appAccountToken, nonce, timestamp) {
    return sign(this, 'PromotionalOfferSignatureCreator', 'signing_key_create_promotional_offer_v1',
      this._argv(productIdentifier, subscriptionOfferID, appAccountToken, nonce, timestamp)).signature;
  }

  createSignatureAsync(productIdentifier, subscriptionOfferID, appAccountToken, nonce, timestamp) {
    let argv;
    try {
      argv = this._argv(productIdentifier, subscriptionOfferID, appAccountToken, nonce, timestamp);
    } catch (e) {
      return Promise.reject(e);
    }
    return signAsync('signing_key_create_promotional_offer_v1', argv).then((r) => r.signature);
  }
}

/** Promotional offer V2 JWS (aud "promotional-offer"). */
class PromotionalOfferV2SignatureCreator extends BaseSignatureCreator {
  constructor(signingKey, keyId, issuerId, bundleId) {
    super();
    key(this, 'PromotionalOfferV2SignatureCreator', signingKey, keyId, issuerId, bundleId);
  }

  _argv(productId, offerIdentifier, transactionId) {
    const w = 'PromotionalOfferV2SignatureCreator.createSignature';
    args.string(w, 'productId', productId);
    args.string(w, 'offerIdentifier', offerIdentifier);
    return [this._key, productId, offerIdentifier, args.optionalString(w, 'transactionId', transactionId), this._nonce(w)];
  }

  createSignature(productId, offerIdentifier, transactionId) {
    return sign(this, 'PromotionalOfferV2SignatureCreator', 'signing_key_create_promotional_offer_v2',
      this._argv(productId, offerIdentifier, transactionId));
  }

  createSignatureAsync(productId, offerIdentifier, transactionId) {
    let argv;
    try {
      argv = this._argv(productId, offerIdentifier, transactionId);
    } catch (e) {
      return Promise.reject(e);
    }
    return signAsync('signing_key_create_promotional_offer_v2', argv);
  }
}

/** Introductory offer eligibility JWS (aud "introductory-offer-eligibility"). */
class IntroductoryOfferEligibilitySignatureCreator extends BaseSignatureCreator {
  constructor(signingKey, keyId, issuerId, bundleId) {
    super();
    key(this, 'IntroductoryOfferEligibilitySignatureCreator', signingKey, keyId, issuerId, bundleId);
  }

  _argv(productId, allowIntroductoryOffer, transactionId) {
    const w = 'IntroductoryOfferEligibilitySignatureCreator.createSignature';
    args.string(w, 'productId', productId);
    args.boolean(w, 'allowIntroductoryOffer', allowIntroductoryOffer);
    args.string(w, 'transactionId', transactionId);
    return [this._key, productId, allowIntroductoryOffer ? 1 : 0, transactionId, this._nonce(w)];
  }

  createSignature(productId, allowIntroductoryOffer, transactionId) {
    return sign(this, 'IntroductoryOfferEligibilitySignatureCreator', 'signing_key_create_introductory_offer_eligibility',
      this._argv(productId, allowIntroductoryOffer, transactionId));
  }

  createSignatureAsync(productId, allowIntroductoryOffer, transactionId) {
    let argv;
    try {
      argv = this._argv(productId, allowIntroductoryOffer, transactionId);
    } catch (e) {
      return Promise.reject(e);
    }
    return signAsync('signing_key_create_introductory_offer_eligibility', argv);
  }
}

/** Advanced Commerce in-app request JWS (aud "advanced-commerce-api"); the request is checked against Apple's limits
 *  and keys the model does not know are refused, by path. */
class AdvancedCommerceInAppSignatureCreator extends BaseSignatureCreator {
  constructor(signingKey, keyId, issuerId, bundleId) {
    super();
    key(this, 'AdvancedCommerceInAppSignatureCreator', signingKey, keyId, issuerId, bundleId);
  }

  _argv(advancedCommerceInAppRequest) {
    const w = 'AdvancedCommerceInAppSignatureCreator.createSignature';
    args.object(w, 'advancedCommerceInAppRequest', advancedCommerceInAppRequest);
    return [this._key, JSON.stringify(advancedCommerceInAppRequest), this._nonce(w)];
  }

  createSignature(AdvancedCommerceInAppRequest) {
    return sign(this, 'AdvancedCommerceInAppSignatureCreator', 'signing_key_create_advanced_commerce_in_app',
      this._argv(AdvancedCommerceInAppRequest));
  }

  createSignatureAsync(AdvancedCommerceInAppRequest) {
    let argv;
    try {
      argv = this._argv(AdvancedCommerceInAppRequest);
    } catch (e) {
      return Promise.reject(e);
    }
    return signAsync('signing_key_create_advanced_commerce_in_app', argv);
  }
}

module.exports = { PromotionalOfferSignatureCreator, PromotionalOfferV2SignatureCreator,
  IntroductoryOfferEligibilitySignatureCreator, AdvancedCommerceInAppSignatureCreator };
