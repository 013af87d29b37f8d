'use strict';
// Signatures made in Node, checked independently: node:crypto verifies every ES256 JWS and the v1 DER signature
// (claims and headers compared with what Apple's library produces), and Tests/support/check_signatures.py
// (Python cryptography + joserfc) checks the same items again.
const test = require('node:test');
const assert = require('assert/strict');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const lib = require('..');
const { SUPPORT, signingKeys, tmpdir } = require('./helpers.js');

const KEY_ID = 'KEYID12345';
const ISSUER = '68f6f2a6-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
const BUNDLE = 'com.example.signing';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const items = [];
let pem;
let publicKey;
test.before(() => {
  pem = fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
  publicKey = crypto.createPublicKey(fs.readFileSync(path.join(signingKeys(), 'p256_public.pem')));
});

/** Verifies an ES256 compact JWS with node:crypto; returns [header, claims]. */
function verifyJws(jws) {
  const [h, p, s] = jws.split('.');
  const ok = crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'));
  assert.ok(ok, 'node:crypto verifies the ES256 signature');
  const header = JSON.parse(Buffer.from(h, 'base64url'));
  assert.deepEqual(header, { alg: 'ES256', kid: KEY_ID, typ: 'JWT' });
  return JSON.parse(Buffer.from(p, 'base64url'));
}

function commonClaims(c, aud) {
  assert.equal(c.aud, aud);
  assert.equal(c.iss, ISSUER);
  assert.equal(c.bid, BUNDLE);
  assert.ok(Math.abs(c.iat - Date.now() / 1000) < 600);
  assert.equal(c.exp, undefined, 'no exp (Apple\'s tests assert it)');
  assert.match(c.nonce, UUID_RE);
}

test('PromotionalOfferV2SignatureCreator (sync and on the pool)', async () => {
  const s = new lib.PromotionalOfferV2SignatureCreator(pem, KEY_ID, ISSUER, BUNDLE);
  for (const [jws, tx] of [[s.createSignature('com.example.p', 'offer1', 'tx9'), 'tx9'],
    [s.createSignature('com.example.p', 'offer1'), undefined],
    [await s.createSignatureAsync('com.example.p', 'offer1', 'tx9'), 'tx9']]) {
    const c = verifyJws(jws);
    commonClaims(c, 'promotional-offer');
    assert.equal(c.productId, 'com.example.p');
    assert.equal(c.offerIdentifier, 'offer1');
    assert.equal(c.transactionId, tx);
    items.push({ kind: 'promo_v2', value: jws, expect: { kid: KEY_ID, iss: ISSUER, bid: BUNDLE, productId: 'com.example.p',
      offerIdentifier: 'offer1', ...(tx ? { transactionId: tx } : {}) } });
  }
});

test('IntroductoryOfferEligibilitySignatureCreator', async () => {
  const s = new lib.IntroductoryOfferEligibilitySignatureCreator(pem, KEY_ID, ISSUER, BUNDLE);
  for (const allow of [true, false]) {
    const jws = allow ? s.createSignature('com.example.p', allow, 'tx1') : await s.createSignatureAsync('com.example.p', allow, 'tx1');
    const c = verifyJws(jws);
    commonClaims(c, 'introductory-offer-eligibility');
    assert.equal(c.allowIntroductoryOffer, allow);
    assert.equal(c.transactionId, 'tx1');
    items.push({ kind: 'intro_eligibility', value: jws, expect: { kid: KEY_ID, iss: ISSUER, bid: BUNDLE,
      productId: 'com.example.p', allowIntroductoryOffer: allow, transactionId: 'tx1' } });
  }
});

test('AdvancedCommerceInAppSignatureCreator: the request claim is standard base64 of the request JSON', async () => {
  const s = new lib.AdvancedCommerceInAppSignatureCreator(pem, KEY_ID, ISSUER, BUNDLE);
  const request = {
    operation: 'CREATE_ONE_TIME_CHARGE', version: '1', currency: 'USD', taxCode: 'C003-00-1',
    requestInfo: { requestReferenceId: '3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11' },
    item: { SKU: 'com.example.sku', description: 'A thing', displayName: 'Thing', price: 990 },
  };
  for (const jws of [s.createSignature(request), await s.createSignatureAsync(request)]) {
    const c = verifyJws(jws);
    commonClaims(c, 'advanced-commerce-api');
    assert.doesNotMatch(c.request, /[-_]/);
    assert.deepEqual(JSON.parse(Buffer.from(c.request, 'base64')), request);
    items.push({ kind: 'advanced_commerce', value: jws, expect: { kid: KEY_ID, iss: ISSUER, bid: BUNDLE, request } });
  }
  assert.throws(() => s.createSignature({ ...request, item: { ...request.item, descripton: 'x' } }),
    (e) => e.reason === 'invalid_argument' && /descripton/.test(e.message));
  assert.throws(() => s.createSignature({ ...request, item: { ...request.item, description: 'x'.repeat(46) } }),
    (e) => e.reason === 'invalid_request');
});

