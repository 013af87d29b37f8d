'use strict';
// A SignedDataVerifier without roots (an empty appleRootCertificates), as Apple's Node library allows: it is created
// without throwing, and then every verification fails, through every verify method, Promise and Sync, offline and
// online (nothing is fetched). Apple's Node library fails such a verification in its chain check (no root to chain
// to: VERIFICATION_FAILURE; its test "should fail to validate a chain with empty root certificate array").
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const spec = require('../generated/spec.js');
const { testpki, readTrimmed } = require('./helpers.js');

// A valid signed value of the test PKI for each verify method (they verify with the PKI's root: the control).
const CASE_OF = {
  verifyAndDecodeNotification: 'notif-valid-did-renew',
  verifyAndDecodeNotificationDeep: 'notif-valid-did-renew',
  verifyAndDecodeTransaction: 'tx-valid',
  verifyAndDecodeRenewalInfo: 'renewal-valid',
  verifyAndDecodeAppTransaction: 'apptx-valid',
  verifyAndDecodeRealtimeRequest: 'realtime-valid',
};

let dir;
let manifest;
test.before(() => {
  dir = testpki();
  manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
});

function signed(method) {
  const c = manifest.cases.find((x) => x.id === CASE_OF[method]);
  assert.ok(c, `no test PKI case for ${method}`);
  return { jws: readTrimmed(path.join(dir, c.path)), verifier: c.verifier };
}

function noRoots(e, environment) {
  assert.ok(e instanceof lib.VerificationException, String(e));
  assert.equal(e.status, lib.VerificationStatus.VERIFICATION_FAILURE, `status ${lib.VerificationStatus[e.status]}`);
  assert.equal(e.libraryStatus, 'VERIFICATION_FAILURE');
  assert.equal(e.reason, 'no_trust_anchor');
  assert.equal(e.reasonCode, lib.FailureReason.NO_TRUST_ANCHOR);
  assert.match(e.message, new RegExp(`no root certificates .*${environment}`));
  return true;
}

test('every verify method has a signed value here (the list follows the generated methods)', () => {
  assert.deepEqual(spec.VERIFY_OPERATIONS.map((op) => op.method).sort(), Object.keys(CASE_OF).sort());
});

test('no roots: created without throwing; every verification fails (Promise and Sync)', async (t) => {
  for (const [environment, appAppleId] of [[lib.Environment.SANDBOX, undefined], [lib.Environment.PRODUCTION, 1234]]) {
    await t.test(environment, async () => {
      const v = new lib.SignedDataVerifier([], false, environment, 'com.example.testpki', appAppleId);
      assert.deepEqual(v.rootCertificates, []);
      for (const op of spec.VERIFY_OPERATIONS) {
        const { jws } = signed(op.method);
        await assert.rejects(v[op.method](jws), (e) => noRoots(e, environment), op.method);
        assert.throws(() => v[`${op.method}Sync`](jws), (e) => noRoots(e, environment), `${op.method}Sync`);
        await assert.rejects(v[op.method]('not a JWS'), (e) => noRoots(e, environment), `${op.method}: any input`);
        // Argument types are still checked first.
        await assert.rejects(v[op.method](42), TypeError);
        assert.throws(() => v[`${op.method}Sync`](42), TypeError);
      }
      assert.deepEqual(v.cacheStats(), { hits: 0, misses: 0, entries: 0 });
      v.close();
      await assert.rejects(v.verifyAndDecodeTransaction(signed('verifyAndDecodeTransaction').jws), /closed/);
      assert.throws(() => v.verifyAndDecodeTransactionSync('x'), /closed/);
      assert.throws(() => v.cacheStats(), /closed/);
      v.close();
    });
  }
});

test('control: the same values verify with the test PKI\'s root', async () => {
  for (const op of spec.VERIFY_OPERATIONS) {
    const { jws, verifier } = signed(op.method);
    const v = new lib.SignedDataVerifier([fs.readFileSync(path.join(dir, 'root.der'))], false, verifier.environment,
      verifier.bundleId);
    assert.equal(typeof (await v[op.method](jws)), 'object', op.method);
    v.close();
  }
});

test('no roots with online checks: every verification fails, nothing is fetched', async () => {
  let fetched = 0;
  const fetchSpy = async () => {
    fetched++;
    throw new Error('no fetch expected');
  };
  const v = new lib.SignedDataVerifier([], true, lib.Environment.SANDBOX, 'com.example.testpki', undefined,
    { fetch: fetchSpy });
  for (const op of spec.VERIFY_OPERATIONS) {
    const { jws } = signed(op.method);
    await assert.rejects(v[op.method](jws), (e) => noRoots(e, lib.Environment.SANDBOX), op.method);
    assert.throws(() => v[`${op.method}Sync`](jws), (e) => noRoots(e, lib.Environment.SANDBOX), `${op.method}Sync`);
  }
  assert.equal(fetched, 0);
  v.close();
});

test('no roots: the other configuration errors are still thrown (as Apple\'s: Production needs appAppleId)', () => {
  assert.throws(() => new lib.SignedDataVerifier([], false, lib.Environment.PRODUCTION, 'com.example.testpki'),
    (e) => e instanceof lib.AppStoreServerError && e.reason === 'invalid_argument' && /appAppleId/.test(e.message));
  assert.throws(() => new lib.SignedDataVerifier([], false, 'Staging', 'b'), TypeError);
  assert.throws(() => new lib.SignedDataVerifier([Buffer.from('not a certificate')], false, lib.Environment.SANDBOX, 'b'),
    (e) => e instanceof lib.AppStoreServerError && e.libraryStatus === 'CONFIGURATION_ERROR');
});

test('no roots in Xcode and LocalTesting: signatures are not checked, values decode (as Apple\'s)', async () => {
  const { jws } = signed('verifyAndDecodeTransaction');
  const payload = JSON.parse(Buffer.from(jws.split('.')[1], 'base64url'));
  for (const environment of [lib.Environment.XCODE, lib.Environment.LOCAL_TESTING]) {
    const forged = [jws.split('.')[0], Buffer.from(JSON.stringify({ ...payload, environment })).toString('base64url'),
      jws.split('.')[2]].join('.');
    const v = new lib.SignedDataVerifier([], false, environment, payload.bundleId);
    assert.equal((await v.verifyAndDecodeTransaction(forged)).environment, environment);
    v.close();
  }
});
