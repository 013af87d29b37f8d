'use strict';
// Hostile servers (Tests/support/hostile_http.py) against every Node transport, the API client's and the online
// (OCSP) checks': no redirect is followed, bodies are bounded by the library's limits while they are read (memory
// stays bounded), the timeout is a deadline for the whole exchange; and key material never appears in an error.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const util = require('util');
const { execFile } = require('child_process');
const { Readable } = require('stream');
const lib = require('..');
const { fetchTransport } = require('../lib/transport.js');
const { LIMITS } = require('../generated/spec.js');
const { MOCK, signingKeys, startHostile, startOcsp, readTrimmed } = require('./helpers.js');

const REDIRECTS = [301, 302, 303, 307, 308];
// Peak RSS a bounded read may add: the limit, a chunk, fetch's and the library's copies, and slack.
const RSS_HEADROOM_MB = 200;

let hostile;
let keyFile;
let key;
let ocsp;
test.before(async () => {
  keyFile = path.join(signingKeys(), 'p256.p8');
  key = fs.readFileSync(keyFile, 'utf8');
  [hostile, ocsp] = await Promise.all([startHostile(), startOcsp()]);
});
test.after(async () => {
  await Promise.all([hostile && hostile.stop(), ocsp && ocsp.stop()]);
});

function client(behaviour, options = {}) {
  return new lib.AppStoreServerAPIClient(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.LOCAL_TESTING,
    { baseUrl: hostile.url(behaviour), ...options });
}

/** An online verifier whose OCSP exchanges all go to the hostile behaviour, through the default transport. */
function onlineVerifier(behaviour, options = {}) {
  const f = (_, init) => {
    f.count++;
    return fetch(hostile.url(behaviour), init);
  };
  f.count = 0;
  const v = new lib.SignedDataVerifier([root()], true, lib.Environment.SANDBOX, ocsp.setup.bundleId, undefined,
    { fetch: f, ...options });
  return { v, f };
}

function root() {
  return fs.readFileSync(ocsp.setup.root);
}

function goodJws() {
  return readTrimmed(ocsp.setup.cases.good.jws[0]);
}

async function failure(promise) {
  try {
    const value = await promise;
    assert.fail(`resolved with ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    return e;
  }
}

// ---- redirects -------------------------------------------------------------------------------------------------

test('the API client follows no redirect: the 3xx itself reaches the library, the catcher gets nothing', async (t) => {
  for (const code of REDIRECTS) {
    const c = client(`redirect-${code}`);
    const calls = {
      'GET getTransactionInfo': () => c.getTransactionInfo('1'),
      'POST getNotificationHistory': () => c.getNotificationHistory(null, { startDate: 1, endDate: 2 }),
      'PUT setAppAccountToken': () => c.setAppAccountToken('1', { appAccountToken: '7E3FB20B-4CDB-47CC-936D-99D65F608138' }),
    };
    for (const [label, call] of Object.entries(calls)) {
      await t.test(`${code} ${label}`, async () => {
        const e = await failure(call());
        assert.ok(e instanceof lib.APIException, String(e && e.stack));
        assert.equal(e.httpStatusCode, code, e.message);
        assert.ok(e.message.includes(String(code)), e.message);
        // The library names the 3xx's Location: the header reached it.
        assert.ok(e.message.includes(`http://127.0.0.1:${hostile.catcherPort}/caught/inApps/`), e.message);
        assert.equal((await hostile.caught()).count, 0, 'a request reached the redirect target');
      });
    }
    c.close();
  }
});

test('an answer that came through a followed redirect is refused (a fetch or makeFetchRequest that follows)', async () => {
  const following = (url, init) => fetch(url, { ...init, redirect: 'follow' });
  const c = client('redirect-302', { fetch: following });
  const e = await failure(c.getTransactionInfo('1'));
  assert.ok(e instanceof lib.AppStoreServerError, String(e && e.stack));
  assert.equal(e.reason, 'transport_failed');
  assert.match(e.message, /redirect/);
  // That fetch reached the catcher (the client cannot stop a fetch it was given), but its answer is not used.
  const caught = (await hostile.caught()).count;
  assert.ok(caught >= 1);
  c.close();
  // (302: undici cannot follow a 307 with a byte body; a 302 turns the POST into a GET.)
  const { v } = onlineVerifier('redirect-302', { fetch: (url, init) => following(hostile.url('redirect-302'), init) });
  const ve = await failure(v.verifyAndDecodeTransaction(goodJws()));
  assert.ok(ve instanceof lib.VerificationException, String(ve && ve.stack));
  assert.equal(ve.reason, 'ocsp_unreachable', ve.message); // the transport reports FAILED
  assert.ok((await hostile.caught()).count > caught);
  v.close();
});

