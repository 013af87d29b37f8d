'use strict';
// The production options beyond Apple's library, against two mock App Store servers: the Sandbox fallback of lookups
// (a mock playing a Production that knows no id, a normal one playing Sandbox) and the client-side rate limit (the
// mock records when each request arrived). The same checks as Tests/capi/api_test.c and
// Tests/AppStoreServerTests/ProductionTrafficTests.swift, through the Node client's own fetch loop.
const test = require('node:test');
const assert = require('assert/strict');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { REPO, SUPPORT, MOCK, startMock, signingKeys, methodArgs, mockArrivals } = require('./helpers.js');

const E = lib.Environment;
const CASES = JSON.parse(fs.readFileSync(path.join(SUPPORT, 'api_cases.json'), 'utf8')).cases;
const SPEC_ENDPOINTS = JSON.parse(fs.readFileSync(path.join(REPO, 'spec', 'endpoints.json'), 'utf8')).endpoints;
const LOOKUPS = SPEC_ENDPOINTS.filter((e) => e.sandboxFallback).map((e) => e.name);
const NEITHER = 'Production answered transactionIdNotFound (4040010); then Sandbox: ';
const NEITHER_401 = 'Production answered HTTP 401 (an app never released there); then Sandbox: ';

/** Apple's published Production limit of an endpoint: the limit/s column of docs/endpoints.md. */
function publishedLimit(endpoint) {
  const doc = fs.readFileSync(path.join(REPO, 'docs', 'endpoints.md'), 'utf8');
  const row = doc.split('\n').find((l) => l.startsWith(`| \`${endpoint}\``));
  assert.ok(row, `docs/endpoints.md has no row for ${endpoint}`);
  const cells = row.split('|').map((c) => c.trim());
  const limit = Number(cells[cells.length - 2]);
  assert.ok(limit > 0, `docs/endpoints.md: ${endpoint}: limit/s ${cells[cells.length - 2]}`);
  return limit;
}

/** A transaction id the normal mock answers 200 on every request (a scenario with no failures), unique per call. */
const freshId = (label) => `flaky429-0-${label}${crypto.randomUUID().replace(/-/g, '')}`;

let production; // knows no id: every lookup answers 404 4040010
let unreleased; // the Production of an app never released there: every lookup answers HTTP 401, not JSON
let sandbox; // the normal mock
let key;
test.before(async () => {
  key = fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
  [production, unreleased, sandbox] = await Promise.all([startMock({ notFoundLookups: true }),
    startMock({ unauthorizedLookups: true }), startMock()]);
});
test.after(async () => {
  await Promise.all([production, unreleased, sandbox].filter(Boolean).map((m) => m.stop()));
});

function client(environment, options) {
  return new lib.AppStoreServerAPIClient(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, environment,
    { timeoutMs: 10000, ...options });
}
const withFallback = (options = {}) => client(E.PRODUCTION, { baseUrl: production.url, sandboxFallback: true,
  sandboxBaseUrl: sandbox.url, ...options });

test('the spec marks the six lookups for the Sandbox fallback', () => {
  assert.deepEqual(LOOKUPS.sort(), ['getAllSubscriptionStatuses', 'getAppTransactionInfo', 'getRefundHistory',
    'getTransactionHistory', 'getTransactionHistoryV1', 'getTransactionInfo']);
});

test('Sandbox fallback: every lookup Production does not know is answered by Sandbox, and answer() says so', async (t) => {
  const c = withFallback();
  const plain = client(E.PRODUCTION, { baseUrl: production.url });
  for (const endpoint of LOOKUPS) {
    await t.test(endpoint, async () => {
      const cs = CASES.find((x) => x.endpoint === endpoint);
      const { method, argv } = methodArgs(endpoint, cs.params);
      const want = cs.pages ? cs.pages[0] : cs.response;
      const before = Object.values(await mockArrivals(production.url)).flat().length;
      const { value, environment } = await c.answer(method, ...argv);
      assert.equal(environment, E.SANDBOX);
      assert.deepEqual(value, want);
      const after = Object.values(await mockArrivals(production.url)).flat().length;
      assert.equal(after - before, 1, 'Production was asked first, once');
      // Apple's call shape is unchanged: the value alone.
      assert.deepEqual(await c[method](...argv), want);
      // Without the option Production's 404 is the answer.
      await assert.rejects(plain[method](...argv), (e) => e instanceof lib.APIException && e.httpStatusCode === 404 &&
        e.apiError === 4040010 && !e.message.startsWith(NEITHER));
    });
  }
  c.close();
  plain.close();
});

