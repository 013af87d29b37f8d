'use strict';
// The call driver's shared scenarios (Tests/driver/scenarios.json, read its "doc") through the Node client's own
// loop: each SEND reaches Apple's makeFetchRequest hook (checked against the scenario's method and full URL, both
// request.url and Apple's urlBase + path + query), each WAIT reaches the client's _sleep, the clock is the client's
// _nowMs serving each step's `now`, and the call ends with the scenario's answer (through answer(): value and
// environment; the ...Pages iterators for "pages") or its error. The scenarios marked driverOnly misuse the driver,
// which a client loop never does: the C and Swift runners run them.
//
// A scripted transport failure is thrown from the hook as what the loop classifies as that result (a TimeoutError
// for TIMEOUT, fetch's ECONNREFUSED for UNREACHABLE, any other Error for FAILED); the client rejects with the core's
// TRANSPORT_ERROR, the hook's exception as its cause.
const test = require('node:test');
const assert = require('assert/strict');
const fs = require('fs');
const path = require('path');
const lib = require('..');
const { classify } = require('../lib/transport.js');
const { ENDPOINTS, TRANSPORT_RESULT } = require('../generated/spec.js');
const { REPO, MOCK, signingKeys, methodArgs } = require('./helpers.js');

const SCENARIOS = JSON.parse(fs.readFileSync(path.join(REPO, 'Tests', 'driver', 'scenarios.json'), 'utf8')).scenarios;
const RUN = SCENARIOS.filter((s) => !s.driverOnly);
const APPLE_SANDBOX = 'https://api.storekit-sandbox.apple.com';

// What a hook throws for each transport result: what the loop reports as that result (lib/transport.js classify).
const FAILURES = {
  TIMEOUT: (message) => new DOMException(message, 'TimeoutError'),
  UNREACHABLE: (message) => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(message), { code: 'ECONNREFUSED' }) }),
  FAILED: (message) => new Error(message),
};

// Fields of a scenario's error that the exception Node throws for that status does not carry: an
// AppStoreServerError (every failure but Apple's API_ERROR answers, as Apple's Node library) has no HTTP status.
// Listed by scenario, so a new scenario whose fields go unchecked fails until it is added here.
const NOT_CARRIED = { "a 2xx body that does not decode into the endpoint's model": ['httpStatus'] };

/** One scenario's steps, served in order to the client loop's hooks. */
class Script {
  constructor(scenario) {
    this.name = scenario.name;
    this.steps = scenario.steps;
    this.body = scenario.params.body; // the JSON body of every page's request
    this.i = 0;
    this.thrown = null; // the transport failure the hook threw
    this.answered = null; // the last done, until the loop goes on or stops
    this.unchecked = [];
  }

  /** The loop asked for more after an answer: the driver must have said there is a next page. */
  wentOn() {
    if (this.answered) {
      assert.ok(this.answered.hasNextPage, `${this.name}: the loop went on after the last page`);
      this.answered = null;
    }
  }

  take(kind) {
    this.wentOn();
    assert.ok(this.i < this.steps.length, `${this.name}: the loop went on after the last step (${kind})`);
    const step = this.steps[this.i];
    assert.ok(kind in step, `${this.name}: step ${this.i} is ${Object.keys(step)}, the loop did ${kind}`);
    this.i++;
    return step[kind];
  }

  nowMs() {
    this.wentOn();
    assert.ok(this.i < this.steps.length, `${this.name}: the loop asked the clock after the last step`);
    const step = this.steps[this.i];
    assert.ok('now' in step, `${this.name}: step ${this.i} (${Object.keys(step)}) gives no time, the loop asked for it`);
    if ('receive' in step) this.i++; // the answer arrives: the loop reports it with this time
    return step.now;
  }

  async sleep(ms) {
    const want = this.take('wait');
    assert.equal(ms, want, `${this.name}: slept ${ms} ms, the driver says wait ${want} ms`);
  }

  /** Apple's hook: its five arguments, then the request as the library built it. */
  async send(client, p, query, method, body, headers, request) {
    const want = this.take('send');
    const q = query.toString();
    const base = request.environment === lib.Environment.SANDBOX && client._environment !== lib.Environment.SANDBOX
      ? APPLE_SANDBOX : client.urlBase;
    assert.deepEqual([method, request.url], [want.method, want.url], `${this.name}: step ${this.i - 1}`);
    assert.equal(base + p + (q ? `?${q}` : ''), want.url, `${this.name}: Apple's URL from its arguments`);
    assert.equal(request.environment, want.url.startsWith(`${APPLE_SANDBOX}/`) ? lib.Environment.SANDBOX
      : lib.Environment.PRODUCTION, `${this.name}: request.environment`);
    assert.ok(headers.Authorization.startsWith('Bearer '), this.name);
    if ('timeoutMs' in want) assert.equal(request.timeoutMs, want.timeoutMs, `${this.name}: the time left as the timeout`);
    assert.deepEqual(body === undefined ? undefined : JSON.parse(body), this.body, this.name);
    assert.ok(this.i < this.steps.length, `${this.name}: no outcome scripted for the send`);
    const step = this.steps[this.i];
    if ('fail' in step) {
      this.i++;
      this.thrown = FAILURES[step.fail.result](step.fail.message);
      throw this.thrown;
    }
    assert.ok('receive' in step, `${this.name}: step ${this.i} is ${Object.keys(step)} after a send`);
    const r = step.receive;
    const text = 'bodyText' in r ? r.bodyText : JSON.stringify(r.body);
    return new Response([101, 204, 205, 304].includes(r.status) ? null : text, { status: r.status, headers: r.headers || {} });
  }