test('createNonce (Apple\'s Java hook): a subclass\'s nonce is signed, lowercase, sync and on the pool', async () => {
  const fixed = '0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10';
  let asked = 0;
  const withNonce = (Base) => class extends Base {
    createNonce() { asked += 1; return fixed; }
  };
  const v2 = new (withNonce(lib.PromotionalOfferV2SignatureCreator))(pem, KEY_ID, ISSUER, BUNDLE);
  const intro = new (withNonce(lib.IntroductoryOfferEligibilitySignatureCreator))(pem, KEY_ID, ISSUER, BUNDLE);
  const ac = new (withNonce(lib.AdvancedCommerceInAppSignatureCreator))(pem, KEY_ID, ISSUER, BUNDLE);
  const request = {
    operation: 'CREATE_ONE_TIME_CHARGE', version: '1', currency: 'USD', taxCode: 'C003-00-1',
    requestInfo: { requestReferenceId: '3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11' },
    item: { SKU: 'com.example.sku', description: 'A thing', displayName: 'Thing', price: 990 },
  };
  const signed = [v2.createSignature('p', 'o'), await v2.createSignatureAsync('p', 'o'),
    intro.createSignature('p', true, '1'), await intro.createSignatureAsync('p', false, '1'),
    ac.createSignature(request), await ac.createSignatureAsync(request)];
  for (const jws of signed) assert.equal(verifyJws(jws).nonce, fixed.toLowerCase());
  assert.equal(asked, 6);
  items.push({ kind: 'promo_v2', value: signed[0], expect: { kid: KEY_ID, iss: ISSUER, bid: BUNDLE, productId: 'p',
    offerIdentifier: 'o', nonce: fixed.toLowerCase() } });
  // Not a UUID: refused by the library, nothing signed; not a string: a TypeError.
  class Bad extends lib.PromotionalOfferV2SignatureCreator { createNonce() { return this.nonce; } }
  const bad = new Bad(pem, KEY_ID, ISSUER, BUNDLE);
  bad.nonce = 'not-a-uuid';
  assert.throws(() => bad.createSignature('p', 'o'), (e) => e.reason === 'invalid_argument' && /nonce must be a UUID/.test(e.message));
  await assert.rejects(bad.createSignatureAsync('p', 'o'), (e) => /nonce must be a UUID/.test(e.message));
  bad.nonce = 42;
  assert.throws(() => bad.createSignature('p', 'o'), TypeError);
  // The default: the library's fresh nonce, another each time.
  const plain = new lib.PromotionalOfferV2SignatureCreator(pem, KEY_ID, ISSUER, BUNDLE);
  assert.notEqual(verifyJws(plain.createSignature('p', 'o')).nonce, verifyJws(plain.createSignature('p', 'o')).nonce);
});

test('PromotionalOfferSignatureCreator (v1): base64 DER ECDSA over Apple\'s U+2063-joined string', async () => {
  const s = new lib.PromotionalOfferSignatureCreator(pem, KEY_ID, BUNDLE);
  const nonce = 'A4C5E3F0-1B2C-4D5E-8F90-A1B2C3D4E5F6';
  const token = 'B5D6E7F8-0A1B-4C2D-9E3F-112233445566';
  for (const sig of [s.createSignature('com.example.p', 'offer1', token, nonce, 1700000000000),
    await s.createSignatureAsync('com.example.p', 'offer1', token, nonce, 1700000000000)]) {
    const text = [BUNDLE, KEY_ID, 'com.example.p', 'offer1', token.toLowerCase(), nonce.toLowerCase(), '1700000000000'].join('\u2063');
    assert.ok(crypto.verify('sha256', Buffer.from(text, 'utf8'), publicKey, Buffer.from(sig, 'base64')));
    items.push({ kind: 'promo_v1', value: sig, expect: { bundleId: BUNDLE, keyId: KEY_ID, productId: 'com.example.p',
      offerId: 'offer1', appAccountToken: token, nonce, timestamp: 1700000000000 } });
  }
});

test('App Store Server API bearer token', () => {
  const c = new lib.AppStoreServerAPIClient(pem, KEY_ID, ISSUER, BUNDLE, lib.Environment.SANDBOX);
  const token = c.createBearerToken();
  const claims = verifyJws(token);
  assert.equal(claims.aud, 'appstoreconnect-v1');
  assert.equal(claims.exp - claims.iat, 300);
  items.push({ kind: 'api_token', value: token, expect: { kid: KEY_ID, iss: ISSUER, bid: BUNDLE, lifetime: 300 } });
  c.close();
});

test('unusable keys fail in the constructor with the precise reason', () => {
  const dir = signingKeys();
  for (const [file, reason] of [['encrypted.p8', 'key_encrypted'], ['rsa.p8', 'key_not_ec'], ['p384.p8', 'key_wrong_curve'],
    ['truncated.p8', 'key_malformed'], ['not_pem.txt', 'key_not_pem']]) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    assert.throws(() => new lib.PromotionalOfferV2SignatureCreator(text, KEY_ID, ISSUER, BUNDLE), (e) => {
      assert.ok(e instanceof lib.AppStoreServerError, String(e));
      assert.equal(e.libraryStatus, 'INVALID_KEY');
      assert.equal(e.reason, reason, `${file}: ${e.message}`);
      assert.ok(!e.message.includes('PRIVATE KEY-----\n'), 'no key bytes in the message');
      return true;
    });
  }
});

test('the same signatures pass Tests/support/check_signatures.py (Python cryptography + joserfc)', () => {
  assert.ok(items.length >= 10, `${items.length} items`);
  const file = path.join(tmpdir(), 'node_sign_items.json');
  fs.writeFileSync(file, JSON.stringify({ public_key: path.join(signingKeys(), 'p256_public.pem'), items }));
  const out = execFileSync('python3', [path.join(SUPPORT, 'check_signatures.py'), 'check', file], { encoding: 'utf8' });
  assert.match(out, new RegExp(`signatures: ${items.length} passed, 0 failed`));
});
