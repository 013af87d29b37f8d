'use strict';
// Apple's makeFetchRequest hook receives what Apple's library passes it, for every endpoint (one canonical call per
// endpoint, Tests/support/api_cases.json, plus the paginated ones with their page token): path, parsedQueryParameters
// (a URLSearchParams), method, requestBody (a JSON string, or the image Buffer) and headers (names, order, values).
// The expectation is written here by hand from Apple's index.ts (3.1.0): each endpoint method's
// makeRequest(path, method, queryParameters, body, validator, contentType) call, and makeRequest's rules. The
// Advanced Commerce endpoints (not in Apple's Node client) follow the same rules. The deliberate differences (what
// Apple's API documents and Apple's library does not send, docs/node.md "Migrating from Apple's Node library") are
// applied to Apple's expectation explicitly, each named below.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const spec = require('../generated/spec.js');
const { SUPPORT, MOCK, signingKeys, methodArgs } = require('./helpers.js');

const CASES = JSON.parse(fs.readFileSync(path.join(SUPPORT, 'api_cases.json'), 'utf8')).cases;
const APPLE_USER_AGENT = 'app-store-server-library/node/3.1.0';

// ---- Apple's library, by hand -------------------------------------------------------------------------------------

/** Apple's getTransactionHistory query parameters (both versions), in Apple's order. */
function historyQuery(p) {
  const q = {};
  if (p.revision != null) q.revision = [p.revision];
  if (p.startDate) q.startDate = [p.startDate.toString()];
  if (p.endDate) q.endDate = [p.endDate.toString()];
  if (p.productIds) q.productId = p.productIds;
  if (p.productTypes) q.productType = p.productTypes;
  if (p.sort) q.sort = [p.sort];
  if (p.subscriptionGroupIdentifiers) q.subscriptionGroupIdentifier = p.subscriptionGroupIdentifiers;
  if (p.inAppOwnershipType) q.inAppOwnershipType = [p.inAppOwnershipType];
  if (p.revoked !== undefined) q.revoked = [p.revoked.toString()];
  return q;
}

/**
 * Per endpoint: Apple's makeRequest arguments [method, path, queryParameters, body, contentType] for the case's
 * params. seg(value) is how a path segment is written: Apple concatenates it raw; seg.uuid(value) for a UUID.
 */
