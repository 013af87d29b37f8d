'use strict';
// Online (OCSP) checks from Node against the harness's real `openssl ocsp` responders
// (Tests/support/ocsp_harness.py): fetch is the default transport; the Promise call waits on a pool thread while
// the JS thread fetches, so the event loop keeps running; ...Sync refuses online checks instead of deadlocking.
const test = require('node:test');
const assert = require('assert/strict');
const dns = require('dns');
const fs = require('fs');
const lib = require('..');
const { startOcsp, readTrimmed } = require('./helpers.js');

let harness;
let setup;
let root;
test.before(async () => {
  harness = await startOcsp();
  setup = harness.setup;
  root = fs.readFileSync(setup.root);
});
test.after(async () => {
  if (harness) await harness.stop();
});

/** A fetch that counts the exchanges (the default transport uses it). */
function countingFetch() {
  const f = (url, init) => {
    f.count++;
    return fetch(url, init);
  };
  f.count = 0;
  return f;
}

function online(options = {}) {
  return new lib.SignedDataVerifier([root], true, lib.Environment.SANDBOX, setup.bundleId, undefined, options);
}

function jws(name, i = 0) {
  return readTrimmed(setup.cases[name].jws[i]);
}

async function counts() {
  return (await fetch(setup.controlUrl)).json();
}

async function outcome(promise) {
  try {
    await promise;
    return { status: 'OK' };
  } catch (e) {
    assert.ok(e instanceof lib.VerificationException, String(e && e.stack));
    return { status: e.libraryStatus, reason: e.reason, message: e.message, apple: e.status };
  }
}

test('every harness case online, with fetch as the transport', async (t) => {
  for (const [name, c] of Object.entries(setup.cases)) {
    await t.test(name, async () => {
      const e = c.expect;
      const f = countingFetch();
      const slow = name === 'responder_slow';
      const v = online({ fetch: f, ocspTimeoutMs: slow ? 2500 : 10000 });
      const before = await counts();
      const start = Date.now();
      const o = await outcome(v.verifyAndDecodeTransaction(jws(name)));
      const elapsed = Date.now() - start;
      const after = await counts();
      assert.equal(o.status, e.status, `${o.status}/${o.reason}: ${o.message}`);
      if (e.reason) assert.equal(o.reason, e.reason, o.message);
      for (const piece of e.messageContains || []) assert.ok(o.message.includes(piece), `message lacks ${piece}: ${o.message}`);
      assert.equal(f.count, e.requests, 'exchanges through fetch');
      assert.equal(after.total - before.total, e.responderRequests, 'requests at the responders');
      if (o.status !== 'OK') {
        // Apple's Node status for OCSP failures: transport trouble is retryable, a bad answer is FAILURE.
        const retryable = o.status === 'RETRYABLE_VERIFICATION_FAILURE';
        if (retryable) assert.equal(o.apple, lib.VerificationStatus.RETRYABLE_VERIFICATION_FAILURE);
      }
      // The reason (ocsp_timeout, above) shows the deadline fired; the bound is 12x the 2.5 s timeout (>= 4x the
      // slowest loaded run) and far below the relay's 600 s wait.
      if (slow) assert.ok(elapsed < 30000, `${elapsed} ms with a 2.5 s timeout (the relay waits 600 s)`);
      v.close();
    });
  }
});

test('every case offline: the outcome at signedDate, no exchange', async () => {
  const before = await counts();
  const v = new lib.SignedDataVerifier([root], false, lib.Environment.SANDBOX, setup.bundleId);
  for (const [name, c] of Object.entries(setup.cases)) {
    const o = await outcome(v.verifyAndDecodeTransaction(jws(name)));
    assert.equal(o.status, c.expect.offline.status, `${name}: ${o.reason} ${o.message}`);
    if (c.expect.offline.reason) assert.equal(o.reason, c.expect.offline.reason, name);
  }
  assert.equal((await counts()).total - before.total, 0);
});

test('the chain cache: a second verification of the chain makes no exchange', async () => {
  const f = countingFetch();
  const v = online({ fetch: f });
  await v.verifyAndDecodeTransaction(jws('good'));
  assert.equal(f.count, 2);
  await v.verifyAndDecodeTransaction(jws('good'));
  assert.equal(f.count, 2);
  assert.equal(v.cacheStats().hits, 1);
});

