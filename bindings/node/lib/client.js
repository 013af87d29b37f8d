'use strict';
// AppStoreServerAPIClient: Apple's constructor, every endpoint method (generated/endpoints.js), and Apple's
// overridable makeFetchRequest hook, as a thin loop over the core's call driver (appstore_api_call_*): the driver
// decides everything between two sends (the rate-limit slot of each attempt, a fresh bearer token per attempt,
// retries and Retry-After, the Sandbox fallback of lookups and its error text, the following pages); this loop sends
// with fetch (or the injected fetch, or an overridden makeFetchRequest), waits on timers, and reads the answers.
// answer() tells which environment answered.
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native.js');
const args = require('./args.js');
const { convert, guard } = require('./errors.js');
const { AppStoreServerAPIEndpoints } = require('../generated/endpoints.js');
const { API_ACTION, ENVIRONMENT_CODES, Environment } = require('../generated/spec.js');
const { classify, within, readBody, refuseRedirected, API_BODY_LIMIT } = require('./transport.js');
const { redact, isPem } = require('./redact.js');
const { checkSigningKey, newKey, isSigner, syncRefused } = require('./signer.js');

const WHERE = 'AppStoreServerAPIClient';
// Apple's base URLs, for Apple's urlBase property and the path makeFetchRequest receives: the core's
// (appstore_api_base_url), their one home.
const BASE_URLS = Object.fromEntries([Environment.PRODUCTION, Environment.SANDBOX, Environment.LOCAL_TESTING]
  .map((e) => [e, native.api_base_url(ENVIRONMENT_CODES[e], 0)]));
const ENVIRONMENT_BY_CODE = Object.fromEntries(Object.entries(ENVIRONMENT_CODES).map(([name, code]) => [code, name]));
const MAX_TIMER_MS = 2147483647; // setTimeout's longest delay

const CHECKS = {
  string: (v) => typeof v === 'string',
  integer: (v) => (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint',
  boolean: (v) => typeof v === 'boolean',
  object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array),
};
const WANT = { string: 'a string', integer: 'an integer', boolean: 'a boolean', object: 'an object' };

function check(endpoint, name, value, kind) {
  const list = kind.endsWith('[]');
  const base = list ? kind.slice(0, -2) : kind;
  const ok = list ? Array.isArray(value) && value.every(CHECKS[base]) : CHECKS[base](value);
  if (!ok) throw args.fail(endpoint, name, list ? `an array of ${WANT[base].replace(/^an? /, '')}s` : WANT[base], value);
}

// The environment that answered, for answer(): the endpoint methods keep Apple's return values, so the environment
// travels beside them in the async context of the answer() call (concurrent calls each have their own).
const answers = new AsyncLocalStorage();

const ENDPOINT_METHOD_NAMES = new Set(Object.getOwnPropertyNames(AppStoreServerAPIEndpoints.prototype)
  .filter((n) => n !== 'constructor'));

/** options.rateLimit: {maxWaitMs, sharePercent} checked, or null when off. */
function rateLimitOption(v) {
  if (v == null || v === false) return null;
  args.object(WHERE, 'options.rateLimit', v);
  for (const k of Object.keys(v)) {
    if (k !== 'maxWaitMs' && k !== 'sharePercent')
      throw new TypeError(`${WHERE}: options.rateLimit.${k} is not an option (known: maxWaitMs, sharePercent)`);
  }
  const maxWaitMs = args.integer(WHERE, 'options.rateLimit.maxWaitMs', v.maxWaitMs);
  const sharePercent = v.sharePercent == null ? 100 : args.integer(WHERE, 'options.rateLimit.sharePercent', v.sharePercent);
  if (maxWaitMs < 0 || maxWaitMs > 0xffffffff)
    throw new RangeError(`${WHERE}: options.rateLimit.maxWaitMs must be 0 to 4294967295 (got ${maxWaitMs})`);
  if (sharePercent < 1 || sharePercent > 100)
    throw new RangeError(`${WHERE}: options.rateLimit.sharePercent must be 1 to 100 (got ${sharePercent})`);
  return { maxWaitMs: Number(maxWaitMs), sharePercent: Number(sharePercent) };
}

// The order of Apple's makeRequest headers: User-Agent, Authorization, Accept, then Content-Type (with a body).
const HEADER_ORDER = ['User-Agent', 'Authorization', 'Accept', 'Content-Type'];
const headerRank = (name) => {
  const i = HEADER_ORDER.indexOf(name);
  return i < 0 ? HEADER_ORDER.length : i;
};

/**
 * A request handle as plain values, with the environment it goes to. The headers are an object in the order of
 * Apple's makeRequest (any other header the library adds after them).
 */
