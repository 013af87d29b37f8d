'use strict';
// External signers (a key in a KMS or an HSM): ExternalSigner wherever a .p8 key goes. A stand-in KMS built on
// node:crypto signs; every signature is checked with node:crypto and again by Tests/support/check_signatures.py.
// Every way a signer can fail (throws, rejects, answers with something else, too late, another key's signature, its
// key closed meanwhile) fails that call with AppStoreServerError INVALID_KEY / signer_failed and nothing sent;
// synchronous calls refuse (the signer needs the JS thread they block); the event loop keeps running while a signer
// works; a signer that needs the pool itself does not starve; workers and garbage collection are safe.
const test = require('node:test');
const assert = require('assert/strict');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');
const { execFileSync } = require('child_process');
const { Worker } = require('worker_threads');
const lib = require('..');
const native = require('../lib/native.js');
const { convert } = require('../lib/errors.js');
const { newKey } = require('../lib/signer.js');
const { createTransport, fetchTransport } = require('../lib/transport.js');
const { ENVIRONMENT_CODES } = require('../generated/spec.js');
const { SUPPORT, MOCK, startMock, signingKeys, tmpdir } = require('./helpers.js');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const KEY_ID = 'KEYID12345';
const ISSUER = '68f6f2a6-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
const BUNDLE = 'com.example.signing';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// A P-256 key made for this run: the KMS holds the private half, the binding gets the public half.
const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const PUBLIC_PEM = publicKey.export({ type: 'spki', format: 'pem' });
const PUBLIC_DER = publicKey.export({ type: 'spki', format: 'der' });
const other = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });

/**
 * A stand-in for a KMS: signs what it is given with its private key, as DER (AWS KMS, Google Cloud KMS, most HSMs)
 * or as 64 bytes r||s (JOSE's form, PKCS#11), synchronously or as a Promise; records what it was asked.
 */
function kms({ form = 'der', async = false, key = privateKey } = {}) {
  const calls = [];
  const sign = (message, digest) => {
    calls.push({ message: Buffer.from(message), digest: Buffer.from(digest) });
    const sig = crypto.sign('sha256', message, { key, dsaEncoding: form === 'der' ? 'der' : 'ieee-p1363' });
    return async ? new Promise((resolve) => setImmediate(() => resolve(sig))) : sig;
  };
  sign.calls = calls;
  return sign;
}

const external = (sign, options) => new lib.ExternalSigner(sign, PUBLIC_PEM, options);

function verifyJws(jws, key = publicKey) {
  const [h, p, s] = jws.split('.');
  assert.ok(crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url')), 'node:crypto verifies the ES256 signature with the signer\'s public key');
  assert.deepEqual(JSON.parse(Buffer.from(h, 'base64url')), { alg: 'ES256', kid: KEY_ID, typ: 'JWT' });
  return JSON.parse(Buffer.from(p, 'base64url'));
}

const REQUEST = {
  operation: 'CREATE_ONE_TIME_CHARGE', version: '1', currency: 'USD', taxCode: 'C003-00-1',
  requestInfo: { requestReferenceId: '3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11' },
  item: { SKU: 'com.example.sku', description: 'A thing', displayName: 'Thing', price: 990 },
};
const NONCE = 'a4c5e3f0-1b2c-4d5e-8f90-a1b2c3d4e5f6';
const TOKEN = 'b5d6e7f8-0a1b-4c2d-9e3f-112233445566';

/** One of every signature the binding makes, each through its Promise method, with `signingKey`. */
function everySignature(signingKey) {
  return {
    promo_v2: () => new lib.PromotionalOfferV2SignatureCreator(signingKey, KEY_ID, ISSUER, BUNDLE)
      .createSignatureAsync('com.example.p', 'offer1', 'tx9'),
    intro_eligibility: () => new lib.IntroductoryOfferEligibilitySignatureCreator(signingKey, KEY_ID, ISSUER, BUNDLE)
      .createSignatureAsync('com.example.p', true, 'tx1'),
    advanced_commerce: () => new lib.AdvancedCommerceInAppSignatureCreator(signingKey, KEY_ID, ISSUER, BUNDLE)
      .createSignatureAsync(REQUEST),
    promo_v1: () => new lib.PromotionalOfferSignatureCreator(signingKey, KEY_ID, BUNDLE)
      .createSignatureAsync('com.example.p', 'offer1', TOKEN, NONCE, 1700000000000),
    api_token: () => new lib.AppStoreServerAPIClient(signingKey, KEY_ID, ISSUER, BUNDLE, lib.Environment.SANDBOX)
      .createBearerTokenAsync(),
  };
}

