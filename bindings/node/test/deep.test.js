'use strict';
// Beyond Apple: deep notification verification (the notification and the signed values nested in it, each verified
// at its own date, in one call) through the Promise and the Sync API.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { testpki, readTrimmed, b64urlJson } = require('./helpers.js');

test('verifyAndDecodeNotificationDeep: the notification and its nested transaction and renewal info', async () => {
  const dir = testpki();
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const c = manifest.cases.find((x) => x.id === 'notif-valid-did-renew');
  const v = new lib.SignedDataVerifier([fs.readFileSync(path.join(dir, 'root.der'))], false, c.verifier.environment,
    c.verifier.bundleId);
  const jws = readTrimmed(path.join(dir, c.path));
  const deep = await v.verifyAndDecodeNotificationDeep(jws);
  assert.deepEqual(v.verifyAndDecodeNotificationDeepSync(jws), deep);
  const notification = await v.verifyAndDecodeNotification(jws);
  assert.deepEqual(deep.notification, notification);
  assert.deepEqual(deep.transaction, await v.verifyAndDecodeTransaction(notification.data.signedTransactionInfo));
  assert.deepEqual(deep.renewalInfo, await v.verifyAndDecodeRenewalInfo(notification.data.signedRenewalInfo));
  assert.deepEqual(deep.transaction, b64urlJson(notification.data.signedTransactionInfo.split('.')[1]));
  assert.equal(deep.appTransaction, undefined);

  // A nested value that does not verify fails the call, and the message names the field. The outer notification is
  // re-signed here with the test PKI's leaf key (node:crypto), so only the nested transaction is bad.
  const [h, p] = jws.split('.');
  const payload = b64urlJson(p);
  const tx = payload.data.signedTransactionInfo.split('.');
  tx[1] = Buffer.from(JSON.stringify({ ...b64urlJson(tx[1]), price: 1 })).toString('base64url');
  payload.data.signedTransactionInfo = tx.join('.');
  const input = `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const leafKey = require('crypto').createPrivateKey(fs.readFileSync(path.join(dir, 'leaf_key.pem')));
  const sig = require('crypto').sign('sha256', Buffer.from(input), { key: leafKey, dsaEncoding: 'ieee-p1363' });
  const forged = `${input}.${sig.toString('base64url')}`;
  assert.equal((await v.verifyAndDecodeNotification(forged)).notificationType, notification.notificationType,
    'the outer notification verifies');
  await assert.rejects(v.verifyAndDecodeNotificationDeep(forged), (e) => {
    assert.ok(e instanceof lib.VerificationException);
    assert.equal(e.reason, 'bad_signature');
    assert.match(e.message, /^data\.signedTransactionInfo: /);
    return true;
  });
  v.close();
});
