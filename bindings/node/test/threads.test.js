'use strict';
// Concurrency: Promise verifications run on the libuv pool and really overlap (timestamps taken by the pool threads
// themselves: the trace of the addon's test build, build/Release/appstoreserver-test.node), the event loop keeps
// running meanwhile, and worker_threads each load the addon and share nothing but the library, also when a worker
// alone loads it and is terminated.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { Worker } = require('worker_threads');
const lib = require('..');
const native = require('../lib/native.js');
const { ENVIRONMENT_CODES } = require('../generated/spec.js');
const { PKG, testpki, readTrimmed } = require('./helpers.js');

const SHIPPED_ADDON = path.join(PKG, 'build', 'Release', 'appstoreserver.node');
const TEST_ADDON = path.join(PKG, 'build', 'Release', 'appstoreserver-test.node');
/** The addon's test build (src/trace.c compiled in), which run-tests makes (node scripts/build.js --test). */
function testAddon() {
  assert.ok(fs.existsSync(TEST_ADDON), `${TEST_ADDON} is missing: run ./run-tests (or node scripts/build.js --test)`);
  return require(TEST_ADDON);
}

let dir;
let root;
const pki = () => {
  if (!dir) {
    dir = testpki();
    root = fs.readFileSync(path.join(dir, 'root.der'));
  }
  return dir;
};

function verifier(options) {
  pki();
  return new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, 'com.example.testpki', undefined, options);
}

const CORES = require('os').availableParallelism();
test('two Promise verifications run at the same time on two pool threads',
  { skip: CORES < 2 ? `*** SKIPPED: ${CORES} core available: parallelism cannot be shown ***` : false }, async () => {
  // Cache off: every call validates the chain (~1-2 ms of CPU). The pool threads record wall-clock start/end and their
  // own CPU time. Two calls ran in parallel when, in one round, their CPU time adds up to clearly more than the wall
  // time the round spanned (one core cannot do that; a lock inside the library would serialise them to ratio 1).
  // The test build's own verifier (its handles are its own), made as lib/verifier.js makes one.
  const t = testAddon();
  const o = t.verifier_options_new();
  t.verifier_options_add_root(o, (pki(), root));
  t.verifier_options_set_bundle_id(o, 'com.example.testpki');
  t.verifier_options_set_environment(o, ENVIRONMENT_CODES[lib.Environment.SANDBOX]);
  t.verifier_options_set_chain_cache(o, 0, 0);
  const v = t.verifier_new(o);
  t.close(o);
  const jws = readTrimmed(path.join(pki(), 'jws', 'tx-valid.jws'));
  const parallel = [];
  let rounds = 0;
  // Rounds take milliseconds and stop after 5 parallel ones; a machine whose cores are busy with other suites may
  // leave no two free for a while, so keep trying for up to 120 s (a library lock fails every round, however long).
  const deadline = Date.now() + 120000;
  while (parallel.length < 5 && Date.now() < deadline) {
    rounds++;
    t.trace(true);
    const both = await Promise.all([t.async.verifier_verify_transaction(v, jws), t.async.verifier_verify_transaction(v, jws)]);
    const calls = t.trace(false).filter((c) => c.fn === 'verifier_verify_transaction');
    for (const json of both) assert.equal(JSON.parse(json).transactionId, '2000000912345678');
    assert.equal(calls.length, 2);
    const [a, b] = calls;
    assert.ok(a.end > a.start && b.end > b.start && a.cpu > 0 && b.cpu > 0);
    const span = Math.max(a.end, b.end) - Math.min(a.start, b.start);
    const ratio = (a.cpu + b.cpu) / span;
    if (a.thread !== b.thread && ratio > 1.3) parallel.push(ratio.toFixed(2));
  }
  assert.ok(parallel.length >= 5, `two calls used more than one core in only ${parallel.length} of ${rounds} rounds`);
  t.close(v);
});

test('the trace is in the test build only: the shipped addon has no trace symbols and no trace()', () => {
  assert.equal(native.trace, undefined);
  assert.equal(typeof testAddon().trace, 'function');
  const symbols = (file) => ['asb_js_trace', 'trace_ring'].filter((s) => fs.readFileSync(file).includes(s));
  assert.deepEqual(symbols(TEST_ADDON), ['asb_js_trace', 'trace_ring']); // the names are there when compiled in
  assert.deepEqual(symbols(SHIPPED_ADDON), []);
});

test('the event loop is not blocked by Promise verifications', async () => {
  const v = verifier({ chainCache: { maxEntries: 0, ttlSeconds: 0 } });
  const jws = readTrimmed(path.join(pki(), 'jws', 'tx-valid.jws'));
  let turns = 0;
  let running = true;
  const spin = () => {
    turns++;
    if (running) setImmediate(spin);
  };
  setImmediate(spin);
  const start = Date.now();
  for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 16 }, () => v.verifyAndDecodeTransaction(jws)));
  running = false;
  const elapsed = Date.now() - start;
  // Every completion is one turn at least; the loop also turned while the pool worked.
  assert.ok(turns > 160, `${turns} event loop turns during ${elapsed} ms of verification`);
});