test('online checks follow no redirect', async (t) => {
  const before = (await hostile.caught()).count;
  for (const code of REDIRECTS) {
    await t.test(String(code), async () => {
      const { v, f } = onlineVerifier(`redirect-${code}`);
      const e = await failure(v.verifyAndDecodeTransaction(goodJws()));
      assert.ok(e instanceof lib.VerificationException, String(e && e.stack));
      assert.equal(e.libraryStatus, 'RETRYABLE_VERIFICATION_FAILURE', e.message);
      assert.equal(e.reason, 'ocsp_http_error', e.message);
      assert.ok(f.count >= 1);
      assert.equal((await hostile.caught()).count, before, 'an OCSP request reached the redirect target');
      v.close();
    });
  }
});

// ---- bounded bodies --------------------------------------------------------------------------------------------

/** Runs test/support/bounded-child.js; resolves to its JSON line. */
function child(...argv) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(__dirname, 'support', 'bounded-child.js'), ...argv],
      { timeout: 120000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`bounded-child.js ${argv[0]} ${argv[1]}: ${err.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').pop()));
      });
  });
}

for (const behaviour of ['huge-64', 'hugecl-64', 'gzip-1024']) {
  test(`the API client stops reading past APPSTORE_LIMIT_API_RESPONSE_BYTES: ${behaviour}, memory bounded`, async () => {
    const o = await child('api', hostile.url(behaviour), keyFile, MOCK.keyId, MOCK.issuerId, MOCK.bundleId);
    assert.equal(o.name, 'AppStoreServerError', JSON.stringify(o));
    assert.equal(o.libraryStatus, 'TRANSPORT_ERROR', o.message);
    assert.equal(o.reason, 'transport_failed', o.message);
    assert.ok(o.message.includes('APPSTORE_LIMIT_API_RESPONSE_BYTES') && o.message.includes(String(LIMITS.API_RESPONSE_BYTES)),
      o.message);
    assert.ok(o.after - o.before < RSS_HEADROOM_MB, `peak RSS ${o.before.toFixed(0)} MB -> ${o.after.toFixed(0)} MB`);
  });

  test(`online checks stop reading past APPSTORE_LIMIT_OCSP_RESPONSE_BYTES: ${behaviour}, memory bounded`, async () => {
    const o = await child('ocsp', hostile.url(behaviour), ocsp.setup.root, ocsp.setup.cases.good.jws[0], ocsp.setup.bundleId);
    assert.equal(o.name, 'VerificationException', JSON.stringify(o));
    assert.equal(o.libraryStatus, 'RETRYABLE_VERIFICATION_FAILURE', o.message);
    // The transport reports FAILED (no answer); the library says it could not reach a responder.
    assert.equal(o.reason, 'ocsp_unreachable', o.message);
    assert.ok(o.after - o.before < RSS_HEADROOM_MB, `peak RSS ${o.before.toFixed(0)} MB -> ${o.after.toFixed(0)} MB`);
  });
}

test('the OCSP transport\'s failure names the limit', async (t) => {
  const exchange = fetchTransport();
  for (const behaviour of ['huge-64', 'hugecl-64', 'gzip-1024']) {
    await t.test(behaviour, async () => {
      const e = await failure(exchange({ method: 'POST', url: hostile.url(behaviour), headers: {},
        body: Buffer.from('0'), timeoutMs: 60000 }));
      assert.match(e.message, /APPSTORE_LIMIT_OCSP_RESPONSE_BYTES/);
      assert.ok(e.message.includes(String(LIMITS.OCSP_RESPONSE_BYTES)), e.message);
    });
  }
});

test('bodies up to the limit are read whole', async () => {
  // The hostile server's huge-1 is 1 MiB: exactly the OCSP limit, far below the API's.
  const body = Buffer.from((await fetchTransport()({ method: 'GET', url: hostile.url('hugecl-1'), headers: {},
    body: null, timeoutMs: 30000 })).body);
  assert.equal(body.length, LIMITS.OCSP_RESPONSE_BYTES);
  const c = client('huge-1');
  const e = await failure(c.getTransactionInfo('1'));
  assert.equal(e.libraryStatus, 'INVALID_RESPONSE', e.message); // read whole, then judged by the library
  c.close();
});

test('node-fetch style answers (a Node stream as the body) are bounded too', async () => {
  let produced = 0;
  const endless = new Readable({
    read() {
      produced += 65536;
      this.push(Buffer.alloc(65536, 0x20));
    },
  });
  class NodeFetchStyle extends lib.AppStoreServerAPIClient {
    async makeFetchRequest() {
      return { status: 200, headers: { 'content-type': 'application/json' }, body: endless, redirected: false };
    }
  }
  const c = new NodeFetchStyle(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.LOCAL_TESTING);
  const e = await failure(c.getTransactionInfo('1'));
  assert.equal(e.reason, 'transport_failed', e.message);
  assert.match(e.message, /APPSTORE_LIMIT_API_RESPONSE_BYTES/);
  assert.ok(endless.destroyed, 'the stream was not destroyed');
  assert.ok(produced <= LIMITS.API_RESPONSE_BYTES + (1 << 20), `${produced} bytes produced`);
  c.close();
});

// ---- deadlines -------------------------------------------------------------------------------------------------

const TIMEOUT_MS = 1500;
// The drips last 600 s (a per-read timeout never fires, and a client waiting for the drip would take them all);
// the grace is >= 4x the slowest run seen on a loaded 2-core machine (under 7 s with a 1.5 s timeout) and still far
// below the drip. The timeout's reason is asserted too: the mechanism, not only the clock.
const GRACE_MS = 30000;

for (const behaviour of ['drip-200', 'dripall-200']) {
  test(`the API client's timeout is a deadline for the whole exchange: ${behaviour}`, async () => {
    const c = client(behaviour, { timeoutMs: TIMEOUT_MS });
    // The default makeFetchRequest, and an override in Apple's style that passes no timeout to its fetch.
    class AppleStyle extends lib.AppStoreServerAPIClient {
      makeFetchRequest(p, query, method, body, headers) {
        return fetch(this.urlBase + p, { method, body, headers, redirect: 'manual' });
      }
    }
    const apple = new AppleStyle(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.LOCAL_TESTING,
      { baseUrl: hostile.url(behaviour), timeoutMs: TIMEOUT_MS });
    for (const x of [c, apple]) {
      const start = Date.now();
      const e = await failure(x.getTransactionInfo('1'));
      const elapsed = Date.now() - start;
      assert.equal(e.reason, 'transport_timeout', e.message);
      assert.ok(elapsed < TIMEOUT_MS + GRACE_MS, `${elapsed} ms with a ${TIMEOUT_MS} ms timeout`);
      x.close();
    }
  });

  test(`the OCSP timeout is a deadline for the whole exchange: ${behaviour}`, async () => {
    const { v, f } = onlineVerifier(behaviour, { ocspTimeoutMs: TIMEOUT_MS });
    const start = Date.now();
    const e = await failure(v.verifyAndDecodeTransaction(goodJws()));
    const elapsed = Date.now() - start;
    assert.equal(e.reason, 'ocsp_timeout', e.message);
    assert.equal(f.count, 1, 'one exchange, then the verification gave up');
    assert.ok(elapsed < TIMEOUT_MS + GRACE_MS, `${elapsed} ms with a ${TIMEOUT_MS} ms timeout`);
    v.close();
    // The transport itself gives up at the deadline too (the waiting pool thread does anyway).
    const t0 = Date.now();
    const te = await failure(fetchTransport()({ method: 'POST', url: hostile.url(behaviour), headers: {},
      body: Buffer.from('0'), timeoutMs: TIMEOUT_MS }));
    assert.equal(te.name, 'TimeoutError', String(te));
    assert.ok(Date.now() - t0 < TIMEOUT_MS + GRACE_MS, `the transport took ${Date.now() - t0} ms`);
  });
}