const APPLE_CALLS = {
  getTransactionInfo: (p, seg) => ['GET', '/inApps/v1/transactions/' + seg(p.transactionId), {}, null],
  getTransactionHistory: (p, seg) => ['GET', '/inApps/v2/history/' + seg(p.anyTransactionId), historyQuery(p), null],
  getTransactionHistoryV1: (p, seg) => ['GET', '/inApps/v1/history/' + seg(p.anyTransactionId), historyQuery(p), null],
  getAllSubscriptionStatuses: (p, seg) => ['GET', '/inApps/v1/subscriptions/' + seg(p.anyTransactionId),
    p.status != null ? { status: p.status.map((s) => s.toString()) } : {}, null],
  getRefundHistory: (p, seg) => ['GET', '/inApps/v2/refund/lookup/' + seg(p.anyTransactionId),
    p.revision != null ? { revision: [p.revision] } : {}, null],
  lookUpOrderId: (p, seg) => ['GET', '/inApps/v1/lookup/' + seg(p.orderId), {}, null],
  getAppTransactionInfo: (p, seg) => ['GET', '/inApps/v1/transactions/appTransactions/' + seg(p.anyTransactionId), {}, null],
  finishTransaction: (p, seg) => ['POST', '/inApps/v1/transactions/' + seg(p.transactionId) + '/finish', {}, null],
  sendConsumptionData: (p, seg) => ['PUT', '/inApps/v1/transactions/consumption/' + seg(p.transactionId), {}, p.body,
    'application/json'],
  sendConsumptionInformation: (p, seg) => ['PUT', '/inApps/v2/transactions/consumption/' + seg(p.transactionId), {},
    p.body, 'application/json'],
  setAppAccountToken: (p, seg) => ['PUT', '/inApps/v1/transactions/' + seg(p.originalTransactionId) + '/appAccountToken',
    {}, p.body, 'application/json'],
  extendSubscriptionRenewalDate: (p, seg) => ['PUT', '/inApps/v1/subscriptions/extend/' + seg(p.originalTransactionId),
    {}, p.body, 'application/json'],
  extendRenewalDateForAllActiveSubscribers: (p) => ['POST', '/inApps/v1/subscriptions/extend/mass', {}, p.body,
    'application/json'],
  getStatusOfSubscriptionRenewalDateExtensions: (p, seg) => ['GET',
    '/inApps/v1/subscriptions/extend/mass/' + seg(p.productId) + '/' + seg(p.requestIdentifier), {}, null],
  requestTestNotification: () => ['POST', '/inApps/v1/notifications/test', {}, null],
  getTestNotificationStatus: (p, seg) => ['GET', '/inApps/v1/notifications/test/' + seg(p.testNotificationToken), {}, null],
  getNotificationHistory: (p) => ['POST', '/inApps/v1/notifications/history',
    p.paginationToken != null ? { paginationToken: [p.paginationToken] } : {}, p.body, 'application/json'],
  uploadImage: (p, seg) => ['PUT', '/inApps/v1/messaging/image/' + seg.uuid(p.imageIdentifier),
    p.imageSize != null ? { imageSize: [p.imageSize] } : {}, Buffer.from(p.image, 'base64'), 'image/png'],
  deleteImage: (p, seg) => ['DELETE', '/inApps/v1/messaging/image/' + seg.uuid(p.imageIdentifier), {}, null],
  getImageList: () => ['GET', '/inApps/v1/messaging/image/list', {}, null],
  uploadMessage: (p, seg) => ['PUT', '/inApps/v1/messaging/message/' + seg.uuid(p.messageIdentifier), {}, p.body,
    'application/json'],
  deleteMessage: (p, seg) => ['DELETE', '/inApps/v1/messaging/message/' + seg.uuid(p.messageIdentifier), {}, null],
  getMessageList: () => ['GET', '/inApps/v1/messaging/message/list', {}, null],
  configureDefaultMessage: (p, seg) => ['PUT', '/inApps/v1/messaging/default/' + seg(p.productId) + '/' + seg(p.locale),
    {}, p.body, 'application/json'],
  deleteDefaultMessage: (p, seg) => ['DELETE', '/inApps/v1/messaging/default/' + seg(p.productId) + '/' + seg(p.locale),
    {}, null],
  getDefaultMessage: (p, seg) => ['GET', '/inApps/v1/messaging/default/' + seg(p.productId) + '/' + seg(p.locale), {}, null],
  configureRealtimeURL: (p) => ['PUT', '/inApps/v1/messaging/realtime/url', {}, p.body, 'application/json'],
  deleteRealtimeURL: () => ['DELETE', '/inApps/v1/messaging/realtime/url', {}, null],
  getRealtimeURL: () => ['GET', '/inApps/v1/messaging/realtime/url', {}, null],
  initiatePerformanceTest: (p) => ['POST', '/inApps/v1/messaging/performanceTest', {}, p.body, 'application/json'],
  getPerformanceTestResults: (p, seg) => ['GET', '/inApps/v1/messaging/performanceTest/result/' + seg(p.requestId), {}, null],
  // Advanced Commerce API (Apple's documentation; not in Apple's Node client): the same rules.
  cancelSubscription: (p, seg) => ['POST', '/advancedCommerce/v1/subscription/cancel/' + seg(p.transactionId), {}, p.body],
  changeSubscriptionMetadata: (p, seg) => ['POST', '/advancedCommerce/v1/subscription/changeMetadata/' +
    seg(p.transactionId), {}, p.body],
  changeSubscriptionPrice: (p, seg) => ['POST', '/advancedCommerce/v1/subscription/changePrice/' + seg(p.transactionId),
    {}, p.body],
  migrateSubscription: (p, seg) => ['POST', '/advancedCommerce/v1/subscription/migrate/' + seg(p.transactionId), {}, p.body],
  revokeSubscription: (p, seg) => ['POST', '/advancedCommerce/v1/subscription/revoke/' + seg(p.transactionId), {}, p.body],
  requestTransactionRefund: (p, seg) => ['POST', '/advancedCommerce/v1/transaction/requestRefund/' + seg(p.transactionId),
    {}, p.body],
};

