'use strict';
// AppStoreServerAPIClient: Apple's constructor, every endpoint method (generated/endpoints.js), and Apple's
// overridable makeFetchRequest hook, over the library's sans-I/O request builder and response decoder. HTTP is the
// global fetch (or an injected one); retries follow the library's decision (appstore_api_client_retry_delay_ms,
// Retry-After included); pages are async iterators. Beyond Apple's library, opt-in: the Sandbox fallback of lookups
// after Production's transactionIdNotFound or HTTP 401 (appstore_api_client_falls_back / _build_fallback_request)
// and the client-side rate limit (appstore_api_client_reserve before every attempt); answer() tells which
// environment answered.
const { AsyncLocalStorage } = require('node:async_hooks');
const native = require('./native.js');
const args = require('./args.js');
const { convert, guard, isNative, AppStoreServerError } = require('./errors.js');
const { AppStoreServerAPIEndpoints } = require('../generated/endpoints.js');
const { ENVIRONMENT_CODES, Environment, TRANSPORT_RESULT } = require('../generated/spec.js');
const { classify, within, readBody, refuseRedirected, API_BODY_LIMIT } = require('./transport.js');
const { redact, isPem } = require('./redact.js');
const { checkSigningKey, newKey, isSigner, syncRefused } = require('./signer.js');

const WHERE = 'AppStoreServerAPIClient';
const BASE_URLS = {
  [Environment.PRODUCTION]: 'https://api.storekit.apple.com',
  [Environment.SANDBOX]: 'https://api.storekit-sandbox.apple.com',
  [Environment.LOCAL_TESTING]: 'https://local-testing-base-url',
};

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

// The Swift core's wording when a lookup fails in Sandbox after Production did not know the id, or refused the
// call with HTTP 401 (an app never released in Production).
const NEITHER = 'Production answered transactionIdNotFound (4040010); then Sandbox: ';
const NEITHER_401 = 'Production answered HTTP 401 (an app never released there); then Sandbox: ';
const neither = (production) => (production.httpStatus === 401 && Number(production.apiErrorCode) !== 4040010
  ? NEITHER_401 : NEITHER);

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

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// The order of Apple's makeRequest headers: User-Agent, Authorization, Accept, then Content-Type (with a body).
const HEADER_ORDER = ['User-Agent', 'Authorization', 'Accept', 'Content-Type'];
const headerRank = (name) => {
  const i = HEADER_ORDER.indexOf(name);
  return i < 0 ? HEADER_ORDER.length : i;
};

/**
 * The built request as plain values; environment: where it goes (Sandbox for a fallback request). The headers are
 * an object in the order of Apple's makeRequest (any other header the library adds after them).
 */