/** Asserts e is the failure of a signer: AppStoreServerError INVALID_KEY / signer_failed, message matching words. */
function signerFailed(e, words) {
  assert.ok(e instanceof lib.AppStoreServerError, `${e && e.stack}`);
  assert.equal(e.libraryStatus, 'INVALID_KEY', e.message);
  assert.equal(e.reason, 'signer_failed', e.message);
  assert.equal(e.reasonCode, lib.FailureReason.SIGNER_FAILED);
  if (words) assert.match(e.message, words);
  return true;
}

async function settle() {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

const items = [];

for (const form of ['der', 'raw']) {
  for (const async of [false, true]) {
    test(`every signature with a signer answering ${form}${async ? ' through a Promise' : ''}: verified with its public key`, async () => {
      const sign = kms({ form, async });
      const made = everySignature(external(sign));
      const value = {};
      for (const [kind, make] of Object.entries(made)) value[kind] = await make();
      assert.equal(sign.calls.length, 5, 'every signature is asked of the signer');

      const c2 = verifyJws(value.promo_v2);
      assert.deepEqual([c2.aud, c2.iss, c2.bid, c2.productId, c2.offerIdentifier, c2.transactionId],
        ['promotional-offer', ISSUER, BUNDLE, 'com.example.p', 'offer1', 'tx9']);
      assert.match(c2.nonce, UUID_RE);
      const ci = verifyJws(value.intro_eligibility);
      assert.deepEqual([ci.aud, ci.allowIntroductoryOffer, ci.transactionId], ['introductory-offer-eligibility', true, 'tx1']);
      const ca = verifyJws(value.advanced_commerce);
      assert.equal(ca.aud, 'advanced-commerce-api');
      assert.deepEqual(JSON.parse(Buffer.from(ca.request, 'base64')), REQUEST);
      const ct = verifyJws(value.api_token);
      assert.deepEqual([ct.aud, ct.iss, ct.bid, ct.exp - ct.iat], ['appstoreconnect-v1', ISSUER, BUNDLE, 300]);
      const text = [BUNDLE, KEY_ID, 'com.example.p', 'offer1', TOKEN, NONCE, '1700000000000'].join('\u2063');
      assert.ok(crypto.verify('sha256', Buffer.from(text, 'utf8'), publicKey, Buffer.from(value.promo_v1, 'base64')),
        'the v1 signature (base64 DER) verifies');

      // The signer got the JWS signing input (header.payload) and its SHA-256.
      const first = sign.calls[0];
      assert.equal(first.message.toString('utf8'), value.promo_v2.split('.').slice(0, 2).join('.'));
      assert.deepEqual(first.digest, crypto.createHash('sha256').update(first.message).digest());

      const expect = { kid: KEY_ID, iss: ISSUER, bid: BUNDLE };
      items.push(
        { kind: 'promo_v2', value: value.promo_v2, expect: { ...expect, productId: 'com.example.p', offerIdentifier: 'offer1', transactionId: 'tx9' } },
        { kind: 'intro_eligibility', value: value.intro_eligibility, expect: { ...expect, productId: 'com.example.p', allowIntroductoryOffer: true, transactionId: 'tx1' } },
        { kind: 'advanced_commerce', value: value.advanced_commerce, expect: { ...expect, request: REQUEST } },
        { kind: 'api_token', value: value.api_token, expect: { ...expect, lifetime: 300 } },
        { kind: 'promo_v1', value: value.promo_v1, expect: { bundleId: BUNDLE, keyId: KEY_ID, productId: 'com.example.p',
          offerId: 'offer1', appAccountToken: TOKEN, nonce: NONCE, timestamp: 1700000000000 } });
    });
  }
}

test('the same signatures pass Tests/support/check_signatures.py (Python cryptography + joserfc)', () => {
  assert.equal(items.length, 20);
  const dir = tmpdir();
  fs.writeFileSync(path.join(dir, 'signer_public.pem'), PUBLIC_PEM);
  const file = path.join(dir, 'node_signer_items.json');
  fs.writeFileSync(file, JSON.stringify({ public_key: path.join(dir, 'signer_public.pem'), items }));
  const out = execFileSync('python3', [path.join(SUPPORT, 'check_signatures.py'), 'check', file], { encoding: 'utf8' });
  assert.match(out, /signatures: 20 passed, 0 failed/);
});

test('the public key as PEM text, PEM bytes or DER SubjectPublicKeyInfo; other keys are refused when the key is made', async () => {
  for (const pub of [PUBLIC_PEM, Buffer.from(PUBLIC_PEM), PUBLIC_DER, new Uint8Array(PUBLIC_DER)]) {
    const creator = new lib.PromotionalOfferV2SignatureCreator(new lib.ExternalSigner(kms(), pub), KEY_ID, ISSUER, BUNDLE);
    verifyJws(await creator.createSignatureAsync('p', 'o'));
    creator.close();
  }
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const p384 = crypto.generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ type: 'spki', format: 'pem' });
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' });
  for (const [pub, reason] of [['not a key', 'key_malformed'], [privatePem, null], [p384, 'key_wrong_curve'], [rsa, 'key_not_ec']]) {
    assert.throws(() => new lib.PromotionalOfferV2SignatureCreator(new lib.ExternalSigner(kms(), pub), KEY_ID, ISSUER, BUNDLE), (e) => {
      assert.ok(e instanceof lib.AppStoreServerError, String(e));
      assert.equal(e.libraryStatus, 'INVALID_KEY', e.message);
      if (reason) assert.equal(e.reason, reason, e.message);
      for (const line of privatePem.split('\n').slice(1, -2)) assert.ok(!e.message.includes(line), 'no key bytes in the message');
      return true;
    });
  }
});