  done({ value, environment }) {
    const want = this.take('done');
    assert.deepEqual(value === undefined ? {} : value, want.json, `${this.name}: the answer`);
    assert.equal(environment, lib.Environment[want.environment], `${this.name}: answered by ${environment}`);
    this.answered = want;
  }

  /** The call resolved, or the iterator ended: after an answer that has no next page. */
  stopped() {
    assert.ok(this.answered && !this.answered.hasNextPage, `${this.name}: stopped early`);
    this.answered = null;
  }

  error(e) {
    const want = this.take('error');
    let got;
    if (want.status === 'API_ERROR') {
      assert.ok(e instanceof lib.APIException, `${this.name}: ${e && e.stack}`);
      got = { status: e.libraryStatus, reason: e.reason, httpStatus: e.httpStatusCode, apiErrorCode: e.apiError,
        retryAfterMs: e.retryAfter };
    } else {
      assert.ok(e instanceof lib.AppStoreServerError, `${this.name}: ${e && e.stack}`);
      got = { status: e.libraryStatus, reason: e.reason, retryAfterMs: e.retryAtMs };
      if (this.thrown) assert.equal(e.cause, this.thrown, `${this.name}: the cause is the hook's exception`);
    }
    const listed = Object.keys(want).filter((k) => !k.startsWith('message'));
    this.unchecked = listed.filter((k) => !(k in got));
    const checked = listed.filter((k) => k in got);
    assert.deepEqual(Object.fromEntries(checked.map((k) => [k, got[k]])),
      Object.fromEntries(checked.map((k) => [k, want[k]])), `${this.name}: ${e.message}`);
    for (const text of want.messageContains || []) assert.ok(e.message.includes(text), `${this.name}: ${JSON.stringify(text)} not in ${e.message}`);
    for (const text of want.messageLacks || []) assert.ok(!e.message.includes(text), `${this.name}: ${JSON.stringify(text)} in ${e.message}`);
  }

  finished() {
    assert.equal(this.i, this.steps.length, `${this.name}: ended at step ${this.i} of ${this.steps.length}`);
    assert.deepEqual(this.unchecked, NOT_CARRIED[this.name] || [], `${this.name}: fields Node's exception does not carry`);
  }
}

let key;
/** Apple's base URLs (no baseUrl), the test key, the scenario's options; the hook, clock and sleep scripted. */
function makeClient(scenario, script) {
  key = key || fs.readFileSync(path.join(signingKeys(), 'p256.p8'), 'utf8');
  const o = scenario.client;
  const options = {};
  if ('timeoutMs' in o) options.timeoutMs = o.timeoutMs;
  if ('maxRetries' in o) Object.assign(options, { maxRetries: o.maxRetries, initialBackoffMs: o.initialBackoffMs, maxBackoffMs: o.maxBackoffMs });
  if (o.sandboxFallback) options.sandboxFallback = true;
  if (o.rateLimit) options.rateLimit = { maxWaitMs: o.rateLimit.maxWaitMs, sharePercent: o.rateLimit.sharePercent };
  class Scripted extends lib.AppStoreServerAPIClient {
    makeFetchRequest(...argv) {
      return script.send(this, ...argv);
    }

    _nowMs() {
      return script.nowMs();
    }

    _sleep(ms) {
      return script.sleep(ms);
    }
  }
  return new Scripted(key, MOCK.keyId, MOCK.issuerId, MOCK.bundleId, lib.Environment[o.environment], options);
}

/** The client method of the scenario's call (the ...Pages iterator for "pages") and its arguments. */
function methodAndArgs(scenario) {
  const { method, argv } = methodArgs(scenario.endpoint, scenario.params);
  if (!scenario.pages) return { method, argv };
  const ep = ENDPOINTS[scenario.endpoint];
  const at = ep.parameters.findIndex((p) => p.name === ep.pagination.parameter);
  return { method: `${method}Pages`, argv: argv.filter((_, i) => i !== at) };
}

async function run(scenario) {
  const script = new Script(scenario);
  const c = makeClient(scenario, script);
  const { method, argv } = methodAndArgs(scenario);
  try {
    if (scenario.pages) {
      for await (const page of c.answer(method, ...argv)) script.done(page);
    } else {
      script.done(await c.answer(method, ...argv));
    }
    script.stopped();
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    script.error(e);
  } finally {
    c.close();
  }
  script.finished();
}

test('every scenario but the driver-only ones is run, and the hook throws what the loop classifies', () => {
  assert.ok(SCENARIOS.length >= 21);
  assert.deepEqual(SCENARIOS.filter((s) => s.driverOnly).map((s) => s.name),
    ['misuse: next before the outcome, and after the end'], 'a new driverOnly scenario: is it really one?');
  assert.deepEqual(new Set(RUN.filter((s) => s.pages).map((s) => s.endpoint)),
    new Set(['getTransactionHistory', 'getRefundHistory', 'getNotificationHistory']));
  for (const [result, make] of Object.entries(FAILURES)) assert.equal(classify(make('x')), TRANSPORT_RESULT[result], result);
  for (const name of Object.keys(NOT_CARRIED)) assert.ok(RUN.some((s) => s.name === name), name);
});

for (const scenario of RUN) test(scenario.name, () => run(scenario));