function readRequest(h, environmentOf) {
  const pairs = [];
  const n = native.api_request_header_count(h);
  for (let i = 0; i < n; i++) pairs.push([native.api_request_header_name(h, i), native.api_request_header_value(h, i)]);
  pairs.sort((a, b) => headerRank(a[0]) - headerRank(b[0])); // stable: the library's order among the others
  const headers = Object.fromEntries(pairs);
  return {
    method: native.api_request_method(h),
    url: native.api_request_url(h),
    headers,
    body: native.api_request_body(h),
    timeoutMs: native.api_request_timeout_ms(h),
    environment: environmentOf(native.api_request_url(h)),
  };
}

/**
 * status, "Name: value\r\n" header lines and body bytes of a fetch Response (WHATWG, node-fetch, or look-alike); the
 * body bounded by APPSTORE_LIMIT_API_RESPONSE_BYTES; signal (the exchange's deadline) stops the read. A 3xx is
 * passed on as it is (the library reports it); an answer that came through a followed redirect is refused.
 */
async function readResponse(res, signal) {
  if (!res || typeof res.status !== 'number') throw new TypeError(`${WHERE}: makeFetchRequest must resolve to a Response`);
  refuseRedirected(res);
  let headers = '';
  if (res.headers && typeof res.headers.forEach === 'function') {
    res.headers.forEach((value, name) => {
      headers += `${name}: ${value}\r\n`;
    });
  } else if (res.headers && typeof res.headers === 'object') {
    for (const [name, value] of Object.entries(res.headers)) headers += `${name}: ${value}\r\n`;
  }
  const body = await readBody(res, API_BODY_LIMIT, signal);
  return { status: res.status, headers, body };
}

class AppStoreServerAPIClient extends AppStoreServerAPIEndpoints {
  /**
   * Apple's constructor: (signingKey: .p8 PEM text or an ExternalSigner, keyId, issuerId, bundleId, environment),
   * plus options:
   * {fetch, baseUrl, timeoutMs, maxRetries, initialBackoffMs, maxBackoffMs, sandboxFallback, sandboxBaseUrl,
   * rateLimit: {maxWaitMs, sharePercent}}.
   */
  constructor(signingKey, keyId, issuerId, bundleId, environment, options) {
    super();
    checkSigningKey(WHERE, signingKey);
    args.string(WHERE, 'keyId', keyId);
    args.string(WHERE, 'issuerId', issuerId);
    args.string(WHERE, 'bundleId', bundleId);
    if (!Object.prototype.hasOwnProperty.call(ENVIRONMENT_CODES, environment))
      throw args.fail(WHERE, 'environment', `an Environment (${Object.values(Environment).join(', ')})`, environment);
    if (environment === Environment.XCODE) throw new Error('Xcode is not a supported environment for an AppStoreServerAPIClient');
    const opts = args.options(WHERE, options);
    if (opts.fetch != null && typeof opts.fetch !== 'function') throw args.fail(WHERE, 'options.fetch', 'a function', opts.fetch);
    if (opts.baseUrl != null) args.string(WHERE, 'options.baseUrl', opts.baseUrl);
    for (const k of ['timeoutMs', 'maxRetries', 'initialBackoffMs', 'maxBackoffMs'])
      if (opts[k] != null) args.integer(WHERE, `options.${k}`, opts[k]);
    const sandboxFallback = opts.sandboxFallback == null ? false : args.boolean(WHERE, 'options.sandboxFallback', opts.sandboxFallback);
    const sandboxBaseUrl = args.optionalString(WHERE, 'options.sandboxBaseUrl', opts.sandboxBaseUrl);
    if (sandboxBaseUrl !== null && !sandboxFallback)
      throw new TypeError(`${WHERE}: options.sandboxBaseUrl is used only by the Sandbox fallback: set options.sandboxFallback: true`);
    const rateLimit = rateLimitOption(opts.rateLimit);

    const key = newKey(WHERE, signingKey, keyId, issuerId, bundleId);
    const o = guard('config', () => native.api_client_options_new());
    try {
      guard('config', () => {
        if (opts.timeoutMs != null) native.api_client_options_set_timeout_ms(o, opts.timeoutMs);
        if (opts.maxRetries) {
          native.api_client_options_set_retry(o, opts.maxRetries, opts.initialBackoffMs != null ? opts.initialBackoffMs : 500,
            opts.maxBackoffMs != null ? opts.maxBackoffMs : 30000);
        }
        if (opts.baseUrl != null) native.api_client_options_set_base_url(o, opts.baseUrl);
        // The library refuses the fallback on a client that is not Production (CONFIGURATION_ERROR, below).
        if (sandboxFallback) native.api_client_options_set_sandbox_fallback(o, 1, sandboxBaseUrl);
        if (rateLimit) native.api_client_options_set_rate_limit(o, 1, rateLimit.maxWaitMs, rateLimit.sharePercent);
      });
      // With an ExternalSigner the client's handle keeps the signer's bridge too (the addon: a handle made from the
      // key's), so it may outlive the key's handle.
      Object.defineProperty(this, '_client', { value: guard('config', () => native.api_client_new(key, ENVIRONMENT_CODES[environment], o)) });
    } catch (e) {
      native.close(key);
      throw e;
    } finally {
      native.close(o);
    }
    Object.defineProperty(this, '_key', { value: key });
    Object.defineProperty(this, '_external', { value: isSigner(signingKey) });
    Object.defineProperty(this, '_fetch', { value: opts.fetch || null });
    Object.defineProperty(this, '_environment', { value: environment });
    this.urlBase = opts.baseUrl != null ? opts.baseUrl.replace(/\/+$/, '') : BASE_URLS[environment];
    // Where the fallback sends (null without it): requests there are Sandbox's (request.environment).
    Object.defineProperty(this, '_sandboxUrlBase', {
      value: !sandboxFallback ? null : sandboxBaseUrl !== null ? sandboxBaseUrl.replace(/\/+$/, '') : BASE_URLS[Environment.SANDBOX],
    });
  }