// ---- key material ----------------------------------------------------------------------------------------------

test('a PEM key passed as any string argument never appears in an error', async (t) => {
  const lines = key.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('-----'));
  assert.ok(lines.length >= 2);
  // Whole lines, and the start of each (a message that cuts the value short still shows that), in any case.
  const pieces = [...lines, ...lines.map((l) => l.slice(0, 12))].map((p) => p.toLowerCase());
  const check = (label, e) => {
    assert.ok(e instanceof Error, `${label}: ${e}`);
    for (const text of [e.message, String(e), e.stack, util.inspect(e)]) {
      for (const p of pieces) assert.ok(!text.toLowerCase().includes(p), `${label}: the key shows in the error:\n${text}`);
    }
  };
  const down = 'http://127.0.0.1:1';
  const make = (over) => {
    const a = { key, keyId: MOCK.keyId, issuerId: MOCK.issuerId, bundleId: MOCK.bundleId,
      environment: lib.Environment.LOCAL_TESTING, options: { baseUrl: down }, ...over };
    return new lib.AppStoreServerAPIClient(a.key, a.keyId, a.issuerId, a.bundleId, a.environment, a.options);
  };
  const cases = {
    'options.baseUrl': () => make({ options: { baseUrl: key } }).getTransactionInfo('1'),
    'options.baseUrl (Production)': () => make({ environment: lib.Environment.PRODUCTION, options: { baseUrl: key } })
      .getTransactionInfo('1'),
    'options.sandboxBaseUrl': () => make({ environment: lib.Environment.PRODUCTION,
      options: { baseUrl: down, sandboxFallback: true, sandboxBaseUrl: key } }).getTransactionInfo('1'),
    'options.sandboxBaseUrl without the fallback': () => make({ options: { sandboxBaseUrl: key } }),
    keyId: () => make({ keyId: key }).getTransactionInfo('1'),
    issuerId: () => make({ issuerId: key }).getTransactionInfo('1'),
    bundleId: () => make({ bundleId: key }).getTransactionInfo('1'),
    environment: () => make({ environment: key }),
    'options.timeoutMs': () => make({ options: { baseUrl: down, timeoutMs: key } }),
    'options.fetch': () => make({ options: { baseUrl: down, fetch: key } }),
    'a path argument': () => make({}).getTransactionInfo(key),
    'a query argument': () => make({}).getTransactionHistory('1', null, { productIds: [key] }),
    'a body field': () => make({}).setAppAccountToken('1', { appAccountToken: key }),
    'a fetch error quoting the URL': () => make({ options: { baseUrl: down,
      fetch: async (url) => { throw new Error(`cannot send ${decodeURIComponent(url)}`); } } }).getTransactionInfo(key),
    'a wrongly typed argument': () => make({}).getTransactionInfo(Buffer.from(key)),
    'answer(method)': () => make({}).answer(key),
    'SignedDataVerifier bundleId': () => new lib.SignedDataVerifier([root()], false, lib.Environment.SANDBOX, key)
      .verifyAndDecodeTransaction(goodJws()),
    'SignedDataVerifier environment': () => new lib.SignedDataVerifier([root()], false, key, 'com.example.app'),
    'SignedDataVerifier jws': () => new lib.SignedDataVerifier([root()], false, lib.Environment.SANDBOX, 'com.example.app')
      .verifyAndDecodeTransaction(key),
    'SignedDataVerifier jws (Sync)': () => new lib.SignedDataVerifier([root()], false, lib.Environment.SANDBOX,
      'com.example.app').verifyAndDecodeTransactionSync(key),
    'PromotionalOfferSignatureCreator keyId': () => new lib.PromotionalOfferSignatureCreator(key, key, 'com.example.app')
      .createSignature('product', 'offer', 'user', '9C7C1CE7-B4F6-4BB5-8F58-1A0F7E3C4E2F', 1),
    'PromotionalOfferSignatureCreator nonce': () => new lib.PromotionalOfferSignatureCreator(key, MOCK.keyId,
      'com.example.app').createSignature('product', 'offer', 'user', key, 1),
  };
  for (const [label, call] of Object.entries(cases)) {
    await t.test(label, async () => {
      let e = null;
      try {
        await call();
      } catch (err) {
        e = err;
      }
      if (e === null) return; // accepted: nothing to show
      check(label, e);
    });
  }
});
