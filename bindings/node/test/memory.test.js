'use strict';
// 100,000 verify calls (Sync and Promise, successes and failures) and thousands of handles made and dropped, with
// flat RSS: nothing the binding allocates per call survives it.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');
const lib = require('..');
const native = require('../lib/native.js');
const { testpki, readTrimmed } = require('./helpers.js');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

async function settle() {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

function rssMb() {
  return process.memoryUsage().rss / 1048576;
}

test("100,000 verify calls with flat RSS", async (t) => {
  const dir = testpki();
  const v = new lib.SignedDataVerifier([fs.readFileSync(path.join(dir, 'root.der'))], false, lib.Environment.SANDBOX,
    'com.example.testpki');
  const good = readTrimmed(path.join(dir, 'jws', 'tx-valid.jws'));
  const bad = readTrimmed(path.join(dir, 'jws', 'tx-bad-signature-bit-flip.jws'));
  let ok = 0;
  let failed = 0;
  async function batch(n) {
    for (let i = 0; i < n; i += 100) {
      for (let k = 0; k < 50; k++) {
        try {
          v.verifyAndDecodeTransactionSync(k % 10 === 0 ? bad : good);
          ok++;
        } catch (e) {
          if (!(e instanceof lib.VerificationException)) throw e;
          failed++;
        }
      }
      const results = await Promise.allSettled(Array.from({ length: 50 },
        (_, k) => v.verifyAndDecodeTransaction(k % 10 === 0 ? bad : good)));
      for (const r of results) (r.status === 'fulfilled' ? ok++ : failed++);
    }
  }
  await batch(20000); // warm up: JIT, allocator arenas, V8 heap sizing
  await settle();
  const base = rssMb();
  const handlesBefore = native.stats().liveHandles;
  await batch(80000);
  await settle();
  const end = rssMb();
  assert.equal(ok + failed, 100000);
  assert.equal(failed, 10000);
  assert.ok(end - base < 25, `RSS grew from ${base.toFixed(1)} MB to ${end.toFixed(1)} MB over 80,000 calls`);
  assert.ok(native.stats().liveHandles - handlesBefore < 100, 'the error handles of the failures were released');
  t.diagnostic(`memory: RSS ${base.toFixed(1)} MB after 20,000 calls, ${end.toFixed(1)} MB after 100,000`);
  v.close();
});

test('handles made and dropped are released by their finalizers (and close() releases at once)', async () => {
  const dir = testpki();
  const root = fs.readFileSync(path.join(dir, 'root.der'));
  await settle();
  const before = native.stats().liveHandles;
  const base = rssMb();
  for (let i = 0; i < 3000; i++) {
    const v = new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, 'com.example.testpki');
    if (i % 2) v.close();
  }
  await settle();
  await settle();
  const after = native.stats().liveHandles;
  assert.ok(after - before < 50, `${after - before} handles still alive after 3000 verifiers were dropped`);
  assert.ok(rssMb() - base < 25, `RSS grew by ${(rssMb() - base).toFixed(1)} MB`);
});
