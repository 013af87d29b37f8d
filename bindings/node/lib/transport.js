'use strict';
// Host transports for online (OCSP) checks: the library's synchronous transport callback runs on a libuv pool
// thread (inside a Promise verification) and waits while the JS thread performs the exchange with fetch (or a
// transport the caller supplies). See docs/node.md, "Online checks". The HTTP rules every Node transport keeps
// (the API client's too): no redirect is followed, bodies are bounded by the library's limits while they are read,
// and the timeout is a deadline for the whole exchange.
const native = require('./native.js');
const { TRANSPORT_RESULT, LIMITS } = require('../generated/spec.js');

// The library's limits on response bodies (counted after content decoding), with their C names for messages.
const API_BODY_LIMIT = { bytes: LIMITS.API_RESPONSE_BYTES, name: 'APPSTORE_LIMIT_API_RESPONSE_BYTES' };
const OCSP_BODY_LIMIT = { bytes: LIMITS.OCSP_RESPONSE_BYTES, name: 'APPSTORE_LIMIT_OCSP_RESPONSE_BYTES' };

function tooLarge(limit) {
  const e = new Error(`the response body is larger than ${limit.name} (${limit.bytes} bytes after content decoding); ` +
    'reading stopped there');
  e.code = 'ERR_APPSTORE_BODY_TOO_LARGE';
  return e;
}

/**
 * run(signal) with a deadline for all of it (connect, headers and body): after ms the result is a TimeoutError and
 * signal aborts, which stops a body still being read. ms 0: no deadline (signal null).
 */
function within(ms, run) {
  if (!ms) return run(null);
  const ac = new AbortController();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      const e = new DOMException(`no complete answer within ${ms} ms`, 'TimeoutError');
      ac.abort(e);
      reject(e);
    }, ms);
    Promise.resolve().then(() => run(ac.signal)).then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

function header(res, name) {
  const h = res && res.headers;
  if (!h) return null;
  if (typeof h.get === 'function') return h.get(name);
  const key = Object.keys(h).find((k) => k.toLowerCase() === name);
  return key === undefined ? null : String(h[key]);
}

/** Drops a body nobody will read (closing its connection). */
function discard(res) {
  const b = res && res.body;
  try {
    if (b && typeof b.cancel === 'function' && !b.locked) b.cancel().catch(() => {});
    else if (b && typeof b.destroy === 'function') b.destroy();
  } catch {
    // nothing to release
  }
}

/**
 * A fetch answer that came through a redirect is refused: the transports never follow one (redirect: 'manual'
 * hands the 3xx itself to the library), so this is a fetch or makeFetchRequest that followed it anyway, or one that
 * hides the 3xx (an opaque redirect).
 */
function refuseRedirected(res) {
  if (res && (res.redirected === true || res.type === 'opaqueredirect')) {
    discard(res);
    throw new Error('the answer came through a redirect (Apple\'s servers send none, and none is followed): the ' +
      'fetch used must not follow redirects (redirect: \'manual\')');
  }
}

/**
 * The body of a fetch answer (WHATWG stream, or node-fetch's Node stream), counted while it is read: past
 * limit.bytes the stream is cancelled (the connection closes) and tooLarge is thrown, so no more than the limit and
 * one chunk is ever held. fetch inflates gzip in the stream, so decompressed bytes are counted. signal aborting
 * cancels the read. Look-alikes without a stream are read whole by their own methods, then checked.
 */
