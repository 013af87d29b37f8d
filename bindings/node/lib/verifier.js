'use strict';
// SignedDataVerifier: Apple's constructor and verify methods (generated/verifier.js) on the library's verifier.
const native = require('./native.js');
const args = require('./args.js');
const { convert, guard, isNative, detail, AppStoreServerError, VerificationException, appleVerificationStatus } = require('./errors.js');
const { SignedDataVerifierOperations } = require('../generated/verifier.js');
const { ENVIRONMENT_CODES, Environment } = require('../generated/spec.js');
const { createTransport, fetchTransport } = require('./transport.js');

const WHERE = 'SignedDataVerifier';

/**
 * The failure of every verification by a verifier without roots. Apple's Node library takes an empty list of roots
 * and fails each verification of signed data in its chain check (no root to chain to: VERIFICATION_FAILURE); the
 * library refuses a Sandbox or Production verifier without roots (CONFIGURATION_ERROR / no_trust_anchor), so such a
 * verifier has no library handle and fails here, with the library's status and reason for it.
 */
function noRootsFailure(environment) {
  const d = detail('VERIFICATION_FAILURE', 'no_trust_anchor', {
    message: `${WHERE}: no root certificates (appleRootCertificates is empty): signed data of the ${environment} ` +
      'environment cannot be verified',
  });
  return new VerificationException(appleVerificationStatus(d), undefined, d);
}

function isNoTrustAnchor(e) {
  return isNative(e) && e.statusName === 'CONFIGURATION_ERROR' && e.reasonName === 'no_trust_anchor';
}

/** A root as given: DER bytes or PEM text with one or more certificates (the library reads both). */
function rootDer(v, i) {
  return args.bytes(WHERE, `appleRootCertificates[${i}]`, v);
}

// Online verifications wait on a pool thread for the JS thread's fetch. Fetch may itself need the pool (DNS
// lookups run there), so at most poolSize - 1 online verifications are in flight; the others queue here.
const POOL_SIZE = Math.max(1, Number.parseInt(process.env.UV_THREADPOOL_SIZE || '4', 10) || 4);
const ONLINE_LIMIT = Math.max(1, POOL_SIZE - 1);
let onlineInFlight = 0;
const onlineQueue = [];

function acquire() {
  if (onlineInFlight < ONLINE_LIMIT) {
    onlineInFlight++;
    return Promise.resolve();
  }
  return new Promise((resolve) => onlineQueue.push(resolve));
}

function release() {
  const next = onlineQueue.shift();
  if (next) next();
  else onlineInFlight--;
}

class SignedDataVerifier extends SignedDataVerifierOperations {
  /**
   * Apple's constructor: (appleRootCertificates, enableOnlineChecks, environment, bundleId, appAppleId?), plus
   * options: {transport, fetch, ocspTimeoutMs, chainCache: {maxEntries, ttlSeconds}}.
   */
  constructor(appleRootCertificates, enableOnlineChecks, environment, bundleId, appAppleId, options) {
    super();
    if (!Array.isArray(appleRootCertificates)) throw args.fail(WHERE, 'appleRootCertificates', 'an array of Buffers', appleRootCertificates);
    const roots = appleRootCertificates.map(rootDer);
    args.boolean(WHERE, 'enableOnlineChecks', enableOnlineChecks);
    if (!Object.prototype.hasOwnProperty.call(ENVIRONMENT_CODES, environment))
      throw args.fail(WHERE, 'environment', `an Environment (${Object.values(Environment).join(', ')})`, environment);
    args.string(WHERE, 'bundleId', bundleId);
    if (appAppleId != null) args.integer(WHERE, 'appAppleId', appAppleId);
    const opts = args.options(WHERE, options);
    if (opts.transport != null && typeof opts.transport !== 'function')
      throw args.fail(WHERE, 'options.transport', 'a function', opts.transport);
    if (opts.fetch != null && typeof opts.fetch !== 'function') throw args.fail(WHERE, 'options.fetch', 'a function', opts.fetch);
    if (opts.ocspTimeoutMs != null) args.integer(WHERE, 'options.ocspTimeoutMs', opts.ocspTimeoutMs);
    const cache = opts.chainCache == null ? null : args.object(WHERE, 'options.chainCache', opts.chainCache);

    this.rootCertificates = roots;
    this.enableOnlineChecks = enableOnlineChecks;
    this.environment = environment;
    this.bundleId = bundleId;
    this.appAppleId = appAppleId;
    let transport = null;
    const o = guard('config', () => native.verifier_options_new());
    try {
      guard('config', () => {
        for (const der of roots) native.verifier_options_add_root(o, der);
        native.verifier_options_set_bundle_id(o, bundleId);
        if (appAppleId != null) native.verifier_options_set_app_apple_id(o, appAppleId);
        native.verifier_options_set_environment(o, ENVIRONMENT_CODES[environment]);
        native.verifier_options_set_online_checks(o, enableOnlineChecks ? 1 : 0);
        if (cache) native.verifier_options_set_chain_cache(o, cache.maxEntries, cache.ttlSeconds);
        if (enableOnlineChecks) {
          transport = createTransport(opts.transport || fetchTransport(opts.fetch));
          native.verifier_options_set_transport(o, transport, opts.ocspTimeoutMs || 0);
        }
      });
      let handle = null;
      try {
        handle = native.verifier_new(o);
      } catch (e) {
        // Apple's library accepts no roots (every verification then fails); the library checks the roots last, so
        // every other configuration error is still thrown.
        if (!(roots.length === 0 && isNoTrustAnchor(e))) throw convert(e, 'config');
        if (transport) native.close(transport);
      }
      Object.defineProperty(this, '_handle', { value: handle });
      Object.defineProperty(this, '_closed', { value: false, writable: true });
      if (transport && handle) native.retain(this._handle, transport);
    } finally {
      native.close(o);
    }
  }

