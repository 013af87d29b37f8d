'use strict';
// The client's timeoutMs is a deadline for the whole call (issue 35): an external signer still busy at the deadline is
// abandoned (its late answer dropped) and told the time it has. The deadline's waits and reads are the shared driver
// scenarios' (driver.test.js, Tests/driver/scenarios.json).

const test = require('node:test');
const assert = require('assert/strict');
const crypto = require('crypto');
const lib = require('..');

const KEY_ID = 'KEYID12345';
const ISSUER = '68f6f2a6-1a2b-4c3d-8e9f-0a1b2c3d4e5f';
const BUNDLE = 'com.example.signing';
const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const PUBLIC_PEM = publicKey.export({ type: 'spki', format: 'pem' });

test('timeoutMs 1000 and an 8 s signer: the call fails at its deadline, long before the signer answers, and sends nothing', async () => {
  let release;
  const gate = new Promise((r) => { release = r; });
  const told = [];
  let returned = false;
  // An 8 s signer: it answers when the test releases it (after the call), or after 8 s.
  const blocking = (message, digest, timeoutMs) => {
    told.push(timeoutMs);
    const eight = new Promise((r) => setTimeout(r, 8000).unref());
    return Promise.race([gate, eight]).then(() => {
      returned = true;
      return crypto.sign('sha256', message, { key: privateKey, dsaEncoding: 'der' });
    });
  };
  let sent = 0;
  class Client extends lib.AppStoreServerAPIClient {
    async makeFetchRequest() {
      sent++;
      throw new Error('nothing may be sent after the deadline');
    }
  }
  const client = new Client(new lib.ExternalSigner(blocking, PUBLIC_PEM), KEY_ID, ISSUER, BUNDLE,
    lib.Environment.SANDBOX, { timeoutMs: 1000 });
  const t0 = Date.now();
  try {
    await assert.rejects(client.getTransactionInfo('1'), (e) => {
      assert.ok(e instanceof lib.AppStoreServerError, e && e.stack);
      assert.deepEqual([e.libraryStatus, e.reason], ['TRANSPORT_ERROR', 'deadline_exceeded'], e.message);
      assert.match(e.message, /timeout of 1000 ms .*external signer did not answer/);
      return true;
    });
    const elapsed = Date.now() - t0;
    // Deterministic: the call ended while the signer was still busy (it is released only below).
    assert.equal(returned, false, 'the call waited for the signer');
    // The issue's acceptance check on the real clock: a call that waited for the signer takes 8 s (it is released only
    // after the call), one that did not about 1 s; the bound (7 s) sits below the signer's 8 s; the issue's 3 s was measured by hand (about 1 s).
    assert.ok(elapsed < 7000, `${elapsed} ms`); // below the 8 s signer, room for load (about 1 s measured)
    // Told the time left of the call's 1000 ms (less than its own 10 s timeout), minus what the first step took.
    assert.equal(told.length, 1);
    assert.ok(told[0] > 0 && told[0] <= 1000, `told ${told[0]} ms`);
    assert.equal(sent, 0);
  } finally {
    release();
    client.close();
  }
});
