'use strict';
// Notifications v2.17 (Apple's changelog of 2025-06-26) through Apple's Node names: subtypes CREATED and
// ACTIVE_TOKEN_REMINDER, an external purchase token's tokenType (TokenType; unknown values kept as strings) and
// tokenExpirationDate.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { testpki, readTrimmed } = require('./helpers.js');

async function decode(dir, id) {
  const v = new lib.SignedDataVerifier([fs.readFileSync(path.join(dir, 'root.der'))], false, lib.Environment.SANDBOX,
    'com.example.testpki');
  return v.verifyAndDecodeNotification(readTrimmed(path.join(dir, 'jws', `${id}.jws`)));
}

test('custom link tokens: CREATED, ACTIVE_TOKEN_REMINDER, tokenType, tokenExpirationDate', async () => {
  const dir = testpki();
  const created = await decode(dir, 'notif-valid-external-purchase-token-created');
  assert.equal(created.subtype, lib.Subtype.CREATED);
  assert.equal(created.externalPurchaseToken.tokenType, lib.TokenType.ACQUISITION);
  assert.equal(created.externalPurchaseToken.tokenExpirationDate, 1764493200000);
  const reminder = await decode(dir, 'notif-valid-external-purchase-token-active-token-reminder');
  assert.equal(reminder.subtype, lib.Subtype.ACTIVE_TOKEN_REMINDER);
  assert.equal(reminder.subtype, 'ACTIVE_TOKEN_REMINDER');
  assert.equal(reminder.externalPurchaseToken.tokenType, lib.TokenType.SERVICES);
  const unknown = await decode(dir, 'notif-valid-external-purchase-token-unknown-token-type');
  assert.equal(unknown.externalPurchaseToken.tokenType, 'LINK_OUT');
});