test('the event loop keeps running while a verification waits for OCSP', async () => {
  const v = online({ ocspTimeoutMs: 2500 });
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const start = Date.now();
  const o = await outcome(v.verifyAndDecodeTransaction(jws('responder_slow')));
  const elapsed = Date.now() - start;
  clearInterval(timer);
  assert.equal(o.reason, 'ocsp_timeout');
  assert.ok(elapsed >= 2400, `${elapsed} ms`);
  // >= 2.4 s of 10 ms ticks is 240 on an idle loop; a blocked loop ticks at most once when it is freed. 10 leaves a
  // 24x margin for a loaded machine.
  assert.ok(ticks >= 10, `${ticks} timer ticks in ${elapsed} ms: the event loop was blocked`);
});

test('...Sync refuses online checks at once (it cannot wait for fetch on this thread)', () => {
  const v = online();
  const start = Date.now();
  assert.throws(() => v.verifyAndDecodeTransactionSync(jws('good')), (e) => {
    assert.ok(e instanceof lib.AppStoreServerError);
    assert.equal(e.reason, 'online_checks_unavailable');
    assert.match(e.message, /Promise/);
    return true;
  });
  // A refusal takes microseconds; waiting for fetch here would hang. 5 s is >= 4x any loaded run.
  assert.ok(Date.now() - start < 5000);
});

test('many online verifications at once: a transport that needs the thread pool does not starve', async () => {
  // dns.lookup runs on the libuv pool, as fetch's DNS lookups do; verifications waiting on pool threads must leave
  // it a thread. Cache off: every verification makes its exchanges.
  let exchanges = 0;
  const v = online({
    chainCache: { maxEntries: 0, ttlSeconds: 0 },
    ocspTimeoutMs: 120000, // a starved pool would hold the verifications this long: far beyond the bound below
    transport: async (req) => {
      exchanges++;
      await dns.promises.lookup('localhost');
      const res = await fetch(req.url, { method: req.method, headers: req.headers, body: req.body });
      return { status: res.status, headers: [...res.headers], body: new Uint8Array(await res.arrayBuffer()) };
    },
  });
  const start = Date.now();
  const results = await Promise.all(Array.from({ length: 12 }, () => v.verifyAndDecodeTransaction(jws('good'))));
  assert.equal(results.length, 12);
  assert.equal(exchanges, 24);
  // About a second on an idle machine; 30 s is >= 4x a loaded run and far below the 120 s a starved pool would take.
  assert.ok(Date.now() - start < 30000, `${Date.now() - start} ms`);
});

test('a custom transport: its failures map to the library\'s reasons', async () => {
  const cases = [
    [async () => { throw Object.assign(new Error('t'), { name: 'TimeoutError' }); }, 'ocsp_timeout'],
    [async () => { throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }); }, 'ocsp_unreachable'],
    [async () => { throw new Error('boom'); }, 'ocsp_unreachable'],
    [() => { throw new Error('sync throw'); }, 'ocsp_unreachable'],
    [async () => ({ status: 503, body: 'unavailable' }), 'ocsp_http_error'],
    [async () => ({ status: 200, body: new Uint8Array([1, 2, 3]) }), 'ocsp_malformed'],
    [async () => ({ nonsense: true }), 'ocsp_unreachable'],
  ];
  for (const [transport, reason] of cases) {
    const v = online({ transport });
    const o = await outcome(v.verifyAndDecodeTransaction(jws('good')));
    assert.equal(o.reason, reason, `${transport}: ${o.message}`);
  }
});

test('a transport that never answers: the waiting thread gives up after the timeout', async () => {
  const v = online({ transport: () => new Promise(() => {}), ocspTimeoutMs: 300 });
  const start = Date.now();
  const o = await outcome(v.verifyAndDecodeTransaction(jws('good')));
  assert.equal(o.reason, 'ocsp_timeout');
  // The transport never answers, so only the timeout ends it; 100x the 300 ms timeout (>= 4x a loaded run).
  assert.ok(Date.now() - start < 30000);
});

test('a transport that answers after the waiting thread gave up: the late answer is dropped', async () => {
  let late;
  const v = online({
    ocspTimeoutMs: 200,
    // Answers only when the test says so, after the verification gave up (a timer could beat a slow timeout).
    transport: () => new Promise((resolve) => {
      late = () => resolve({ status: 200, body: new Uint8Array(10) });
    }),
  });
  const o = await outcome(v.verifyAndDecodeTransaction(jws('good')));
  assert.equal(o.reason, 'ocsp_timeout');
  assert.ok(late);
  late();
  await new Promise((r) => setTimeout(r, 100));
  const { liveExchanges } = require('../lib/native.js').stats();
  assert.ok(liveExchanges <= 1, `${liveExchanges} exchanges alive`);
});