const AC_ENDPOINTS = Object.fromEntries(['cancelSubscription', 'changeSubscriptionMetadata', 'changeSubscriptionPrice',
  'migrateSubscription', 'revokeSubscription', 'requestTransactionRefund'].map((n) => [n, true]));
const AC_SANDBOX_URL = 'https://api.storekit-sandbox.itunes.apple.com'; // Apple's Advanced Commerce pages

/** Apple's makeRequest: the arguments it passes to makeFetchRequest. */
function appleMakeRequest(method, urlPath, queryParameters, body, contentType) {
  const headers = {
    'User-Agent': APPLE_USER_AGENT,
    'Authorization': 'Bearer <token>',
    'Accept': 'application/json',
  };
  const parsedQueryParameters = new URLSearchParams();
  for (const queryParam in queryParameters) {
    for (const queryVal of queryParameters[queryParam]) parsedQueryParameters.append(queryParam, queryVal);
  }
  let requestBody;
  if (body instanceof Buffer) {
    requestBody = body;
    if (contentType) headers['Content-Type'] = contentType;
  } else if (body != null) {
    requestBody = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  return { path: urlPath, parsedQueryParameters, method, requestBody, headers };
}

// ---- the deliberate differences ------------------------------------------------------------------------------------

const raw = (v) => String(v);
raw.uuid = raw;
// 1. Path segments are percent-encoded (Apple's concatenates them raw: an order id with "/", " ", "?", "#" or "%"
//    would name another resource); 2. UUIDs are sent lowercase (Apple's documentation of imageIdentifier and
//    messageIdentifier: "Must be lowercase").
const encoded = (v) => encodeURIComponent(String(v));
encoded.uuid = (v) => encodeURIComponent(String(v).toLowerCase());
// 2 (bodies). The UUID fields of request bodies are lowercase.
const UUID_FIELDS = new Set(['appAccountToken', 'requestReferenceId', 'imageIdentifier', 'messageIdentifier']);
function lowercaseUuids(v) {
  if (Array.isArray(v)) return v.map(lowercaseUuids);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) =>
    [k, UUID_FIELDS.has(k) && typeof x === 'string' ? x.toLowerCase() : lowercaseUuids(x)]));
}
// 3. Consumption information version 1: appAccountToken is sent, empty when not given (Apple's API documents it as
//    required: "an empty string if you don't have one").
function bodyAsSent(endpoint, body) {
  const b = lowercaseUuids(body);
  if (endpoint === 'sendConsumptionData' && b.appAccountToken === undefined) b.appAccountToken = '';
  return b;
}
// 4. The User-Agent names this library (appstoreserver/<version>), not Apple's.

// ---- the calls --------------------------------------------------------------------------------------------------------

let key;
test.before(() => {
  key = fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
});

/** Every case, and the paginated endpoints again with a page token that needs encoding in the query. */
function calls() {
  const out = CASES.map((cs) => ({ name: cs.endpoint, endpoint: cs.endpoint, params: cs.params }));
  for (const cs of CASES) {
    const pagination = spec.ENDPOINTS[cs.endpoint].pagination;
    if (pagination) {
      out.push({ name: `${cs.endpoint} (next page)`, endpoint: cs.endpoint,
        params: { ...cs.params, [pagination.parameter]: 'page 2/+&=?' } });
    }
  }
  return out;
}

class Recorder extends lib.AppStoreServerAPIClient {
  constructor(...argv) {
    super(...argv);
    this.seen = [];
  }

  async makeFetchRequest(...argv) {
    this.seen.push(argv);
    return new Response('{}', { status: 200 });
  }
}