test('worker_threads: each loads the addon, verifies and signs, nothing shared but the library', async () => {
  pki();
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const fs = require('fs');
    const lib = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const root = fs.readFileSync(workerData.dir + '/root.der');
      const v = new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, 'com.example.testpki');
      const jws = fs.readFileSync(workerData.dir + '/jws/tx-valid.jws', 'utf8').trim();
      let ok = 0;
      for (let i = 0; i < 200; i++) {
        const t = i % 2 ? v.verifyAndDecodeTransactionSync(jws) : await v.verifyAndDecodeTransaction(jws);
        if (t.transactionId === '2000000912345678') ok++;
      }
      let rejected = 0;
      try { await v.verifyAndDecodeNotification(jws); } catch (e) { if (e instanceof lib.VerificationException) rejected++; }
      v.close();
      parentPort.postMessage({ ok, rejected, version: lib.libraryVersion });
    })().catch((e) => { parentPort.postMessage({ error: String(e && e.stack) }); });
  `;
  const results = await Promise.all(Array.from({ length: 4 }, () => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { dir } });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  for (const r of results) {
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.ok, 200);
    assert.equal(r.rejected, 1);
    assert.equal(r.version, lib.libraryVersion);
  }
});

test('a worker that exits while its verifications are in flight does not take the process down', async () => {
  pki();
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const fs = require('fs');
    const lib = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const root = fs.readFileSync(workerData.dir + '/root.der');
    const v = new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, 'com.example.testpki',
      undefined, { chainCache: { maxEntries: 0, ttlSeconds: 0 } });
    const jws = fs.readFileSync(workerData.dir + '/jws/tx-valid.jws', 'utf8').trim();
    for (let i = 0; i < 50; i++) v.verifyAndDecodeTransaction(jws);
    parentPort.postMessage('started');
  `;
  for (let i = 0; i < 3; i++) {
    const w = new Worker(code, { eval: true, workerData: { dir } });
    await new Promise((resolve) => w.once('message', resolve));
    await w.terminate();
  }
  // Still working here.
  const v = verifier();
  const t = await v.verifyAndDecodeTransaction(readTrimmed(path.join(dir, 'jws', 'tx-valid.jws')));
  assert.equal(t.transactionId, '2000000912345678');
});

test('a worker that alone loads the package, verifies and is terminated, again and again: the process lives', () => {
  // In a child whose main thread never loads the addon: each worker's environment is the only one using it, so Node
  // unloads the addon when the worker goes. The addon and the library stay mapped (-z nodelete): the thread-exit
  // destructors the library's Swift runtime registered on the worker's thread must not point at unmapped code.
  pki();
  const child = `
    const { Worker } = require('worker_threads');
    const code = ${JSON.stringify(`
      const { parentPort, workerData } = require('worker_threads');
      const fs = require('fs');
      const lib = require(${JSON.stringify(PKG)});
      const v = new lib.SignedDataVerifier([fs.readFileSync(workerData.dir + '/root.der')], false,
        lib.Environment.SANDBOX, 'com.example.testpki');
      const jws = fs.readFileSync(workerData.dir + '/jws/tx-valid.jws', 'utf8').trim();
      v.verifyAndDecodeTransaction(jws).then((t) => parentPort.postMessage(t.transactionId + ' ' + v.verifyAndDecodeTransactionSync(jws).transactionId));
      setInterval(() => {}, 1000); // until terminated
    `)};
    (async () => {
      for (let i = 0; i < 6; i++) {
        const w = new Worker(code, { eval: true, workerData: { dir: ${JSON.stringify(dir)} } });
        const got = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
        if (got !== '2000000912345678 2000000912345678') throw new Error('worker ' + i + ': ' + got);
        await w.terminate();
      }
      if (Object.keys(require.cache).some((f) => f.startsWith(${JSON.stringify(PKG)}))) throw new Error('the main thread loaded it');
      console.log('terminated 6');
    })().catch((e) => { console.error(e); process.exit(2); });
  `;
  const run = spawnSync(process.execPath, ['-e', child], { encoding: 'utf8', timeout: 120000 });
  assert.equal(run.signal, null, `the child died of ${run.signal}: ${run.stderr}`);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), 'terminated 6');
  const flags = (file) => {
    const r = spawnSync('readelf', ['-d', file], { encoding: 'utf8' });
    return r.status === 0 ? /FLAGS_1.*NODELETE/.test(r.stdout) : null;
  };
  const addonFlag = flags(SHIPPED_ADDON);
  if (addonFlag !== null) assert.ok(addonFlag, 'the addon is linked with -z nodelete');
});

test('close() while Promise calls are in flight: they complete, later calls throw', async () => {
  const v = verifier({ chainCache: { maxEntries: 0, ttlSeconds: 0 } });
  const jws = readTrimmed(path.join(pki(), 'jws', 'tx-valid.jws'));
  const inflight = Array.from({ length: 8 }, () => v.verifyAndDecodeTransaction(jws));
  v.close();
  for (const t of await Promise.all(inflight)) assert.equal(t.transactionId, '2000000912345678');
  assert.throws(() => v.verifyAndDecodeTransactionSync(jws), /closed/);
  await assert.rejects(v.verifyAndDecodeTransaction(jws), /closed/);
  v.close();
});
