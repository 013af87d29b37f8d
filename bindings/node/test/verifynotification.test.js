'use strict';
// Apple's verifyNotification extension point: an override (in a subclass, or assigned on the instance as Apple's
// tests do) decides on the app a notification names; the default is the library's check.
const test = require('node:test');
const assert = require('assert/strict');
const lib = require('..');

/** A LocalTesting notification (signatures are not checked there) naming another app: com.other, 99. */
function otherAppNotification() {
  const b64 = (s) => Buffer.from(s).toString('base64url');
  const payload = { notificationType: 'TEST', notificationUUID: '3f2f3b2c-4a5b-4c6d-8e9f-0a1b2c3d4e5f', version: '2.0',
    signedDate: 1700000000000, data: { bundleId: 'com.other', appAppleId: 99, environment: 'LocalTesting' } };
  return `${b64('{"alg":"ES256"}')}.${b64(JSON.stringify(payload))}.c2ln`;
}

const newVerifier = () => new lib.SignedDataVerifier([], false, lib.Environment.LOCAL_TESTING, 'com.example.testpki');

test('the default refuses another app, async and sync', async () => {
  const v = newVerifier();
  await assert.rejects(v.verifyAndDecodeNotification(otherAppNotification()),
    (e) => e instanceof lib.VerificationException && e.status === lib.VerificationStatus.INVALID_APP_IDENTIFIER);
  assert.throws(() => v.verifyAndDecodeNotificationSync(otherAppNotification()), lib.VerificationException);
});

test('an override on the instance (Apple\'s tests) or in a subclass decides', async () => {
  const seen = [];
  const v = newVerifier();
  v.verifyNotification = function (bundleId, appAppleId, environment) { seen.push([bundleId, appAppleId, environment]); };
  assert.equal((await v.verifyAndDecodeNotification(otherAppNotification())).notificationType, 'TEST');
  assert.equal(v.verifyAndDecodeNotificationSync(otherAppNotification()).notificationType, 'TEST');
  assert.deepEqual(seen, [['com.other', 99, 'LocalTesting'], ['com.other', 99, 'LocalTesting']]);

  class Deferring extends lib.SignedDataVerifier {
    verifyNotification(bundleId, appAppleId, environment) {
      seen.push(bundleId);
      super.verifyNotification(bundleId, appAppleId, environment);
    }
  }
  const d = new Deferring([], false, lib.Environment.LOCAL_TESTING, 'com.example.testpki');
  await assert.rejects(d.verifyAndDecodeNotification(otherAppNotification()),
    (e) => e.status === lib.VerificationStatus.INVALID_APP_IDENTIFIER && /com\.other/.test(e.message));
  assert.equal(seen.at(-1), 'com.other');
  // An override that throws: its error, as it is.
  const refusal = new Error('not ours');
  const r = newVerifier();
  r.verifyNotification = () => { throw refusal; };
  await assert.rejects(r.verifyAndDecodeNotification(otherAppNotification()), (e) => e === refusal);
});