  /**
   * An endpoint method's result with the environment that answered: `await client.answer('getTransactionInfo', id)`
   * resolves to {value, environment} (Environment.SANDBOX when a Production lookup fell back). A `...Pages` method
   * gives an async iterator of {value, environment}, one per page.
   */
  answer(method, ...argv) {
    if (typeof method !== 'string' || !ENDPOINT_METHOD_NAMES.has(method))
      throw args.fail(`${WHERE}.answer`, 'method', 'the name of an endpoint method (e.g. "getTransactionInfo")', method);
    if (method.endsWith('Pages')) return this._answerPages(method, argv);
    const sink = {};
    return answers.run(sink, async () => {
      const value = await this[method](...argv);
      return { value, environment: sink.environment };
    });
  }

  async *_answerPages(method, argv) {
    const sink = {};
    const pages = answers.run(sink, () => this[method](...argv));
    for (;;) {
      // Each step in the sink's context, so the page's environment is recorded there.
      const step = await answers.run(sink, () => pages.next());
      if (step.done) return;
      yield { value: step.value, environment: sink.environment };
    }
  }

  /**
   * Apple's hook: sends one request and resolves to a fetch Response. Override it to use other HTTP; the default
   * uses the injected fetch or the global one, with the client's timeout, and never follows a redirect (the App
   * Store Server API sends none: a 3xx goes to the library, which reports it). An override must not follow them
   * either: an answer that came through a redirect is refused.
   */
  async makeFetchRequest(path, parsedQueryParameters, method, requestBody, headers, request) {
    const f = this._fetch || globalThis.fetch;
    const query = parsedQueryParameters ? parsedQueryParameters.toString() : '';
    const url = request && request.url ? request.url : this.urlBase + path + (query ? `?${query}` : '');
    return f(url, {
      method,
      headers,
      body: requestBody,
      redirect: 'manual',
      signal: request && request.timeoutMs ? AbortSignal.timeout(request.timeoutMs) : undefined,
    });
  }

  /** An App Store Server API bearer token (ES256), as every request gets a fresh one. With an ExternalSigner: use
   *  createBearerTokenAsync (this call would block the thread the signer runs on). */
  createBearerToken() {
    if (this._external) throw syncRefused(`${WHERE}.createBearerToken`, 'createBearerTokenAsync');
    try {
      return native.signing_key_create_api_token(this._key, 0, 0);
    } catch (e) {
      throw convert(e, 'config');
    }
  }

  /** createBearerToken on the libuv thread pool (a Promise); works with an ExternalSigner. */
  createBearerTokenAsync() {
    try {
      return native.async.signing_key_create_api_token(this._key, 0, 0);
    } catch (e) {
      return Promise.reject(convert(e, 'config'));
    }
  }

  /** Frees the library's client and key now; later calls throw. With an ExternalSigner, requests still waiting for
   *  their signature fail (signer_failed). */
  close() {
    if (this._external) native.signerClose(this._key);
    native.close(this._client);
    native.close(this._key);
  }

  // ---- what the generated endpoint methods call --------------------------------------------------------------

  _arg(endpoint, params, key, value, kind, optional) {
    if (value == null) {
      if (optional) return;
      throw new TypeError(`${endpoint}: ${key} is required`);
    }
    check(endpoint, key, value, kind);
    params[key] = value;
  }

  _bytes(endpoint, params, key, value, optional) {
    if (value == null) {
      if (optional) return;
      throw new TypeError(`${endpoint}: ${key} is required`);
    }
    const b = args.bytes(endpoint, key, value);
    params[key] = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
  }

