'use strict';
// The API client against the loopback mock App Store server: every endpoint through its method (Apple's name and
// parameter order), error payloads, 429 and Retry-After, retries decided by the library, pagination, transport
// failures, Apple's makeFetchRequest hook and an injected fetch.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const spec = require('../generated/spec.js');
const { SUPPORT, MOCK, startMock, signingKeys, methodArgs, mockArrivals } = require('./helpers.js');

const CASES = JSON.parse(fs.readFileSync(path.join(SUPPORT, 'api_cases.json'), 'utf8')).cases;
const SPEC_ENDPOINTS = JSON.parse(fs.readFileSync(path.join(SUPPORT, '..', '..', 'spec', 'endpoints.json'), 'utf8')).endpoints;

let mock;
let key;
test.before(async () => {
  key = fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
  mock = await startMock();
});
test.after(async () => {
  if (mock) await mock.stop();
});

function client(options = {}) {
  return new lib.AppStoreServerAPIClient(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.LOCAL_TESTING,
    { baseUrl: mock.url, ...options });
}

test('api_cases.json has one canonical call per endpoint of the spec', () => {
  assert.deepEqual(CASES.map((c) => c.endpoint).sort(), SPEC_ENDPOINTS.map((e) => e.name).sort());
});

test('every endpoint through its method, against the mock server', async (t) => {
  const c = client();
  for (const cs of CASES) {
    await t.test(cs.endpoint, async () => {
      const { method, argv } = methodArgs(cs.endpoint, cs.params);
      assert.equal(typeof c[method], 'function', `client.${method}`);
      const got = await c[method](...argv);
      if (cs.pages) {
        assert.deepEqual(got, cs.pages[0]);
        const pageArg = spec.ENDPOINTS[cs.endpoint].pagination.parameter;
        const pagesArgs = argv.filter((_, i) => spec.ENDPOINTS[cs.endpoint].parameters[i] === undefined ||
          spec.ENDPOINTS[cs.endpoint].parameters[i].name !== pageArg);
        const pages = [];
        for await (const page of c[`${method}Pages`](...pagesArgs)) pages.push(page);
        assert.deepEqual(pages, cs.pages);
      } else if (spec.ENDPOINTS[cs.endpoint].response) {
        assert.deepEqual(got, cs.response);
      } else {
        assert.equal(got, undefined);
      }
    });
  }
  c.close();
});

test('Apple\'s default: getTransactionHistory without a version calls version 1', async () => {
  const cs = CASES.find((x) => x.endpoint === 'getTransactionHistoryV1');
  const { argv } = methodArgs('getTransactionHistoryV1', cs.params);
  argv.pop();
  const c = client();
  assert.deepEqual(await c.getTransactionHistory(...argv), cs.pages[0]);
  await assert.rejects(c.getTransactionHistory('1', null, {}, 'v3'), TypeError);
});

test('error payloads: APIException with Apple\'s fields and the library\'s', async () => {
  const c = client();
  await assert.rejects(c.getTransactionInfo('error-404-4040010'), (e) => {
    assert.ok(e instanceof lib.APIException);
    assert.equal(e.httpStatusCode, 404);
    assert.equal(e.apiError, lib.APIError.TRANSACTION_ID_NOT_FOUND);
    assert.equal(e.errorMessage, 'mock error 4040010');
    assert.equal(e.apiErrorName, 'transactionIdNotFound');
    assert.equal(e.reason, 'api_error');
    assert.equal(e.libraryStatus, 'API_ERROR');
    assert.equal(e.retryAfter, null);
    assert.equal(e.retryAfterSeconds, null);
    return true;
  });
  await assert.rejects(c.getTransactionInfo('error-400-9990000'), (e) => {
    assert.equal(e.apiError, 9990000, 'an unknown code is kept raw');
    assert.equal(e.apiErrorName, null);
    return true;
  });
  await assert.rejects(c.getTransactionInfo('plain500'), (e) => {
    assert.ok(e instanceof lib.APIException);
    assert.equal(e.httpStatusCode, 500);
    assert.equal(e.apiError, null);
    assert.equal(e.errorMessage, null);
    assert.equal(e.reason, 'http_error');
    return true;
  });
  for (const id of ['malformed', 'badtype']) {
    await assert.rejects(c.getTransactionInfo(id), (e) => {
      assert.ok(e instanceof lib.AppStoreServerError, String(e));
      assert.equal(e.libraryStatus, 'INVALID_RESPONSE');
      assert.equal(e.reason, 'undecodable_response');
      return true;
    });
  }
});