test('Sandbox fallback: every lookup Production refuses with HTTP 401 (an app never released there) is answered by Sandbox', async (t) => {
  const c = client(E.PRODUCTION, { baseUrl: unreleased.url, sandboxFallback: true, sandboxBaseUrl: sandbox.url });
  const plain = client(E.PRODUCTION, { baseUrl: unreleased.url });
  for (const endpoint of LOOKUPS) {
    await t.test(endpoint, async () => {
      const cs = CASES.find((x) => x.endpoint === endpoint);
      const { method, argv } = methodArgs(endpoint, cs.params);
      const want = cs.pages ? cs.pages[0] : cs.response;
      const before = Object.values(await mockArrivals(unreleased.url)).flat().length;
      const { value, environment } = await c.answer(method, ...argv);
      assert.equal(environment, E.SANDBOX);
      assert.deepEqual(value, want);
      const after = Object.values(await mockArrivals(unreleased.url)).flat().length;
      assert.equal(after - before, 1, 'Production was asked first, once');
      assert.deepEqual(await c[method](...argv), want);
      // Without the option Production's 401 is the answer: no error payload, the answer's headers kept.
      await assert.rejects(plain[method](...argv), (e) => {
        assert.ok(e instanceof lib.APIException, String(e));
        assert.equal(e.httpStatusCode, 401);
        assert.equal(e.apiError, null);
        assert.equal(e.errorMessage, null);
        assert.equal(e.reason, 'http_error');
        assert.equal(e.headers['x-apple-request-id'], 'mock-401');
        assert.ok(!e.message.startsWith(NEITHER_401), e.message);
        return true;
      });
    });
  }
  // Not a lookup: Production's answer stays final, nothing is asked of Sandbox.
  const before = await mockArrivals(sandbox.url);
  const ext = CASES.find((x) => x.endpoint === 'extendSubscriptionRenewalDate');
  const { method, argv } = methodArgs('extendSubscriptionRenewalDate', ext.params);
  assert.deepEqual(await c.answer(method, ...argv), { value: ext.response, environment: E.PRODUCTION });
  assert.deepEqual(await mockArrivals(sandbox.url), before);
  c.close();
  plain.close();
});

test('Sandbox fallback: after a Production 401, a Sandbox error says what Production answered', async () => {
  const c = client(E.PRODUCTION, { baseUrl: unreleased.url, sandboxFallback: true, sandboxBaseUrl: sandbox.url });
  await assert.rejects(c.getTransactionInfo('error-404-4040010'), (e) => {
    assert.ok(e instanceof lib.APIException, String(e));
    assert.equal(e.httpStatusCode, 404);
    assert.equal(e.apiError, 4040010);
    assert.ok(e.message.startsWith(NEITHER_401), e.message);
    return true;
  });
  c.close();
});

test('Sandbox fallback: Production that answers, and endpoints that are not lookups, stay in Production', async () => {
  const known = client(E.PRODUCTION, { baseUrl: sandbox.url, sandboxFallback: true, sandboxBaseUrl: production.url });
  const cs = CASES.find((x) => x.endpoint === 'getTransactionInfo');
  assert.deepEqual(await known.answer('getTransactionInfo', cs.params.transactionId),
    { value: cs.response, environment: E.PRODUCTION });
  // Not a lookup: the not-found Production mock serves it normally; no Sandbox request is made.
  const c = withFallback();
  const ext = CASES.find((x) => x.endpoint === 'extendSubscriptionRenewalDate');
  const { method, argv } = methodArgs('extendSubscriptionRenewalDate', ext.params);
  const before = await mockArrivals(sandbox.url);
  assert.deepEqual(await c.answer(method, ...argv), { value: ext.response, environment: E.PRODUCTION });
  assert.deepEqual(await mockArrivals(sandbox.url), before);
});

