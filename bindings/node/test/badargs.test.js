'use strict';
// Wrong argument types give a TypeError (RangeError for numbers out of range) with a message naming the argument,
// never a crash: a table over the public API, and every native function called with garbage.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const native = require('../lib/native.js');
const { signingKeys, testpki } = require('./helpers.js');

const E = lib.Environment;
let pem;
let root;
test.before(() => {
  pem = fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
  root = fs.readFileSync(path.join(testpki(), 'root.der'));
});

const verifier = () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 'com.example.testpki');
const client = () => new lib.AppStoreServerAPIClient(pem, 'KEY', 'ISSUER', 'com.example', E.SANDBOX,
  { fetch: () => { throw new Error('no network in this test'); } });

// [label, () => call, expected error class, message pattern]; calls returning a Promise must reject.
const TABLE = [
  ['verifier: roots not an array', () => new lib.SignedDataVerifier('x', false, E.SANDBOX, 'b'), TypeError, /appleRootCertificates/],
  ['verifier: root not bytes', () => new lib.SignedDataVerifier([123], false, E.SANDBOX, 'b'), TypeError, /appleRootCertificates\[0\]/],
  ['verifier: enableOnlineChecks not boolean', () => new lib.SignedDataVerifier([root], 'yes', E.SANDBOX, 'b'), TypeError, /enableOnlineChecks/],
  ['verifier: unknown environment', () => new lib.SignedDataVerifier([root], false, 'Staging', 'b'), TypeError, /environment/],
  ['verifier: bundleId not a string', () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 5), TypeError, /bundleId/],
  ['verifier: appAppleId a string', () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 'b', '1'), TypeError, /appAppleId/],
  ['verifier: appAppleId fractional', () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 'b', 1.5), TypeError, /appAppleId/],
  ['verifier: appAppleId beyond 2^53', () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 'b', 2 ** 60), RangeError, /app_apple_id/],
  ['verifier: options not an object', () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 'b', 1, 'x'), TypeError, /options/],
  ['verifier: transport not a function', () => new lib.SignedDataVerifier([root], true, E.SANDBOX, 'b', 1, { transport: 5 }), TypeError, /transport/],
  ['verifier: chainCache entries negative', () => new lib.SignedDataVerifier([root], false, E.SANDBOX, 'b', 1, { chainCache: { maxEntries: -1, ttlSeconds: 1 } }), RangeError, /max_entries/],
  ['verify: number', () => verifier().verifyAndDecodeTransaction(5), TypeError, /signedTransactionInfo/],
  ['verify: undefined', () => verifier().verifyAndDecodeNotification(), TypeError, /signedPayload/],
  ['verify: object', () => verifier().verifyAndDecodeRenewalInfo({}), TypeError, /signedRenewalInfo/],
  ['verifySync: array', () => verifier().verifyAndDecodeAppTransactionSync([]), TypeError, /signedAppTransaction/],
  ['verifySync: null', () => verifier().verifyAndDecodeRealtimeRequestSync(null), TypeError, /signedPayload/],
  ['verify after close', () => { const v = verifier(); v.close(); return v.verifyAndDecodeTransaction('a.b.c'); }, Error, /closed/],
  ['client: key not a string', () => new lib.AppStoreServerAPIClient(5, 'k', 'i', 'b', E.SANDBOX), TypeError, /signingKey/],
  ['client: keyId missing', () => new lib.AppStoreServerAPIClient(pem, undefined, 'i', 'b', E.SANDBOX), TypeError, /keyId/],
  ['client: environment', () => new lib.AppStoreServerAPIClient(pem, 'k', 'i', 'b', 1), TypeError, /environment/],
  ['client: fetch not a function', () => new lib.AppStoreServerAPIClient(pem, 'k', 'i', 'b', E.SANDBOX, { fetch: 'x' }), TypeError, /fetch/],
  ['client: timeout a string', () => new lib.AppStoreServerAPIClient(pem, 'k', 'i', 'b', E.SANDBOX, { timeoutMs: '5' }), TypeError, /timeoutMs/],
  ['client: sandboxFallback a string', () => new lib.AppStoreServerAPIClient(pem, 'k', 'i', 'b', E.PRODUCTION, { sandboxFallback: 'yes' }), TypeError, /options\.sandboxFallback/],
  ['client: rateLimit a number', () => new lib.AppStoreServerAPIClient(pem, 'k', 'i', 'b', E.SANDBOX, { rateLimit: 5 }), TypeError, /options\.rateLimit/],
  ['client: rateLimit.sharePercent out of range', () => new lib.AppStoreServerAPIClient(pem, 'k', 'i', 'b', E.SANDBOX, { rateLimit: { maxWaitMs: 0, sharePercent: 0 } }), RangeError, /sharePercent/],
  ['client: path parameter a number', () => client().getTransactionInfo(5), TypeError, /transactionId/],
  ['client: path parameter missing', () => client().getTransactionInfo(), TypeError, /transactionId is required/],
  ['client: status list of strings', () => client().getAllSubscriptionStatuses('1', ['ACTIVE']), TypeError, /status/],
  ['client: query model a number', () => client().getTransactionHistory('1', null, 5), TypeError, /transactionHistoryRequest/],
  ['client: query filter of the wrong type', () => client().getTransactionHistory('1', null, { startDate: '2024' }), TypeError, /startDate/],
  ['client: body a string', () => client().extendSubscriptionRenewalDate('1', 'body'), TypeError, /body/],
  ['client: body an array', () => client().setAppAccountToken('1', []), TypeError, /body/],
  ['client: image not bytes', () => client().uploadImage('a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d', 'png'), TypeError, /image/],
  ['client: version unknown', () => client().getTransactionHistory('1', null, {}, 'v9'), TypeError, /version/],
  ['client: pages with a number', () => client().getRefundHistoryPages(5), TypeError, /anyTransactionId/],
  ['promo v1: product a number', () => new lib.PromotionalOfferSignatureCreator(pem, 'k', 'b').createSignature(5, 'o', '', 'n', 1), TypeError, /productIdentifier/],
  ['promo v1: timestamp a string', () => new lib.PromotionalOfferSignatureCreator(pem, 'k', 'b').createSignature('p', 'o', '', 'n', '1'), TypeError, /timestamp/],
  ['promo v2: key not a string', () => new lib.PromotionalOfferV2SignatureCreator({}, 'k', 'i', 'b'), TypeError, /signingKey/],
  ['promo v2: transactionId a number', () => new lib.PromotionalOfferV2SignatureCreator(pem, 'k', 'i', 'b').createSignature('p', 'o', 5), TypeError, /transactionId/],
  ['intro: allow a string', () => new lib.IntroductoryOfferEligibilitySignatureCreator(pem, 'k', 'i', 'b').createSignature('p', 'yes', 't'), TypeError, /allowIntroductoryOffer/],
  ['intro async: allow a number', () => new lib.IntroductoryOfferEligibilitySignatureCreator(pem, 'k', 'i', 'b').createSignatureAsync('p', 1, 't'), TypeError, /allowIntroductoryOffer/],
  ['advanced commerce: request a string', () => new lib.AdvancedCommerceInAppSignatureCreator(pem, 'k', 'i', 'b').createSignature('{}'), TypeError, /advancedCommerceInAppRequest/],
  ['receipt utility: number', () => new lib.ReceiptUtility().extractTransactionIdFromAppReceipt(5), TypeError, /receipt/],
  ['receipt utility: undefined', () => new lib.ReceiptUtility().extractTransactionIdFromTransactionReceipt(), TypeError, /receipt/],
  ['receipt verifier: roots', () => new lib.ReceiptVerifier('x'), TypeError, /rootCertificates/],
  ['receipt verifier: bundle a number', () => new lib.ReceiptVerifier([root], 5), TypeError, /bundleId/],
  ['receipt verifier: verify a number', () => new lib.ReceiptVerifier([root]).verify(5), TypeError, /appReceipt/],
];