async function readBody(res, limit, signal) {
  const encoding = (header(res, 'content-encoding') || 'identity').trim().toLowerCase();
  const declared = Number(header(res, 'content-length'));
  if ((signal && signal.aborted) || (encoding === 'identity' && declared > limit.bytes)) {
    discard(res);
    throw signal && signal.aborted ? signal.reason : tooLarge(limit);
  }
  const chunks = [];
  let total = 0;
  const take = (chunk) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    total += bytes.byteLength;
    if (total > limit.bytes) return false;
    chunks.push(bytes);
    return true;
  };
  const body = res.body;
  if (body && typeof body.getReader === 'function') {
    const reader = body.getReader();
    const stop = () => reader.cancel(signal.reason).catch(() => {});
    if (signal) signal.addEventListener('abort', stop, { once: true });
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (signal && signal.aborted) throw signal.reason;
        if (done) break;
        if (!take(value)) {
          reader.cancel().catch(() => {});
          throw tooLarge(limit);
        }
      }
    } finally {
      if (signal) signal.removeEventListener('abort', stop);
    }
  } else if (body && typeof body[Symbol.asyncIterator] === 'function') {
    const stop = () => typeof body.destroy === 'function' && body.destroy(signal.reason);
    if (signal) signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const chunk of body) {
        if (!take(chunk)) {
          if (typeof body.destroy === 'function') body.destroy();
          throw tooLarge(limit);
        }
      }
    } finally {
      if (signal) signal.removeEventListener('abort', stop);
    }
  } else {
    let whole;
    if (typeof res.arrayBuffer === 'function') whole = Buffer.from(await res.arrayBuffer());
    else if (typeof res.text === 'function') whole = Buffer.from(await res.text(), 'utf8');
    else if (typeof res.json === 'function') whole = Buffer.from(JSON.stringify(await res.json()), 'utf8');
    else whole = Buffer.alloc(0);
    if (!take(whole)) throw tooLarge(limit);
  }
  return Buffer.concat(chunks, total);
}

/** The default transport: the global fetch (or the one given), redirects not followed, the body bounded by
 *  APPSTORE_LIMIT_OCSP_RESPONSE_BYTES, the exchange's timeout a deadline for all of it. */
function fetchTransport(fetchImpl) {
  return function fetchExchange(request) {
    const f = fetchImpl || globalThis.fetch;
    if (typeof f !== 'function') return Promise.reject(new TypeError('appstoreserver: no fetch available for online checks'));
    return within(request.timeoutMs, async (signal) => {
      const res = await f(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body,
        redirect: 'manual',
        signal: signal || undefined,
      });
      refuseRedirected(res);
      const headers = toHeaderPairs(res.headers);
      const body = await readBody(res, OCSP_BODY_LIMIT, signal);
      return { status: res.status, headers, body };
    });
  };
}

/** TRANSPORT_RESULT for an exception of a transport: timeouts, unreachable hosts, anything else. */
function classify(err) {
  const name = err && err.name;
  if (name === 'TimeoutError' || name === 'AbortError') return TRANSPORT_RESULT.TIMEOUT;
  const code = err && ((err.cause && err.cause.code) || err.code);
  if (['UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT'].includes(code)) return TRANSPORT_RESULT.TIMEOUT;
  if (['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ECONNRESET'].includes(code))
    return TRANSPORT_RESULT.UNREACHABLE;
  return TRANSPORT_RESULT.FAILED;
}

function toHeaderPairs(h) {
  if (!h) return [];
  if (Array.isArray(h)) return h.map(([k, v]) => [String(k), String(v)]);
  if (typeof h.forEach === 'function' && typeof h.get === 'function') {
    const out = [];
    h.forEach((v, k) => out.push([k, v]));
    return out;
  }
  return Object.entries(h).map(([k, v]) => [k, String(v)]);
}

function toBytes(b) {
  if (b == null) return null;
  const bytes = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  if (!(bytes instanceof Uint8Array || bytes instanceof ArrayBuffer))
    throw new TypeError('a transport response body must be a Uint8Array, ArrayBuffer or string');
  // A transport of the caller's read the body already; at least it is not copied into the exchange.
  if (bytes.byteLength > OCSP_BODY_LIMIT.bytes) throw tooLarge(OCSP_BODY_LIMIT);
  return bytes;
}

/** A transport handle whose exchanges run `transport(request) -> {status, headers, body}` on this thread. */
function createTransport(transport) {
  const dispatch = (request, exchange) => {
    let p;
    try {
      p = Promise.resolve(transport(request));
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then((res) => {
      if (!res || typeof res.status !== 'number') throw new TypeError('a transport must resolve to {status, headers, body}');
      native.transportRespond(exchange, TRANSPORT_RESULT.OK, res.status, toHeaderPairs(res.headers), toBytes(res.body));
    }).catch((err) => {
      try {
        native.transportRespond(exchange, classify(err), 0, null, null);
      } catch {
        // the exchange was answered already
      }
    });
  };
  return native.transportNew(dispatch);
}

module.exports = { createTransport, fetchTransport, classify, within, readBody, refuseRedirected, API_BODY_LIMIT };