test('429: Retry-After in each form, not retried unless asked', async () => {
  const c = client();
  const before = Date.now();
  await assert.rejects(c.getTransactionInfo('ratelimit'), (e) => {
    assert.equal(e.httpStatusCode, 429);
    assert.equal(e.apiError, lib.APIError.RATE_LIMIT_EXCEEDED);
    assert.equal(e.reason, 'rate_limited');
    // retryAfter: a UNIX time in milliseconds (Apple's form of the header); retryAtMs the same; retryAfterSeconds.
    assert.ok(e.retryAfter >= before + 6000 && e.retryAfter <= Date.now() + 7000, `retryAfter ${e.retryAfter}`);
    assert.equal(e.retryAtMs, e.retryAfter);
    assert.ok(e.retryAfterSeconds >= 6 && e.retryAfterSeconds <= 7, `retryAfterSeconds ${e.retryAfterSeconds}`);
    assert.equal(e.headers['retry-after'], '7', 'the raw header, by its lowercased name');
    return true;
  });
  // Apple's form: the header's value is the UNIX time in milliseconds, and retryAfter is that value.
  let sent;
  await assert.rejects(c.getTransactionInfo('ratelimit-ms-5000'), (e) => {
    sent = Number(e.headers['retry-after']);
    assert.ok(sent > before + 4000, `Retry-After: ${e.headers['retry-after']}`);
    assert.equal(e.retryAfter, sent);
    assert.equal(e.retryAtMs, sent);
    assert.ok(e.retryAfterSeconds >= 4 && e.retryAfterSeconds <= 5, `retryAfterSeconds ${e.retryAfterSeconds}`);
    return true;
  });
  await assert.rejects(c.getTransactionInfo('ratelimit-date-9'), (e) => {
    assert.ok(e.retryAfterSeconds >= 8 && e.retryAfterSeconds <= 10, `retryAfterSeconds ${e.retryAfterSeconds}`);
    assert.equal(e.retryAfter, Date.parse(e.headers['retry-after']));
    return true;
  });
});

test('APIException.headers: the answer\'s headers, lowercased names -> value', async () => {
  const c = client();
  await assert.rejects(c.getTransactionInfo('error-404-4040010'), (e) => {
    assert.ok(e instanceof lib.APIException);
    assert.equal(Object.getPrototypeOf(e.headers), Object.prototype);
    assert.equal(e.headers['content-type'], 'application/json');
    assert.match(e.headers['content-length'], /^[1-9]\d*$/);
    for (const name of Object.keys(e.headers)) assert.equal(name, name.toLowerCase());
    assert.equal(e.retryAfter, null);
    assert.equal(e.retryAfterSeconds, null);
    assert.equal(e.retryAtMs, null);
    return true;
  });
  // Another transport's answer (Apple's makeFetchRequest hook): names as it gives them, repeated headers joined as
  // fetch's Headers joins them, a name that is no identifier kept as an own property.
  class Stub extends lib.AppStoreServerAPIClient {
    async makeFetchRequest() {
      const headers = new Headers([['X-Apple-Request-Id', 'abc'], ['Retry-After', String(Date.now() + 60000)]]);
      headers.append('X-Multi', 'one');
      headers.append('X-Multi', 'two');
      headers.append('__proto__', 'kept');
      return new Response('{"errorCode": 4290000, "errorMessage": "slow down"}', { status: 429, headers });
    }
  }
  const s = new Stub(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.SANDBOX);
  await assert.rejects(s.getTransactionInfo('1'), (e) => {
    assert.equal(e.headers['x-apple-request-id'], 'abc');
    assert.equal(e.headers['x-multi'], 'one, two');
    assert.ok(Object.prototype.hasOwnProperty.call(e.headers, '__proto__'));
    assert.equal(Object.getPrototypeOf(e.headers), Object.prototype);
    assert.equal(e.retryAfter, Number(e.headers['retry-after']));
    assert.ok(e.retryAfterSeconds >= 59 && e.retryAfterSeconds <= 60, `retryAfterSeconds ${e.retryAfterSeconds}`);
    return true;
  });
  // Apple's constructor alone: no answer, no headers.
  assert.deepEqual(new lib.APIException(500).headers, {});
});