  _queryModel(endpoint, params, name, value, fields) {
    if (value == null) return;
    args.object(endpoint, name, value);
    const known = new Map(fields);
    for (const k of Object.keys(value)) {
      if (!known.has(k)) throw new TypeError(`${endpoint}: ${name}.${k} is not a filter of this endpoint (known: ${[...known.keys()].join(', ')})`);
    }
    for (const [field, kind] of fields) {
      const v = value[field];
      if (v == null) continue;
      check(endpoint, `${name}.${field}`, v, kind);
      params[field] = v;
    }
  }

  _variant(method, param, value, variants) {
    if (!Object.prototype.hasOwnProperty.call(variants, value))
      throw args.fail(method, param, `one of ${Object.keys(variants).join(', ')}`, value);
    return variants[value];
  }

  // ---- the call loop: the core's call driver (appstore_api_call_*) decides, this loop moves bytes and waits ----

  /** The clock the driver is given (milliseconds since 1970); tests replace it. */
  _nowMs() {
    return Date.now();
  }

  /** Waits ms on a timer (the event loop keeps running); tests replace it. */
  async _sleep(ms) {
    for (let left = ms; left > 0; left -= MAX_TIMER_MS) await new Promise((r) => setTimeout(r, Math.min(left, MAX_TIMER_MS)));
  }

  async _call(endpoint, params, hasResponse) {
    for await (const value of this._pages(endpoint, params)) return hasResponse ? value : undefined;
  }

  /**
   * One endpoint call, every page of it for a ...Pages iterator: the driver says SEND (the request goes through
   * Apple's makeFetchRequest hook, the answer or the transport failure back to the driver), WAIT (a rate-limit slot
   * or a retry's delay) or DONE (a page, and the environment that answered it for answer()); its error is the call's.
   */
  async *_pages(endpoint, params) {
    const call = guard('api', () => native.api_call_new(this._client, endpoint, JSON.stringify(params)));
    let failure = null; // what makeFetchRequest threw: the cause of the transport error the driver makes of it
    try {
      for (;;) {
        const step = await native.async.api_call_next(call, this._nowMs()).catch((e) => {
          throw failure ? Object.assign(e, { cause: failure }) : e;
        });
        if (step.action === API_ACTION.SEND) {
          const { req, apple } = this._readRequest(call);
          let answer;
          try {
            // The timeout bounds the whole exchange, the body's read included (and a makeFetchRequest that ignores it).
            answer = await within(req.timeoutMs, async (signal) => readResponse(await this.makeFetchRequest(...apple, req), signal));
          } catch (e) {
            if (e instanceof TypeError && /makeFetchRequest/.test(e.message)) throw e;
            // The URL holds the caller's base URL and arguments, and fetch's message may too: no key is shown.
            failure = isPem(e && e.message) ? new Error(redact(e.message)) : e;
            native.api_call_receive_failure(call, classify(e), redact(`${req.method} ${req.url}: ${e && e.message ? e.message : e}`));
            continue;
          }
          guard('api', () => native.api_call_receive(call, answer.status, answer.headers, answer.body, this._nowMs()));
        } else if (step.action === API_ACTION.WAIT) {
          await this._sleep(Number(step.waitMs));
        } else {
          const done = native.api_call_answer(call);
          const sink = answers.getStore();
          if (sink) sink.environment = ENVIRONMENT_BY_CODE[done.environment];
          yield JSON.parse(done.json);
          if (native.api_call_has_next_page(call) !== 1) return;
        }
      }
    } finally {
      native.close(call);
    }
  }

  /**
   * The request of a SEND as plain values (`req`: headers in the order of Apple's makeRequest; environment: Sandbox
   * for a request to the fallback's Sandbox base URL, else the client's) and `apple`: the first five arguments of
   * Apple's makeFetchRequest (path without base URL and query, URLSearchParams, method, body, headers).
   */
  _readRequest(call) {
    const h = native.api_call_request(call);
    try {
      const sandbox = (url) => this._sandboxUrlBase !== null && url.startsWith(`${this._sandboxUrlBase}/`) &&
        !url.startsWith(`${this.urlBase}/`);
      const req = readRequest(h, (url) => (sandbox(url) ? Environment.SANDBOX : this._environment));
      const base = sandbox(req.url) ? this._sandboxUrlBase : this.urlBase;
      const q = req.url.indexOf('?');
      const pathAndBase = q < 0 ? req.url : req.url.slice(0, q);
      const path = pathAndBase.startsWith(base) ? pathAndBase.slice(base.length) : new URL(pathAndBase).pathname;
      const isJson = (req.headers['Content-Type'] || '').startsWith('application/json');
      const body = req.body.length === 0 ? undefined : isJson ? req.body.toString('utf8') : req.body;
      return { req, apple: [path, new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1)), req.method, body, req.headers] };
    } finally {
      native.close(h);
    }
  }
}

module.exports = { AppStoreServerAPIClient };