test('Sandbox fallback: a 4040010 on a non-lookup, or another error on a lookup, is final', async () => {
  // A fetch playing both environments: Production answers every request 404 4040010 (or the code asked for).
  const sent = [];
  let productionCode = 4040010;
  const fetchStub = async (url) => {
    sent.push(url);
    if (url.startsWith('http://production.test')) {
      return new Response(JSON.stringify({ errorCode: productionCode, errorMessage: 'p' }), { status: 404 });
    }
    return new Response(JSON.stringify({ signedTransactionInfo: 'sandbox' }), { status: 200 });
  };
  const c = client(E.PRODUCTION, { baseUrl: 'http://production.test', sandboxFallback: true,
    sandboxBaseUrl: 'http://sandbox.test', fetch: fetchStub });
  await assert.rejects(c.lookUpOrderId('W002182'), (e) => e instanceof lib.APIException && e.apiError === 4040010);
  await assert.rejects(c.extendSubscriptionRenewalDate('1', { extendByDays: 1, extendReasonCode: 1, requestIdentifier: 'r' }),
    (e) => e instanceof lib.APIException && e.apiError === 4040010);
  assert.ok(sent.every((u) => u.startsWith('http://production.test')), sent.join(', '));
  productionCode = 4040001; // invalidTransactionId: the id is wrong, not unknown to Production
  await assert.rejects(c.getTransactionInfo('1'), (e) => e instanceof lib.APIException && e.apiError === 4040001);
  assert.ok(sent.every((u) => u.startsWith('http://production.test')), sent.join(', '));
  productionCode = 4040010;
  assert.deepEqual(await c.answer('getTransactionInfo', '1'), { value: { signedTransactionInfo: 'sandbox' },
    environment: E.SANDBOX });
  assert.deepEqual(sent.slice(-2), ['http://production.test/inApps/v1/transactions/1',
    'http://sandbox.test/inApps/v1/transactions/1']);
});

test('Sandbox fallback: after Production\'s retries, with retries of its own, through makeFetchRequest', async () => {
  // Production: 429 then 4040010; Sandbox: 429 then 200. With two retries allowed, four requests in that order.
  const seen = [];
  const script = { Production: [429, 404], Sandbox: [429, 200] };
  class Stub extends lib.AppStoreServerAPIClient {
    async makeFetchRequest(p, query, method, body, headers, request) {
      seen.push(`${request.environment} ${request.url} ${p}`);
      const status = script[request.environment].shift();
      if (status === 200) return new Response('{"signedTransactionInfo":"s"}', { status });
      const code = status === 429 ? 4290000 : 4040010;
      return new Response(JSON.stringify({ errorCode: code, errorMessage: 'x' }), { status });
    }
  }
  const c = new Stub(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, E.PRODUCTION, { baseUrl: 'http://production.test',
    sandboxFallback: true, sandboxBaseUrl: 'http://sandbox.test/', maxRetries: 2, initialBackoffMs: 1, maxBackoffMs: 5 });
  assert.deepEqual(await c.answer('getTransactionInfo', '7'), { value: { signedTransactionInfo: 's' }, environment: E.SANDBOX });
  assert.deepEqual(seen, [
    'Production http://production.test/inApps/v1/transactions/7 /inApps/v1/transactions/7',
    'Production http://production.test/inApps/v1/transactions/7 /inApps/v1/transactions/7',
    'Sandbox http://sandbox.test/inApps/v1/transactions/7 /inApps/v1/transactions/7',
    'Sandbox http://sandbox.test/inApps/v1/transactions/7 /inApps/v1/transactions/7',
  ]);
});

test('Sandbox fallback: when Sandbox does not know the id either, its error says both', async () => {
  // The normal mock's error scenario answers 4040010 in both roles.
  const c = client(E.PRODUCTION, { baseUrl: sandbox.url, sandboxFallback: true, sandboxBaseUrl: sandbox.url });
  await assert.rejects(c.getTransactionInfo('error-404-4040010'), (e) => {
    assert.ok(e instanceof lib.APIException, String(e));
    assert.equal(e.apiError, 4040010);
    assert.ok(e.message.startsWith(NEITHER), e.message);
    return true;
  });
});

test('Sandbox fallback: later pages go to the environment that answered the first', async () => {
  const c = withFallback();
  const cs = CASES.find((x) => x.endpoint === 'getTransactionHistory');
  const { argv } = methodArgs('getTransactionHistory', cs.params);
  const pagesArgs = [argv[0], argv[2], argv[3]]; // no revision
  const count = async (url) => (await mockArrivals(url))[`GET /inApps/v2/history/${cs.params.anyTransactionId}`]?.length || 0;
  const before = await count(production.url);
  const pages = [];
  for await (const page of c.answer('getTransactionHistoryPages', ...pagesArgs)) pages.push(page);
  assert.ok(cs.pages.length > 1);
  assert.deepEqual(pages, cs.pages.map((value) => ({ value, environment: E.SANDBOX })));
  assert.equal(await count(production.url) - before, 1, 'Production was asked for the first page only');
  // The plain iterator (Apple-style values) follows the same path.
  const values = [];
  for await (const page of c.getTransactionHistoryPages(...pagesArgs)) values.push(page);
  assert.deepEqual(values, cs.pages);
  assert.equal(await count(production.url) - before, 2);
});