test('arguments: ExternalSigner\'s and a signingKey that is neither a .p8 nor an ExternalSigner', () => {
  const sign = kms();
  for (const [make, error, words] of [
    [() => new lib.ExternalSigner(42, PUBLIC_PEM), TypeError, /sign must be a function/],
    [() => new lib.ExternalSigner(sign), TypeError, /publicKey/],
    [() => new lib.ExternalSigner(sign, 42), TypeError, /publicKey/],
    [() => new lib.ExternalSigner(sign, ''), TypeError, /publicKey is empty/],
    [() => new lib.ExternalSigner(sign, PUBLIC_PEM, 5), TypeError, /options/],
    [() => new lib.ExternalSigner(sign, PUBLIC_PEM, { timeoutMs: '1' }), TypeError, /timeoutMs/],
    [() => new lib.ExternalSigner(sign, PUBLIC_PEM, { timeoutMs: 0 }), RangeError, /timeoutMs/],
    [() => new lib.ExternalSigner(sign, PUBLIC_PEM, { timeoutMs: 2 ** 32 }), RangeError, /timeoutMs/],
    [() => new lib.ExternalSigner(sign, PUBLIC_PEM, { timeout: 5 }), TypeError, /options.timeout is not an option/],
    [() => new lib.PromotionalOfferV2SignatureCreator(sign, KEY_ID, ISSUER, BUNDLE), TypeError, /new ExternalSigner\(sign, publicKey\)/],
    [() => new lib.AppStoreServerAPIClient(sign, KEY_ID, ISSUER, BUNDLE, lib.Environment.SANDBOX), TypeError, /ExternalSigner/],
    [() => new lib.PromotionalOfferSignatureCreator({ sign }, KEY_ID, BUNDLE), TypeError, /the \.p8 PEM .* or an ExternalSigner/],
    [() => new lib.AppStoreServerAPIClient(external(sign), KEY_ID, null, BUNDLE, lib.Environment.SANDBOX), TypeError, /issuerId/],
    [() => new lib.PromotionalOfferSignatureCreator(external(sign), null, BUNDLE), TypeError, /keyId/],
  ]) assert.throws(make, (e) => e instanceof error && words.test(e.message), String(make));
  const s = external(sign, { timeoutMs: 1500 });
  assert.deepEqual([s.timeoutMs, s.publicKey, s.sign], [1500, PUBLIC_PEM, sign]);
  assert.equal(external(sign).timeoutMs, 10000);
  assert.throws(() => { 'use strict'; s.timeoutMs = 1; }, TypeError, 'read-only');
  assert.equal(sign.calls.length, 0);
});

