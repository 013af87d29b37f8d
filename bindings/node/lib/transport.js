'use strict';
// Host transports for online (OCSP) checks: the library's synchronous transport callback runs on a libuv pool
// thread (inside a Promise verification) and waits while the JS thread performs the exchange with fetch (or a
// transport the caller supplies). See docs/node.md, "Online checks".
const native = require('./native.js');
const { TRANSPORT_RESULT } = require('../generated/spec.js');

const MAX_BODY = 64 * 1024 * 1024;

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

/** The default transport: the global fetch (or the one given), bounded by the exchange's timeout. */
function fetchTransport(fetchImpl) {
  return async function fetchExchange(request) {
    const f = fetchImpl || globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('appstoreserver: no fetch available for online checks');
    const res = await f(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    refuseRedirected(res);
    const headers = [];
    if (res.headers && typeof res.headers.forEach === 'function') res.headers.forEach((v, k) => headers.push([k, v]));
    const length = Number(res.headers && res.headers.get ? res.headers.get('content-length') : NaN);
    if (length > MAX_BODY) throw new Error(`response body of ${length} bytes exceeds ${MAX_BODY}`);
    const body = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, headers, body };
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
  if (b instanceof Uint8Array || b instanceof ArrayBuffer) return b;
  if (typeof b === 'string') return Buffer.from(b, 'utf8');
  throw new TypeError('a transport response body must be a Uint8Array, ArrayBuffer or string');
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

module.exports = { createTransport, fetchTransport, classify, refuseRedirected };