test('the bad-argument table', async (t) => {
  for (const [label, call, cls, pattern] of TABLE) {
    await t.test(label, async () => {
      let result;
      let thrown;
      try {
        result = call();
      } catch (e) {
        thrown = e;
      }
      if (!thrown && result && typeof result.then === 'function') {
        try {
          await result;
        } catch (e) {
          thrown = e;
        }
      }
      assert.ok(thrown, 'an error');
      assert.ok(thrown instanceof cls, `${cls.name} expected, got ${thrown && thrown.constructor.name}: ${thrown && thrown.message}`);
      assert.match(thrown.message, pattern);
    });
  }
});

test('every native function called with garbage throws, never crashes', () => {
  const other = native.verifier_options_new();
  const closed = native.api_client_options_new();
  native.close(closed);
  const garbage = [undefined, null, 0, -1, 1.5, NaN, 2 ** 64, 'str', 'a\u0000b', {}, [], [1, 'x'], () => 1, Symbol('s'),
    10n ** 30n, Buffer.alloc(3), new Float64Array(2), other, closed];
  let calls = 0;
  let threw = 0;
  for (const [name, fn] of Object.entries(native)) {
    if (typeof fn !== 'function' || ['close', 'retain', 'stats', 'trace', 'transportNew'].includes(name)) continue;
    for (const g of garbage) {
      for (const argv of [[g], [g, g, g, g, g, g], [other, g, g, g]]) {
        calls++;
        try {
          const r = fn(...argv);
          if (r && typeof r === 'object' && !Array.isArray(r) && typeof r.then !== 'function' && !Buffer.isBuffer(r)) {
            // a handle or an outputs object: fine
          }
        } catch (e) {
          threw++;
          assert.ok(e instanceof Error || (e && e.appstoreError), `${name}: threw ${e}`);
          if (e instanceof Error) assert.ok(e.message.length > 0);
        }
        const asyncFn = native.async[name];
        if (asyncFn) {
          try {
            const p = asyncFn(...argv);
            if (p && p.then) p.catch(() => {});
          } catch (e) {
            assert.ok(e instanceof Error || (e && e.appstoreError), `async ${name}: threw ${e}`);
          }
        }
      }
    }
  }
  assert.ok(calls > 1000 && threw > calls / 2, `${calls} calls, ${threw} threw`);
  native.close(other);
});

test('a handle of another kind or from elsewhere is refused by kind', () => {
  const key = native.signing_key_new(pem, 'k', 'i', 'b');
  assert.throws(() => native.verifier_new(key), (e) => e instanceof TypeError && /options must be an appstore_verifier_options handle \(got an appstore_signing_key handle\)/.test(e.message));
  const foreign = require('worker_threads').MessageChannel ? {} : null;
  assert.throws(() => native.verifier_new(foreign), TypeError);
  assert.throws(() => native.close({}), TypeError);
  native.close(key);
  assert.equal(native.close(key), false, 'closing twice is harmless');
});