  /** The failure of a verifier without a library handle (no roots), or null. */
  _withoutHandle(fn) {
    if (this._handle) return null;
    if (this._closed) return new Error(`${fn}: the appstore_verifier handle is closed`);
    return noRootsFailure(this.environment);
  }

  _verify(fn, jws, param) {
    if (typeof jws !== 'string' && !(jws instanceof Uint8Array))
      return Promise.reject(args.fail(WHERE, param, 'a string', jws));
    const failure = this._withoutHandle(fn);
    if (failure) return Promise.reject(failure);
    const hooked = this._hooked(fn);
    const call = () => (hooked ? native.async.verifier_notification_leaving_identity(this._handle, jws)
      : native.async[fn](this._handle, jws));
    if (this.enableOnlineChecks) {
      const p = acquire().then(call)
        .then((value) => { release(); return value; }, (e) => { release(); throw convert(e, 'verify'); });
      return hooked ? p.then((r) => this._checkApp(r)) : p;
    }
    // The pool call resolves with the parsed payload and rejects with the VerificationException (lib/native.js).
    try {
      return hooked ? call().then((r) => this._checkApp(r)) : call();
    } catch (e) {
      return Promise.reject(convert(e, 'verify'));
    }
  }

  /** Whether notifications go through an overridden verifyNotification (a subclass's, or set on the instance). */
  _hooked(fn) {
    return fn === 'verifier_verify_notification' && this.verifyNotification !== SignedDataVerifier.prototype.verifyNotification;
  }

  /** The hook's part of a notification the library verified but for its app: verifyNotification with what it names. */
  _checkApp(r) {
    const id = JSON.parse(r.identityJson);
    this.verifyNotification(id.bundleId, id.appAppleId, id.environment);
    return typeof r.json === 'string' ? JSON.parse(r.json) : r.json;
  }

  /**
   * Checks the app a notification names (Apple's extension point): called by verifyAndDecodeNotification after the
   * signature, the chain and the payload passed, with the bundle id, app Apple ID and environment the notification
   * carries (from data, summary, externalPurchaseToken or appData, in Apple's order; undefined when absent). The
   * default is the library's check; a subclass (or an assignment on the instance, as Apple's tests do) may replace
   * it, e.g. to accept several apps. Throws VerificationException (INVALID_APP_IDENTIFIER, INVALID_ENVIRONMENT).
   */
  verifyNotification(bundleId, appAppleId, environment) {
    const failure = this._withoutHandle('verifier_check_notification_identity');
    if (failure) throw failure;
    if (bundleId != null) args.string(WHERE, 'bundleId', bundleId);
    if (appAppleId != null) args.integer(WHERE, 'appAppleId', appAppleId);
    if (environment != null) args.string(WHERE, 'environment', environment);
    try {
      native.verifier_check_notification_identity(this._handle, bundleId ?? null, appAppleId ?? 0, environment ?? null);
    } catch (e) {
      throw convert(e, 'verify');
    }
  }

  _verifySync(fn, jws, param) {
    args.textOrBytes(WHERE, param, jws);
    const failure = this._withoutHandle(fn);
    if (failure) throw failure;
    if (this.enableOnlineChecks) {
      throw new AppStoreServerError(`${WHERE}: a ...Sync call cannot make online (OCSP) checks: they need this thread ` +
        'for fetch; use the Promise method', detail('CONFIGURATION_ERROR', 'online_checks_unavailable'));
    }
    let json;
    try {
      json = native[this._hooked(fn) ? 'verifier_notification_leaving_identity' : fn](this._handle, jws);
    } catch (e) {
      throw convert(e, 'verify');
    }
    return this._hooked(fn) ? this._checkApp(json) : JSON.parse(json);
  }

  /** Chain cache counters: {hits, misses, entries}. */
  cacheStats() {
    const failure = this._withoutHandle('verifier_cache_stats');
    if (failure instanceof VerificationException) return { hits: 0, misses: 0, entries: 0 };
    if (failure) throw failure;
    return guard('config', () => native.verifier_cache_stats(this._handle));
  }

  /** Frees the library's verifier now (after calls in flight complete); later calls throw. */
  close() {
    this._closed = true;
    if (this._handle) native.close(this._handle);
  }
}

module.exports = { SignedDataVerifier };