test('retries: the library decides (429, retryable codes, Retry-After), the client waits and sends again', async () => {
  const c = client({ maxRetries: 3, initialBackoffMs: 10, maxBackoffMs: 2000 });
  assert.deepEqual(await c.getTransactionInfo('flaky429-2-a'), { signedTransactionInfo: 'attempt-3' });
  assert.deepEqual(await c.getTransactionInfo('flaky5000001-1-b'), { signedTransactionInfo: 'attempt-2' });
  assert.deepEqual(await c.getTransactionInfo('flaky4040002-1-c'), { signedTransactionInfo: 'attempt-2' });
  // Retry-After as UNIX milliseconds: the retry waits until then.
  const r = await c.getTransactionInfo('flakyms600-1-d');
  const waited = Number(/after (\d+)/.exec(r.signedTransactionInfo)[1]);
  assert.ok(waited >= 550, `waited ${waited} ms for a 600 ms Retry-After`);
  // Retry-After beyond the longest wait: no retry, the answer is the error.
  // Not waited for: the one request is all the mock saw (the mechanism, not a clock load can stretch).
  const sent = async () => ((await mockArrivals(mock.url))['GET /inApps/v1/transactions/ratelimit-long'] || []).length;
  const before = await sent();
  await assert.rejects(c.getTransactionInfo('ratelimit-long'), (e) => e.httpStatusCode === 429 && e.retryAfterSeconds >= 3599 &&
    e.retryAfter >= Date.now() + 3598000);
  assert.equal(await sent() - before, 1);
  // Retries used up.
  await assert.rejects(c.getTransactionInfo('flaky429-5-e'), (e) => e.httpStatusCode === 429);
  // Not retryable.
  await assert.rejects(c.getTransactionInfo('error-404-4040010'), (e) => e.httpStatusCode === 404);
});

test('pagination: async iterators follow revision / paginationToken to the last page', async () => {
  const c = client();
  const cs = CASES.find((x) => x.endpoint === 'getNotificationHistory');
  const pages = [];
  for await (const p of c.getNotificationHistoryPages(cs.params.body)) pages.push(p);
  assert.equal(pages.length, cs.pages.length);
  assert.deepEqual(pages, cs.pages);
  // The next page by hand, as Apple's API does it.
  const second = await c.getNotificationHistory(cs.pages[0].paginationToken, cs.params.body);
  assert.deepEqual(second, cs.pages[1]);
});

