'use strict';
// Conformance: the 85 verify cases and 20 receipt cases of ../shared/conformance (real Apple data; SKIPPED loudly
// when absent), and the project's own PKI (Tests/support/testpki.py, 146 cases with exact status and reason).
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { CONFORMANCE, testpki, readTrimmed } = require('./helpers.js');
const { runManifest, verifyCases } = require('./manifest.js');

const SHARED_VERIFY_CASES = 85;
const SHARED_RECEIPT_CASES = 20;
const present = fs.existsSync(path.join(CONFORMANCE, 'manifest.json'));

if (!present) {
  const msg = `*** SKIPPED: ${CONFORMANCE}/manifest.json not found: the ${SHARED_VERIFY_CASES + SHARED_RECEIPT_CASES} ` +
    'real Apple conformance cases are NOT run ***';
  console.log(msg);
  test('shared conformance (real Apple data)', async (t) => {
    for (let i = 0; i < SHARED_VERIFY_CASES + SHARED_RECEIPT_CASES; i++) t.test(`case ${i + 1}`, { skip: msg }, () => {});
  });
} else {
  const manifest = JSON.parse(fs.readFileSync(path.join(CONFORMANCE, 'manifest.json'), 'utf8'));

  test('shared conformance: verify cases (real Apple data)', async (t) => {
    assert.equal(verifyCases(manifest).length, SHARED_VERIFY_CASES);
    await runManifest(t, CONFORMANCE, manifest);
  });

  test('shared conformance: receipt cases (real Apple data)', async (t) => {
    const cases = manifest.cases.filter((c) => c.operation.startsWith('extractTransactionId'));
    assert.equal(cases.length, SHARED_RECEIPT_CASES);
    const util = new lib.ReceiptUtility();
    for (const c of cases) {
      await t.test(c.id, () => {
        const text = readTrimmed(path.join(CONFORMANCE, c.path));
        const app = c.operation === 'extractTransactionIdFromAppReceipt';
        let value;
        let error;
        try {
          value = util[c.operation](text);
        } catch (e) {
          error = e;
        }
        const e = c.expect;
        if (e.result === 'value' && 'value' in e) assert.equal(value, e.value, error && error.message);
        else if (e.result === 'value') {
          if (e.python_java_node === null) assert.equal(value, null);
          else {
            assert.equal(value, e.python_java_node, error && error.message);
            assert.ok(e.any_of.includes(value));
          }
        } else if (e.result === 'error-or-null') {
          assert.ok(value === null || value === undefined, `never a value (got ${value})`);
          if (error) {
            assert.ok(error instanceof lib.AppStoreServerError, String(error));
            assert.equal(error.libraryStatus, 'INVALID_RECEIPT');
            assert.ok(['receipt_malformed', 'wrong_kind'].includes(error.reason), error.reason);
          }
        } else if (e.result.startsWith('null')) {
          assert.equal(error, undefined, error && error.message);
          assert.equal(value, null);
        } else {
          assert.fail(`unknown expectation ${e.result}`);
        }
        if (app && !error) {
          // Every id agrees with the first one.
          const ids = util.extractTransactionIdsFromAppReceipt(text);
          assert.equal(ids.firstTransactionId, value);
        }
      });
    }
  });
}

test('own PKI conformance (Tests/support/testpki.py)', async (t) => {
  const dir = testpki();
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  assert.ok(verifyCases(manifest).length >= 146, `${verifyCases(manifest).length} cases`);
  await runManifest(t, dir, manifest);
});