test('synchronous calls refuse an external signer (it needs the thread they block): no deadlock, no call of the signer', async () => {
  const sign = kms();
  const signer = external(sign);
  const client = new lib.AppStoreServerAPIClient(signer, KEY_ID, ISSUER, BUNDLE, lib.Environment.SANDBOX);
  for (const [call, method] of [
    [() => new lib.PromotionalOfferV2SignatureCreator(signer, KEY_ID, ISSUER, BUNDLE).createSignature('p', 'o'), 'createSignatureAsync'],
    [() => new lib.IntroductoryOfferEligibilitySignatureCreator(signer, KEY_ID, ISSUER, BUNDLE).createSignature('p', false, 't'), 'createSignatureAsync'],
    [() => new lib.AdvancedCommerceInAppSignatureCreator(signer, KEY_ID, ISSUER, BUNDLE).createSignature(REQUEST), 'createSignatureAsync'],
    [() => new lib.PromotionalOfferSignatureCreator(signer, KEY_ID, BUNDLE).createSignature('p', 'o', TOKEN, NONCE, 1), 'createSignatureAsync'],
    [() => client.createBearerToken(), 'createBearerTokenAsync'],
  ]) assert.throws(call, (e) => signerFailed(e, new RegExp(`synchronous call cannot use an ExternalSigner.*use ${method}`)));
  // The addon's own guard, below the JS one: the library's callback called on the JS thread fails at once.
  assert.throws(() => native.signing_key_create_api_token(client._key, 0, 0), (e) => {
    assert.equal(e.reasonName, 'signer_failed');
    assert.match(e.signerFailure, /synchronous call cannot use an external signer/);
    return signerFailed(convert(e, 'sign'), /the external signer failed: a synchronous call cannot use an external signer/);
  });
  assert.equal(sign.calls.length, 0);
  verifyJws(await client.createBearerTokenAsync());
  client.close();
});

class Unavailable extends Error {
  constructor(m) {
    super(m);
    this.name = 'Unavailable';
  }
}

const wrongKey = kms({ key: other.privateKey });
const BAD_SIGNERS = {
  'throws': [() => { throw new Unavailable('KMS unavailable'); }, /the external signer failed: it threw Unavailable: KMS unavailable \[signer_failed\]$/, Unavailable],
  'throws a string': [() => { throw 'busy'; }, /it threw busy/, 'busy'], // eslint-disable-line no-throw-literal
  'rejects': [() => Promise.reject(new Unavailable('throttled')), /its Promise rejected with Unavailable: throttled/, Unavailable],
  'returns undefined': [() => undefined, /it returned undefined, not a Buffer/],
  'returns a string': [() => 'MEUCIQ', /it returned a string \(6 characters\), not a Buffer/],
  'returns a number': [() => 7, /it returned a number, not a Buffer/],
  'returns an array': [() => [1, 2], /it returned an array, not a Buffer/],
  'resolves to null': [async () => null, /its Promise resolved to null, not a Buffer/],
  'empty': [() => Buffer.alloc(0), /it returned 0 bytes/],
  'too long': [() => Buffer.alloc(100, 1), /it returned 100 bytes; an ECDSA P-256 signature is 64 bytes r\|\|s or DER of at most 72/],
  'garbage': [() => Buffer.from('garbage'), /7 bytes that are not an ECDSA P-256 signature/],
  'zeros (r = s = 0)': [() => Buffer.alloc(64), /64 bytes that are not an ECDSA P-256 signature/],
  'random': [() => crypto.randomBytes(64), /does not verify with its public key/],
  'another key': [wrongKey, /does not verify with its public key/],
  'another message': [(m) => crypto.sign('sha256', Buffer.concat([m, Buffer.from('x')]), { key: privateKey, dsaEncoding: 'der' }),
    /does not verify with its public key/],
};

