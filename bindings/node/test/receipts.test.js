'use strict';
// Receipts: app receipts signed by the project's own CA (Tests/support/receipts.py): verification with the exact
// expected fields or status and reason (Promise and Sync), and every transaction id.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { receiptFixtures, readTrimmed } = require('./helpers.js');

test('own-CA receipts: verify and extract', async (t) => {
  const dir = receiptFixtures();
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  assert.ok(manifest.cases.length >= 30, `${manifest.cases.length} cases`);
  const util = new lib.ReceiptUtility();
  for (const c of manifest.cases) {
    await t.test(c.id, async () => {
      const receipt = readTrimmed(path.join(dir, c.path));
      const verifier = new lib.ReceiptVerifier(c.verifier.roots.map((r) => fs.readFileSync(path.join(dir, r))), c.verifier.bundleId);
      const e = c.expect;
      let got;
      let error;
      try {
        got = await verifier.verify(receipt);
      } catch (err) {
        error = err;
      }
      let syncGot;
      let syncError;
      try {
        syncGot = verifier.verifySync(receipt);
      } catch (err) {
        syncError = err;
      }
      verifier.close();
      if (e.result === 'valid') {
        assert.equal(error, undefined, error && error.message);
        const { verification, ...fields } = got;
        assert.deepEqual(fields, e.json);
        assert.equal(verification.effectiveDateSource, e.effectiveDateSource);
        if (e.effectiveDate) assert.equal(verification.effectiveDate, e.effectiveDate);
        assert.deepEqual(syncGot, got);
      } else {
        assert.ok(error instanceof lib.AppStoreServerError, String(error));
        assert.equal(error.libraryStatus, e.status, error.message);
        assert.equal(error.reason, e.reason, error.message);
        assert.equal(syncError.reason, error.reason);
      }
      if (c.extract) {
        const ids = util.extractTransactionIdsFromAppReceipt(receipt);
        assert.equal(ids.firstTransactionId, c.extract.first);
        assert.deepEqual(ids.transactionIds, c.extract.transactionIds);
        assert.deepEqual(ids.originalTransactionIds, c.extract.originalTransactionIds);
        if (c.extract.cIdError) {
          assert.throws(() => util.extractTransactionIdFromAppReceipt(receipt),
            (x) => x.libraryStatus === c.extract.cIdError.status && x.reason === c.extract.cIdError.reason);
        } else {
          assert.equal(util.extractTransactionIdFromAppReceipt(receipt), c.extract.first);
        }
      }
    });
  }
});

test('ReceiptUtility: malformed receipts throw, the wrong kind says so', () => {
  const util = new lib.ReceiptUtility();
  assert.throws(() => util.extractTransactionIdFromAppReceipt('bm90IGEgcmVjZWlwdA=='),
    (e) => e instanceof lib.AppStoreServerError && e.libraryStatus === 'INVALID_RECEIPT');
  const tx = Buffer.from('{\n\t"purchase-info" = "' + Buffer.from('{\n\t"transaction-id" = "123";\n}').toString('base64') + '";\n}').toString('base64');
  assert.equal(util.extractTransactionIdFromTransactionReceipt(tx), '123');
  assert.equal(util.extractTransactionIdFromTransactionReceipt(Buffer.from('{}').toString('base64')), null);
});
