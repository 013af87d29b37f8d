'use strict';
// The Node workload of the leak check (Tests/support/leakcheck.py judges it; scripts/leak-check node runs the long
// form, test/memory.test.js the short one).
//
//   node --expose-gc test/support/leak-workload.js TESTPKI_DIR CALLS none|handles|malloc
//
// CALLS verifications as an application makes them: Sync and Promise, valid transactions, failures (error objects),
// notifications, and every 100th call a verifier made and dropped and an offer signature. At the start and after every
// thirtieth of the calls, after a collection and a turn of the event loop (finalizers run there), it prints
// "leak-sample CALLS LIVE_OBJECTS MALLOC_IN_USE". Self-test modes: `handles` keeps a verifier options handle per call
// (never freed), `malloc` keeps 1,024 bytes of native memory per call (Buffer.allocUnsafeSlow: Node's allocator).
const fs = require('fs');
const path = require('path');
const lib = require('../..');
const native = require('../../lib/native.js');

const [dir, callsArg, mode] = process.argv.slice(2);
const calls = Number(callsArg);
if (!['none', 'handles', 'malloc'].includes(mode) || !(calls > 0) || typeof global.gc !== 'function') {
  console.error('usage: node --expose-gc leak-workload.js TESTPKI_DIR CALLS none|handles|malloc');
  process.exit(2);
}
const BUNDLE = 'com.example.testpki';
const read = (name) => fs.readFileSync(path.join(dir, name), 'utf8').trim();
const root = fs.readFileSync(path.join(dir, 'root.der'));
const good = read('jws/tx-valid.jws');
const bad = read('jws/tx-bad-signature-bit-flip.jws');
const notification = read('jws/notif-valid-did-renew.jws');
const key = fs.readFileSync(path.join(dir, 'leaf_key.pem'), 'utf8'); // PKCS#8 P-256, as App Store Connect hands out

async function sample(done) {
  for (let i = 0; i < 3; i++) {
    global.gc();
    await new Promise((r) => setImmediate(r));
  }
  console.log(`leak-sample ${done} ${native.debug_live_objects()} ${native.debug_malloc_in_use()}`);
}

async function main() {
  const v = new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, BUNDLE);
  const kept = [];
  let failures = 0;
  await sample(0);
  for (let i = 1; i <= calls; i++) {
    const k = i % 10;
    try {
      if (k === 0) v.verifyAndDecodeTransactionSync(bad);
      else if (k === 5) await v.verifyAndDecodeNotification(notification);
      else if (k % 2) v.verifyAndDecodeTransactionSync(good);
      else await v.verifyAndDecodeTransaction(good);
    } catch (e) {
      if (!(e instanceof lib.VerificationException) || k !== 0) throw e;
      failures++;
    }
    if (i % 100 === 0) {
      new lib.SignedDataVerifier([root], true, lib.Environment.SANDBOX, 'b');
      new lib.PromotionalOfferV2SignatureCreator(key, 'KEYID', 'issuer', BUNDLE).createSignature('p', 'o', null);
    }
    if (mode === 'handles') kept.push(native.verifier_options_new());
    else if (mode === 'malloc') kept.push(Buffer.allocUnsafeSlow(1024).fill(1, 0, 1));
    if (Math.floor((i * 30) / calls) !== Math.floor(((i - 1) * 30) / calls)) await sample(i);
  }
  v.close();
  if (failures !== Math.floor(calls / 10)) throw new Error(`${failures} failures, ${Math.floor(calls / 10)} expected`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