for (const [name, [sign, words, cause]] of Object.entries(BAD_SIGNERS)) {
  test(`a signer that ${name} fails every signature with signer_failed`, async () => {
    for (const [kind, make] of Object.entries(everySignature(external(sign)))) {
      await assert.rejects(make(), (e) => {
        signerFailed(e, words);
        if (cause === undefined) assert.equal(e.cause, undefined, kind);
        else if (typeof cause === 'function') assert.ok(e.cause instanceof cause, `${kind}: ${e.cause}`);
        else assert.equal(e.cause, cause, kind);
        return true;
      }, kind);
    }
  });
}

/**
 * A library API client over the fetch bridge whose bearer tokens the signer makes; with it, the core's own call loop
 * (appstore_api_client_call on the pool) signs and sends. counter.sent counts the requests that left.
 */
function coreClient(signer, baseUrl, counter) {
  const key = newKey('test', signer, MOCK.keyId, MOCK.issuerId, MOCK.bundleId);
  const send = fetchTransport();
  const transport = createTransport((request) => {
    counter.sent++;
    return send(request);
  });
  const o = native.api_client_options_new();
  native.api_client_options_set_base_url(o, baseUrl);
  native.api_client_options_set_transport(o, transport);
  const client = native.api_client_new(key, ENVIRONMENT_CODES.LocalTesting, o);
  native.close(o);
  native.retain(client, transport); // the transport's bridge must outlive the client (as a verifier's)
  return { key, client };
}

test('a signer whose public key is not its key\'s: every signature refused, nothing sent', async () => {
  // The KMS signs with its key; the public key given is another key's (a misconfigured key id).
  const mismatched = new lib.ExternalSigner(kms(), other.publicKey.export({ type: 'spki', format: 'pem' }));
  for (const make of Object.values(everySignature(mismatched)))
    await assert.rejects(make(), (e) => signerFailed(e, /does not verify with its public key/));
  const counter = { sent: 0 };
  const core = coreClient(mismatched, 'http://127.0.0.1:9', counter);
  await assert.rejects(native.async.api_client_call(core.client, 'getTransactionInfo', '{"transactionId":"1"}'),
    (e) => signerFailed(e, /does not verify/));
  assert.equal(counter.sent, 0);
  native.close(core.client);
  native.close(core.key);
});

test('a failure is one signature\'s: the next is asked again, without the earlier cause', async () => {
  const good = kms();
  const answers = [new Unavailable('once'), null, 'garbage'];
  const flaky = (m, d) => {
    const a = answers.shift();
    if (a instanceof Error) throw a;
    return a === null ? good(m, d) : Buffer.from(a);
  };
  const creator = new lib.PromotionalOfferV2SignatureCreator(external(flaky), KEY_ID, ISSUER, BUNDLE);
  await assert.rejects(creator.createSignatureAsync('p', 'o'), (e) => signerFailed(e, /it threw Unavailable: once/));
  verifyJws(await creator.createSignatureAsync('p', 'o'));
  await assert.rejects(creator.createSignatureAsync('p', 'o'), (e) => {
    signerFailed(e, /not an ECDSA P-256 signature/);
    assert.ok(!/once/.test(e.message) && e.cause === undefined, e.message);
    return true;
  });
});

