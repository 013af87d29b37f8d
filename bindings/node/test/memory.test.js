'use strict';
// Memory over many calls, judged by Tests/support/leakcheck.py on the library's live objects and malloc's in-use bytes
// (never the resident size: V8's heap sizing and the JIT move it without a leak): the short form of
// `scripts/leak-check node` (test/support/leak-workload.js); scripts/test-all runs its self-test. And handles made and
// dropped are released by their finalizers.
const test = require('node:test');
const assert = require('assert/strict');
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');
const lib = require('..');
const native = require('../lib/native.js');
const { testpki, SUPPORT } = require('./helpers.js');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

async function settle() {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

test('50,000 calls leak nothing (live objects and malloc flat)', (t) => {
  const r = spawnSync('python3', [path.join(SUPPORT, 'leakcheck.py'), '--lang', 'node', '--calls', '50000', '--',
    process.execPath, '--expose-gc', path.join(__dirname, 'support', 'leak-workload.js'), testpki()],
  { encoding: 'utf8', maxBuffer: 1 << 24 });
  t.diagnostic(r.stdout.trim());
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /: flat$/m);
});

test('handles made and dropped are released by their finalizers (and close() releases at once)', async () => {
  const dir = testpki();
  const root = fs.readFileSync(path.join(dir, 'root.der'));
  await settle();
  const before = native.stats().liveHandles;
  for (let i = 0; i < 3000; i++) {
    const v = new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, 'com.example.testpki');
    if (i % 2) v.close();
  }
  await settle();
  await settle();
  const after = native.stats().liveHandles;
  assert.ok(after - before < 50, `${after - before} handles still alive after 3000 verifiers were dropped`);
});