test('every endpoint: makeFetchRequest receives Apple\'s arguments', async (t) => {
  assert.deepEqual(Object.keys(APPLE_CALLS).sort(), CASES.map((c) => c.endpoint).sort(), 'one hand-written call per case');
  const c = new Recorder(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.SANDBOX);
  for (const call of calls()) {
    await t.test(call.name, async () => {
      const { method, argv } = methodArgs(call.endpoint, call.params);
      c.seen.length = 0;
      await c[method](...argv).catch(() => {}); // '{}' may not decode as the response; the request is what counts
      assert.equal(c.seen.length, 1);
      const [gotPath, gotQuery, gotMethod, gotBody, gotHeaders, request] = c.seen[0];
      const [m, p, q, body, contentType] = APPLE_CALLS[call.endpoint](call.params, encoded);
      const apple = appleMakeRequest(m, p, q, body, contentType);

      assert.equal(gotMethod, apple.method);
      assert.equal(gotPath, apple.path);
      assert.ok(gotQuery instanceof URLSearchParams, 'parsedQueryParameters is a URLSearchParams');
      assert.deepEqual([...gotQuery], [...apple.parsedQueryParameters]);
      assert.equal(gotQuery.toString(), apple.parsedQueryParameters.toString());

      assert.deepEqual(Object.keys(gotHeaders), Object.keys(apple.headers), 'header names, in Apple\'s order');
      assert.equal(gotHeaders.Accept, apple.headers.Accept);
      assert.equal(gotHeaders['Content-Type'], apple.headers['Content-Type']);
      assert.match(gotHeaders.Authorization, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
      assert.equal(gotHeaders['User-Agent'], `appstoreserver/${lib.version}`);

      if (apple.requestBody === undefined) assert.equal(gotBody, undefined);
      else if (Buffer.isBuffer(apple.requestBody)) {
        assert.ok(Buffer.isBuffer(gotBody), 'the image is a Buffer');
        assert.ok(gotBody.equals(apple.requestBody));
      } else {
        assert.equal(typeof gotBody, 'string', 'a JSON body is a string');
        assert.deepEqual(JSON.parse(gotBody), bodyAsSent(call.endpoint, JSON.parse(apple.requestBody)));
      }

      // An override that builds the URL as Apple's default does reaches the resource the library built; the
      // Advanced Commerce endpoints (beyond Apple's Node client) are on the hosts Apple documents for them
      // (request.url has it; urlBase is the App Store Server API's).
      const appleUrl = new URL(c.urlBase + gotPath + '?' + gotQuery);
      const built = new URL(request.url);
      const host = call.endpoint in AC_ENDPOINTS ? AC_SANDBOX_URL : c.urlBase;
      assert.equal(host + appleUrl.pathname, built.origin + built.pathname);
      assert.deepEqual([...appleUrl.searchParams], [...built.searchParams]);
    });
  }
  c.close();
});

test('the deliberate differences are the only ones: without them Apple\'s expectation differs only there', () => {
  // The raw segments of Apple's path are another URL for an order id that needs encoding, and the same otherwise.
  const order = CASES.find((x) => x.endpoint === 'lookUpOrderId').params;
  assert.notEqual(APPLE_CALLS.lookUpOrderId(order, raw)[1], APPLE_CALLS.lookUpOrderId(order, encoded)[1]);
  const tx = CASES.find((x) => x.endpoint === 'getTransactionInfo').params;
  assert.equal(APPLE_CALLS.getTransactionInfo(tx, raw)[1], APPLE_CALLS.getTransactionInfo(tx, encoded)[1]);
});

test('the default makeFetchRequest: fetch(url, {method, headers, body}) as Apple\'s, plus redirect and a deadline', async () => {
  const got = [];
  const fetchSpy = async (url, init) => {
    got.push({ url, init });
    return new Response('{"signedTransactionInfo": "x"}', { status: 200 });
  };
  const c = new lib.AppStoreServerAPIClient(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment.SANDBOX,
    { fetch: fetchSpy });
  await c.getTransactionInfo('2000000000000001');
  await c.setAppAccountToken('1', { appAccountToken: '7e3fb20b-4cdb-47cc-936d-99d65f608138' });
  assert.equal(got[0].url, 'https://api.storekit-sandbox.apple.com/inApps/v1/transactions/2000000000000001');
  assert.deepEqual(Object.keys(got[0].init.headers), ['User-Agent', 'Authorization', 'Accept']);
  assert.equal(got[0].init.method, 'GET');
  assert.equal(got[0].init.body, undefined);
  assert.equal(got[0].init.redirect, 'manual');
  assert.ok(got[0].init.signal instanceof AbortSignal);
  assert.deepEqual(Object.keys(got[1].init.headers), ['User-Agent', 'Authorization', 'Accept', 'Content-Type']);
  assert.equal(got[1].init.body, '{"appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138"}');
  c.close();
});