test('a signer that never answers fails at its timeout (a TimeoutError as cause); a late answer is dropped', async () => {
  let release;
  const late = new Promise((r) => { release = r; });
  const sign = kms();
  const hung = (m, d) => late.then(() => sign(m, d));
  const creator = new lib.PromotionalOfferV2SignatureCreator(external(hung, { timeoutMs: 300 }), KEY_ID, ISSUER, BUNDLE);
  const t0 = Date.now();
  await assert.rejects(creator.createSignatureAsync('p', 'o'), (e) => {
    signerFailed(e, /the external signer failed: no signature within the 300 ms it had/);
    assert.equal(e.cause && e.cause.name, 'TimeoutError');
    return true;
  });
  const elapsed = Date.now() - t0;
  // The signer answers only when released (below), so only the timeout ends the call: at least 300 ms (the code
  // guarantees it), and at most 100x that (>= 4x a loaded run).
  assert.ok(elapsed >= 290 && elapsed < 30000, `${elapsed} ms with a 300 ms timeout`);
  release();
  await new Promise((r) => setTimeout(r, 20)); // the late answer arrives and is dropped
  assert.equal(sign.calls.length, 1);
  // Within its timeout a slow signer is fine.
  const slow = new lib.PromotionalOfferV2SignatureCreator(external((m, d) => new Promise((r) => setTimeout(() => r(sign(m, d)), 150)),
    { timeoutMs: 5000 }), KEY_ID, ISSUER, BUNDLE);
  verifyJws(await slow.createSignatureAsync('p', 'o'));
});

test('API requests signed by the signer: the mock server checks the bearer tokens; a failing signer sends nothing', async (t) => {
  const mock = await startMock();
  t.after(() => mock.stop());
  // The mock verifies bearer tokens with the test key's public key: the stand-in KMS holds that key here.
  const dir = signingKeys();
  const testKey = crypto.createPrivateKey(fs.readFileSync(path.join(dir, 'p256.p8')));
  const testPublic = fs.readFileSync(path.join(dir, 'p256_public.pem'), 'utf8');
  const params = JSON.stringify({ transactionId: '2000000000000001' });
  for (const form of ['der', 'raw']) {
    const sign = kms({ form, async: form === 'raw', key: testKey });
    const counter = { sent: 0 };
    const { key, client } = coreClient(new lib.ExternalSigner(sign, testPublic), mock.url, counter);
    native.close(key); // the client's handle keeps the signer
    for (let i = 0; i < 2; i++) {
      const info = await native.async.api_client_call(client, 'getTransactionInfo', params);
      assert.equal(typeof info.signedTransactionInfo, 'string');
    }
    assert.deepEqual([sign.calls.length, counter.sent], [2, 2], 'each request is signed afresh');
    // The request the library builds for a host's own loop carries a token the signer made.
    const request = await native.async.api_client_build_request(client, 'getTransactionInfo', params);
    const auth = native.api_request_header_value(request, [...Array(native.api_request_header_count(request)).keys()]
      .find((i) => native.api_request_header_name(request, i) === 'Authorization'));
    native.close(request);
    const [h, p, sig] = auth.replace(/^Bearer /, '').split('.');
    assert.ok(crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key: crypto.createPublicKey(testPublic), dsaEncoding: 'ieee-p1363' },
      Buffer.from(sig, 'base64url')));
    assert.equal(sign.calls.length, 3);
    native.close(client);
  }
  // A failing signer: the call rejects with the signer's failure (naming the endpoint); nothing is sent.
  const counter = { sent: 0 };
  const failing = coreClient(new lib.ExternalSigner(() => { throw new Unavailable('KMS unavailable'); }, testPublic), mock.url, counter);
  await assert.rejects(native.async.api_client_call(failing.client, 'getTransactionInfo', params), (e) => {
    signerFailed(e, /^bearer token: the external signer failed: it threw Unavailable: KMS unavailable \[signer_failed\]$/);
    assert.ok(e.cause instanceof Unavailable);
    return true;
  });
  await assert.rejects(native.async.api_client_build_request(failing.client, 'getTransactionInfo', params),
    (e) => signerFailed(e, /KMS unavailable/));
  assert.equal(counter.sent, 0);
  native.close(failing.client);
  native.close(failing.key);
  // AppStoreServerAPIClient takes the signer in Apple's constructor; its bearer token is the signer's.
  const sign = kms({ key: testKey });
  const client = new lib.AppStoreServerAPIClient(new lib.ExternalSigner(sign, testPublic), MOCK.keyId, MOCK.issuerId,
    MOCK.bundleId, lib.Environment.LOCAL_TESTING, { baseUrl: mock.url });
  const [h, p, sig] = (await client.createBearerTokenAsync()).split('.');
  assert.ok(crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key: crypto.createPublicKey(testPublic), dsaEncoding: 'ieee-p1363' },
    Buffer.from(sig, 'base64url')));
  assert.equal(sign.calls.length, 1);
  client.close();
});