test('Sandbox fallback: only Production clients; option types', () => {
  assert.throws(() => client(E.SANDBOX, { sandboxFallback: true }), (e) => e instanceof lib.AppStoreServerError &&
    e.libraryStatus === 'CONFIGURATION_ERROR' && /Production/.test(e.message));
  assert.throws(() => client(E.PRODUCTION, { sandboxFallback: 'yes' }), (e) => e instanceof TypeError &&
    /options\.sandboxFallback must be a boolean/.test(e.message));
  assert.throws(() => client(E.PRODUCTION, { sandboxFallback: true, sandboxBaseUrl: 5 }), (e) => e instanceof TypeError &&
    /options\.sandboxBaseUrl must be a string/.test(e.message));
  assert.throws(() => client(E.PRODUCTION, { sandboxBaseUrl: sandbox.url }), (e) => e instanceof TypeError &&
    /sandboxBaseUrl is used only by the Sandbox fallback/.test(e.message));
  assert.throws(() => client(E.PRODUCTION, { sandboxFallback: true, sandboxBaseUrl: 'ftp://x' }),
    (e) => e instanceof lib.AppStoreServerError && /ftp:\/\/x/.test(e.message));
});

test('answer(): endpoint methods only', () => {
  const c = client(E.SANDBOX, { baseUrl: sandbox.url });
  assert.throws(() => c.answer('close'), (e) => e instanceof TypeError && /answer: method must be the name of an endpoint method/.test(e.message));
  assert.throws(() => c.answer(5), TypeError);
});

test('rate limit: requests to one endpoint arrive spaced per Apple\'s Sandbox limit', async () => {
  const perSecond = publishedLimit('getTransactionInfo') / 10; // Sandbox: a tenth
  assert.ok(Number.isInteger(perSecond) && perSecond >= 1, `Sandbox limit ${perSecond}/s`);
  // The moments the core let each request go, on this process's clock (a loaded machine delays a request's arrival
  // at the mock, not the slot it was given).
  const sent = [];
  class Recorded extends lib.AppStoreServerAPIClient {
    makeFetchRequest(...argv) {
      sent.push(performance.now());
      return super.makeFetchRequest(...argv);
    }
  }
  const c = new Recorded(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, E.SANDBOX,
    { timeoutMs: 10000, baseUrl: sandbox.url, rateLimit: { maxWaitMs: 30000 } });
  const id = freshId('spaced');
  const n = 2 * perSecond + 1; // three windows: the last request waits two seconds
  let ticks = 0; // the waits are timers: the event loop keeps running meanwhile
  const ticker = setInterval(() => ticks++, 50);
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: n }, () => c.getTransactionInfo(id))).finally(() => clearInterval(ticker));
  const elapsed = performance.now() - t0;
  // >= 2 s of 50 ms ticks is 40 on an idle loop: 10 is a 4x margin (a blocked loop ticks at most once per wait).
  assert.ok(ticks >= 10, `the event loop ticked ${ticks} times in ${elapsed.toFixed(0)} ms`);
  assert.ok(results.every((r) => /^attempt-\d+$/.test(r.signedTransactionInfo)), JSON.stringify(results));
  assert.ok(elapsed >= 1950, `${n} requests at ${perSecond}/s took ${elapsed.toFixed(0)} ms (expected 2 s)`);
  const times = (await mockArrivals(sandbox.url))[`GET /inApps/v1/transactions/${id}`].sort((a, b) => a - b);
  assert.equal(times.length, n);
  // Slots are a second apart on the client's clock. makeFetchRequest runs a moment after the core gave the slot (one
  // native call's return: ~1 ms, tens on a loaded machine): 250 ms of slack is >= 4x that.
  assert.equal(sent.length, n);
  sent.sort((a, b) => a - b);
  for (let i = 0; i + perSecond < n; i++) {
    const gap = sent[i + perSecond] - sent[i];
    assert.ok(gap >= 750, `requests ${i + 1} and ${i + 1 + perSecond} were sent ${gap.toFixed(0)} ms apart (limit ${perSecond}/s)`);
  }
});