test('transport failures: timeout, unreachable', async () => {
  const slow = client({ timeoutMs: 300 });
  await assert.rejects(slow.getTransactionInfo('slow-3000'), (e) => {
    assert.ok(e instanceof lib.AppStoreServerError, String(e));
    assert.equal(e.libraryStatus, 'TRANSPORT_ERROR');
    assert.equal(e.reason, 'transport_timeout');
    return true;
  });
  const port = await new Promise((resolve) => {
    const s = require('net').createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const down = new lib.AppStoreServerAPIClient(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId,
    lib.Environment.LOCAL_TESTING, { baseUrl: `http://127.0.0.1:${port}` });
  await assert.rejects(down.getTransactionInfo('1'), (e) => e.reason === 'transport_unreachable');
});

test('Apple\'s makeFetchRequest hook: a subclass answers the requests itself', async () => {
  const seen = [];
  class Stub extends lib.AppStoreServerAPIClient {
    async makeFetchRequest(p, query, method, body, headers) {
      seen.push({ path: p, query: query.toString(), method, body, headers });
      if (p.endsWith('/fail')) return { status: 404, json: async () => ({ errorCode: 4040010, errorMessage: 'nope' }) };
      return new Response(JSON.stringify({ signedTransactionInfo: 'from-stub' }), { status: 200 });
    }
  }
  const c = new Stub(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.SANDBOX);
  assert.deepEqual(await c.getTransactionInfo('42'), { signedTransactionInfo: 'from-stub' });
  assert.equal(seen[0].path, '/inApps/v1/transactions/42');
  assert.equal(seen[0].method, 'GET');
  assert.equal(seen[0].body, undefined);
  assert.match(seen[0].headers.Authorization, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
  assert.equal(seen[0].headers.Accept, 'application/json');
  await assert.rejects(c.getTransactionInfo('fail'), (e) => e instanceof lib.APIException && e.apiError === 4040010 &&
    e.errorMessage === 'nope');
  await c.setAppAccountToken('1', { appAccountToken: '7E3FB20B-4CDB-47CC-936D-99D65F608138' });
  const put = seen[seen.length - 1];
  assert.equal(put.method, 'PUT');
  assert.equal(typeof put.body, 'string', 'a JSON body is a string, as in Apple\'s library');
  assert.deepEqual(JSON.parse(put.body), { appAccountToken: '7e3fb20b-4cdb-47cc-936d-99d65f608138' });
  assert.equal(put.headers['Content-Type'], 'application/json');
  await c.getAllSubscriptionStatuses('1', [lib.Status.ACTIVE, lib.Status.EXPIRED]);
  assert.equal(seen[seen.length - 1].query, 'status=1&status=2');
});

test('an injected fetch sends every request', async () => {
  const urls = [];
  const c = client({ fetch: (url, init) => { urls.push([url, init.method]); return fetch(url, init); } });
  await c.getTransactionInfo('2000000000000001');
  assert.deepEqual(urls, [[`${mock.url}/inApps/v1/transactions/2000000000000001`, 'GET']]);
});

test('the library checks the request: unknown filter keys, Apple\'s limits, wrong JSON types', async () => {
  const c = client();
  await assert.rejects(c.getTransactionHistory('1', null, { startDat: 1 }), (e) => e instanceof TypeError && /startDat/.test(e.message));
  await assert.rejects(c.uploadMessage('b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e', { header: 'h', body: 'b', bulletPoints: Array(6).fill(
    { text: 't', imageIdentifier: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d', altText: 'a' }) }), (e) => {
    assert.equal(e.reason, 'invalid_request', String(e));
    assert.match(e.message, /bulletPoints/);
    return true;
  });
  await assert.rejects(c.extendSubscriptionRenewalDate('1', { extendByDays: '45', extendReasonCode: 1, requestIdentifier: 'x' }),
    (e) => e instanceof TypeError && e.reason === 'invalid_parameters' && /extendByDays/.test(e.message));
  await assert.rejects(c.setAppAccountToken('1', { appAccountToken: '7e3fb20b-4cdb-47cc-936d-99d65f608138', extra: 1 }),
    (e) => e instanceof TypeError && /extra/.test(e.message));
});

test('bearer tokens: ES256, Apple\'s claims', () => {
  const c = client();
  const [h, p] = c.createBearerToken().split('.').map((s, i) => (i < 2 ? JSON.parse(Buffer.from(s, 'base64url')) : s));
  assert.deepEqual(h, { alg: 'ES256', kid: MOCK.keyId, typ: 'JWT' });
  assert.equal(p.aud, 'appstoreconnect-v1');
  assert.equal(p.iss, MOCK.issuerId);
  assert.equal(p.bid, MOCK.bundleId);
  assert.equal(p.exp - p.iat, 300);
});

test('Xcode has no App Store Server API', () => {
  assert.throws(() => new lib.AppStoreServerAPIClient(key, 'k', 'i', 'b', lib.Environment.XCODE), /Xcode is not a supported environment/);
});

test('a makeFetchRequest that resolves to no Response is a TypeError, thrown as it is; every call handle is freed', async () => {
  const native = require('../lib/native.js');
  class Broken extends lib.AppStoreServerAPIClient {
    async makeFetchRequest() {
      return { body: 'not a Response' };
    }
  }
  const c = new Broken(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.LOCAL_TESTING, { maxRetries: 2 });
  // The calls the loop makes, and the handles it closes.
  const made = [];
  const closed = new Set();
  const { api_call_new: callNew, close } = native;
  native.api_call_new = (...a) => {
    const h = callNew(...a);
    made.push(h);
    return h;
  };
  native.close = (h) => {
    closed.add(h);
    return close(h);
  };
  try {
    const typeError = (e) => e instanceof TypeError && /makeFetchRequest must resolve to a Response/.test(e.message);
    await assert.rejects(c.getTransactionInfo('1'), typeError);
    await assert.rejects((async () => {
      for await (const page of c.getRefundHistoryPages('1')) assert.fail(`a page: ${JSON.stringify(page)}`);
    })(), typeError);
  } finally {
    native.api_call_new = callNew;
    native.close = close;
    c.close();
  }
  assert.equal(made.length, 2);
  assert.ok(made.every((h) => closed.has(h)), 'a call handle was left open');
});