test('a client or creator closed while its signer is signing: the call fails with signer_failed at once', async () => {
  let release;
  const gate = new Promise((r) => { release = r; });
  const sign = kms();
  const waiting = (m, d) => gate.then(() => sign(m, d));
  const counter = { sent: 0 };
  const patient = { timeoutMs: 120000 }; // waiting for the signer would take this long: far beyond the bound below
  const core = coreClient(external(waiting, patient), 'http://127.0.0.1:9', counter);
  const call = native.async.api_client_call(core.client, 'getTransactionInfo', '{"transactionId":"1"}');
  const client = new lib.AppStoreServerAPIClient(external(waiting, patient), KEY_ID, ISSUER, BUNDLE, lib.Environment.SANDBOX);
  const token = client.createBearerTokenAsync();
  const creator = new lib.PromotionalOfferV2SignatureCreator(external(waiting, patient), KEY_ID, ISSUER, BUNDLE);
  const signature = creator.createSignatureAsync('p', 'o');
  const settled = Promise.allSettled([call, token, signature]);
  await new Promise((r) => setTimeout(r, 100)); // the signer has been asked
  assert.equal(sign.calls.length, 0);
  const t0 = Date.now();
  native.signerClose(core.key); // what close() does first
  native.close(core.client);
  native.close(core.key);
  client.close();
  creator.close();
  for (const r of await settled) {
    assert.equal(r.status, 'rejected');
    signerFailed(convert(r.reason, 'sign'), /the external signer failed: the key was closed while its external signer was signing/);
  }
  // Milliseconds on an idle machine; 30 s is >= 4x a loaded run and far below the signers' 120 s timeout.
  assert.ok(Date.now() - t0 < 30000, 'without waiting for the signer\'s timeout');
  release();
  await new Promise((r) => setTimeout(r, 20)); // the late answers are dropped
  assert.equal(counter.sent, 0);
  await assert.rejects(client.createBearerTokenAsync(), /closed/);
  await assert.rejects(creator.createSignatureAsync('p', 'o'), /closed/);
});

test('the event loop keeps running while a signer works; many signatures at once with a signer that needs the pool', async () => {
  // A slow signer (a KMS round trip) that answers once the loop has ticked 10 times: the test, not the load, sets
  // its pace. A library blocking the loop while it waits would never see it answer (the signer's timeout fails it).
  const sign = kms();
  let ticks = 0;
  const slow = (m, d) => new Promise((r) => {
    const check = () => (ticks >= 10 ? r(sign(m, d)) : setTimeout(check, 10));
    check();
  });
  const creator = new lib.PromotionalOfferV2SignatureCreator(external(slow), KEY_ID, ISSUER, BUNDLE);
  const timer = setInterval(() => ticks++, 10);
  try {
    verifyJws(await creator.createSignatureAsync('p', 'o'));
  } finally {
    clearInterval(timer);
  }
  assert.ok(ticks >= 10, `the event loop was blocked while signing (${ticks} ticks)`);
  // crypto.sign with a callback runs on the libuv pool, which the waiting calls occupy: at most pool size - 1 of them
  // wait at once, so the signer always finds a pool thread (no call reaches its timeout).
  const pooled = (m) => new Promise((resolve, reject) => crypto.sign('sha256', m, { key: privateKey, dsaEncoding: 'der' },
    (err, sig) => (err ? reject(err) : resolve(sig))));
  // A starved pool would hold the calls until the signer's 120 s timeout; a fed one takes well under a second (30 s:
  // >= 4x a loaded run, far below the timeout).
  const creator2 = new lib.PromotionalOfferV2SignatureCreator(external(pooled, { timeoutMs: 120000 }), KEY_ID, ISSUER, BUNDLE);
  const t0 = Date.now();
  const all = await Promise.all(Array.from({ length: 16 }, (_, i) => creator2.createSignatureAsync('p', `offer${i}`)));
  assert.ok(Date.now() - t0 < 30000, `${Date.now() - t0} ms for 16 signatures`);
  all.forEach((jws, i) => assert.equal(verifyJws(jws).offerIdentifier, `offer${i}`));
});