function readRequest(h, environment) {
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
    environment,
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
    Object.defineProperty(this, '_sandboxUrlBase', {
      value: sandboxBaseUrl !== null ? sandboxBaseUrl.replace(/\/+$/, '') : BASE_URLS[Environment.SANDBOX],
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

  async _call(endpoint, params, hasResponse) {
    const { value, environment } = await this._exchange(endpoint, params, null);
    const sink = answers.getStore();
    if (sink) sink.environment = environment;
    return hasResponse ? value : undefined;
  }

  /**
   * One endpoint call: the client's environment (with retries), then, when the library says the final error calls
   * for it, the Sandbox fallback (with retries); {value, environment}. environment SANDBOX sends to the fallback's
   * Sandbox directly (the later pages of a lookup that fell back).
   */
  async _exchange(endpoint, params, environment) {
    const paramsJson = JSON.stringify(params);
    if (environment === Environment.SANDBOX && environment !== this._environment) {
      try {
        return { value: await this._attempts(endpoint, paramsJson, true), environment };
      } catch (e) {
        throw convert(e, 'api');
      }
    }
    let production;
    try {
      return { value: await this._attempts(endpoint, paramsJson, false), environment: this._environment };
    } catch (e) {
      // The library decides (fallback on, a lookup, Production's transactionIdNotFound or HTTP 401); errors made
      // here in JS (transport failures) have no handle and never fall back.
      if (!isNative(e) || !e.handle || native.api_client_falls_back(this._client, endpoint, e.handle) !== 1)
        throw convert(e, 'api');
      production = e;
    }
    try {
      return { value: await this._attempts(endpoint, paramsJson, true), environment: Environment.SANDBOX };
    } catch (e) {
      const err = convert(e, 'api');
      if (err instanceof Error) err.message = neither(production) + err.message;
      throw err;
    }
  }

  /**
   * The next attempt's request, built (fresh token) and admitted by the rate limit: reserve before every attempt;
   * a delay is awaited on a timer (never blocking the event loop), then the request is built again so its token is
   * fresh however long the wait (the library's own call also waits before building). A refusal (RATE_LIMITED /
   * local_rate_limit) is thrown as the library's error; nothing is sent.
   */
  async _request(endpoint, paramsJson, fallback) {
    const build = () => (fallback ? native.async.api_client_build_fallback_request(this._client, endpoint, paramsJson)
      : native.async.api_client_build_request(this._client, endpoint, paramsJson));
    let handle = await build();
    try {
      const delay = Number(native.api_client_reserve(this._client, handle));
      if (delay > 0) {
        native.close(handle);
        handle = null;
        await sleep(delay);
        handle = await build();
      }
      return readRequest(handle, fallback ? Environment.SANDBOX : this._environment);
    } finally {
      if (handle) native.close(handle);
    }
  }

  /**
   * Sends one environment's request until it succeeds or the library's retry decision says stop; resolves to the
   * decoded value, rejects with the last error (the library's error object when it has one, for the fallback decision).
   */
  async _attempts(endpoint, paramsJson, fallback) {
    const base = fallback ? this._sandboxUrlBase : this.urlBase;
    for (let attempt = 1; ; attempt++) {
      const req = await this._request(endpoint, paramsJson, fallback);
      const q = req.url.indexOf('?');
      const pathAndBase = q < 0 ? req.url : req.url.slice(0, q);
      const path = pathAndBase.startsWith(base) ? pathAndBase.slice(base.length) : new URL(pathAndBase).pathname;
      const query = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
      const isJson = (req.headers['Content-Type'] || '').startsWith('application/json');
      const body = req.body.length === 0 ? undefined : isJson ? req.body.toString('utf8') : req.body;
      let answer;
      try {
        // The timeout bounds the whole exchange, the body's read included (and a makeFetchRequest that ignores it).
        answer = await within(req.timeoutMs, async (signal) =>
          readResponse(await this.makeFetchRequest(path, query, req.method, body, req.headers, req), signal));
      } catch (e) {
        if (e instanceof TypeError && /makeFetchRequest/.test(e.message)) throw e;
        const result = classify(e);
        const reason = result === TRANSPORT_RESULT.TIMEOUT ? ['transport_timeout', 67]
          : result === TRANSPORT_RESULT.UNREACHABLE ? ['transport_unreachable', 68] : ['transport_failed', 69];
        // The URL holds the caller's base URL and arguments, and fetch's message may too: no key is shown.
        const err = new AppStoreServerError(redact(`${endpoint}: ${req.method} ${req.url}: ${e && e.message ? e.message : e}`),
          { statusName: 'TRANSPORT_ERROR', status: 21, reasonName: reason[0], reason: reason[1] });
        err.cause = isPem(e && e.message) ? new Error(redact(e.message)) : e;
        throw err;
      }
      try {
        return await native.async.api_client_decode_response(this._client, endpoint, answer.status, answer.headers,
          answer.body);
      } catch (e) {
        if (isNative(e) && e.handle) {
          const delay = native.api_client_retry_delay_ms(this._client, e.handle, attempt);
          if (delay >= 0) {
            await sleep(Number(delay));
            continue;
          }
        }
        throw e;
      }
    }
  }

  async *_pages(endpoint, params, pageParam, field) {
    let current = params;
    let environment = null; // after the first page: the environment that answered it, for every later page
    for (;;) {
      const a = await this._exchange(endpoint, current, environment);
      environment = a.environment;
      const sink = answers.getStore();
      if (sink) sink.environment = environment;
      const page = a.value;
      yield page;
      if (!page || !page.hasMore || page[field] == null) return;
      current = { ...params, [pageParam]: page[field] };
    }
  }
}

module.exports = { AppStoreServerAPIClient };