test('rate limit: maxWaitMs 0 fails fast with local_rate_limit and sends nothing', async () => {
  const perSecond = publishedLimit('getTransactionInfo') / 10;
  // Apple's Sandbox limit: one more than it in the same second is refused.
  const c = client(E.SANDBOX, { baseUrl: sandbox.url, rateLimit: { maxWaitMs: 0 } });
  const id = freshId('burst');
  const results = await Promise.allSettled(Array.from({ length: perSecond + 1 }, () => c.getTransactionInfo(id)));
  const refused = results.filter((r) => r.status === 'rejected');
  assert.equal(refused.length, 1, JSON.stringify(results.map((r) => r.status)));
  assert.ok(refused[0].reason instanceof lib.AppStoreServerError, String(refused[0].reason));
  assert.equal(refused[0].reason.libraryStatus, 'RATE_LIMITED');
  assert.equal(refused[0].reason.reason, 'local_rate_limit');
  assert.equal((await mockArrivals(sandbox.url))[`GET /inApps/v1/transactions/${id}`].length, perSecond);

  // At a 1 % share one request per 20 s: the second fails at once and names the next slot.
  const slow = client(E.SANDBOX, { baseUrl: sandbox.url, rateLimit: { maxWaitMs: 0, sharePercent: 1 } });
  const id2 = freshId('failfast');
  await slow.getTransactionInfo(id2);
  const t0 = Date.now();
  await assert.rejects(slow.getTransactionInfo(id2), (e) => {
    assert.equal(e.reason, 'local_rate_limit', String(e));
    assert.ok(e.retryAtMs > t0 && e.retryAtMs <= t0 + 20000, `retryAtMs ${e.retryAtMs}, now ${t0}`);
    return true;
  });
  // Waiting would take up to 20 s (the next slot); a refusal takes milliseconds: 5 s is >= 4x any loaded run.
  assert.ok(Date.now() - t0 < 5000, 'refused without waiting');
  assert.equal((await mockArrivals(sandbox.url))[`GET /inApps/v1/transactions/${id2}`].length, 1);
});

test('rate limit: retries take a slot too', async () => {
  // One 429 then 200; the retry is allowed but its slot (one per 20 s) is not free.
  const c = client(E.SANDBOX, { baseUrl: sandbox.url, maxRetries: 1, initialBackoffMs: 1,
    rateLimit: { maxWaitMs: 0, sharePercent: 1 } });
  const id = `flaky429-1-retry${crypto.randomUUID().replace(/-/g, '')}`;
  await assert.rejects(c.getTransactionInfo(id), (e) => e.reason === 'local_rate_limit');
  assert.equal((await mockArrivals(sandbox.url))[`GET /inApps/v1/transactions/${id}`].length, 1);
  const unlimited = client(E.SANDBOX, { baseUrl: sandbox.url, maxRetries: 1, initialBackoffMs: 1 });
  assert.deepEqual(await unlimited.getTransactionInfo(id), { signedTransactionInfo: 'attempt-2' });
});

test('rate limit: fallback requests take a Sandbox slot', async () => {
  // 4 %: Production 2 per second, Sandbox one per 5 s. The second lookup gets Production's slot, not Sandbox's.
  const c = withFallback({ rateLimit: { maxWaitMs: 0, sharePercent: 4 } });
  const id = freshId('fallback');
  assert.deepEqual(await c.answer('getTransactionInfo', id), { value: { signedTransactionInfo: 'attempt-1' },
    environment: E.SANDBOX });
  await assert.rejects(c.getTransactionInfo(id), (e) => {
    assert.equal(e.reason, 'local_rate_limit', String(e));
    assert.ok(e.message.startsWith(NEITHER), e.message);
    return true;
  });
  const key = `GET /inApps/v1/transactions/${id}`;
  assert.equal((await mockArrivals(production.url))[key].length, 2);
  assert.equal((await mockArrivals(sandbox.url))[key].length, 1);
});

test('rate limit: option types', () => {
  const bad = [
    [{ rateLimit: 'on' }, TypeError, /options\.rateLimit must be an object/],
    [{ rateLimit: {} }, TypeError, /options\.rateLimit\.maxWaitMs must be an integer/],
    [{ rateLimit: { maxWaitMs: '5' } }, TypeError, /options\.rateLimit\.maxWaitMs must be an integer/],
    [{ rateLimit: { maxWaitMs: 5, sharePercent: 0.5 } }, TypeError, /options\.rateLimit\.sharePercent must be an integer/],
    [{ rateLimit: { maxWaitMs: 5, share: 50 } }, TypeError, /options\.rateLimit\.share is not an option/],
    [{ rateLimit: { maxWaitMs: -1 } }, RangeError, /maxWaitMs must be 0 to 4294967295/],
    [{ rateLimit: { maxWaitMs: 5, sharePercent: 101 } }, RangeError, /sharePercent must be 1 to 100/],
  ];
  for (const [options, cls, re] of bad) {
    assert.throws(() => client(E.SANDBOX, options), (e) => e instanceof cls && re.test(e.message), JSON.stringify(options));
  }
  // Off: null, false, or absent.
  for (const rateLimit of [null, false, undefined]) client(E.SANDBOX, { rateLimit }).close();
});