/** n creators with their own signers, dropped (in a frame of their own, which keeps no handle once it returns). */
async function churn(n) {
  for (let i = 0; i < n; i++) {
    const c = new lib.PromotionalOfferV2SignatureCreator(external(kms()), KEY_ID, ISSUER, BUNDLE);
    if (i % 20 === 0) await c.createSignatureAsync('p', 'o');
  }
}

test('keys dropped without close() are collected: the signer lives while a creator or client holds it', async () => {
  await settle();
  const before = native.stats();
  let sign = kms();
  const ref = new WeakRef(sign);
  let client = new lib.AppStoreServerAPIClient(external(sign), KEY_ID, ISSUER, BUNDLE, lib.Environment.SANDBOX);
  let creator = new lib.PromotionalOfferV2SignatureCreator(external(sign), KEY_ID, ISSUER, BUNDLE);
  sign = null;
  await settle();
  verifyJws(await client.createBearerTokenAsync());
  verifyJws(await creator.createSignatureAsync('p', 'o'));
  client = null;
  await settle();
  assert.ok(ref.deref(), 'the creator still holds the signer');
  verifyJws(await creator.createSignatureAsync('p', 'o'));
  creator = null;
  await churn(200);
  for (let i = 0; i < 10 && (ref.deref() || native.stats().liveHandles > before.liveHandles); i++) {
    await settle();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(ref.deref(), undefined, 'the signer is released with the last key that uses it');
  const after = native.stats();
  assert.ok(after.liveHandles <= before.liveHandles, `handles ${before.liveHandles} -> ${after.liveHandles}`);
  assert.equal(after.liveSignRequests, 0);
});

test('worker threads: a signer in a worker signs; a worker terminated while its signer is signing ends after its timeout', async () => {
  const script = `
    const { parentPort, workerData } = require('worker_threads');
    const crypto = require('crypto');
    const lib = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const key = crypto.createPrivateKey(workerData.privatePem);
    const signer = new lib.ExternalSigner((m) => crypto.sign('sha256', m, { key, dsaEncoding: 'der' }), workerData.publicPem);
    const creator = new lib.PromotionalOfferV2SignatureCreator(signer, 'KEYID12345', 'iss', 'com.example.w');
    creator.createSignatureAsync('p', 'o').then((jws) => {
      parentPort.postMessage(jws);
      const hung = new lib.PromotionalOfferV2SignatureCreator(new lib.ExternalSigner(() => new Promise(() => {}),
        workerData.publicPem, { timeoutMs: 1000 }), 'KEYID12345', 'iss', 'com.example.w');
      hung.createSignatureAsync('p', 'o').catch(() => {});
      setTimeout(() => parentPort.postMessage('waiting'), 50);
    }, (e) => parentPort.postMessage('error: ' + e.message));`;
  const worker = new Worker(script, { eval: true, workerData: {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }), publicPem: PUBLIC_PEM } });
  const messages = [];
  await new Promise((resolve, reject) => {
    worker.on('message', (m) => {
      messages.push(m);
      if (m === 'waiting' || m.startsWith('error')) resolve();
    });
    worker.on('error', reject);
  });
  assert.equal(messages.length, 2, messages.join('\n'));
  const [h, p] = messages[0].split('.');
  assert.ok(crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(messages[0].split('.')[2], 'base64url')));
  // The pool thread waiting for the hung signer cannot be interrupted: the worker's teardown waits for it, at most the
  // signer's timeout (1000 ms); the hung signer never answers, so a teardown that waited for it would never end.
  // 30 s: >= 4x a loaded run.
  const t0 = Date.now();
  await worker.terminate();
  assert.ok(Date.now() - t0 < 30000, `terminate took ${Date.now() - t0} ms`);
  // This thread is unaffected.
  verifyJws(await new lib.PromotionalOfferV2SignatureCreator(external(kms()), KEY_ID, ISSUER, BUNDLE).createSignatureAsync('p', 'o'));
});
