'use strict';
// External signers: a key held outside the process (a KMS or an HSM), given wherever a .p8 key goes (the API client
// and the signature creators). The library builds what is signed, asks the JS signer for the ES256 signature and
// checks it with the signer's public key before use (appstore_signing_key_new_with_signer). The library's callback
// is synchronous and runs on the thread that asked: the Promise methods run on the libuv pool, and the addon's
// signer bridge hands each request to this thread and waits (docs/node.md, "External signers"); a synchronous call
// cannot wait for the thread it blocks, so those refuse.
const native = require('./native.js');
const args = require('./args.js');
const { AppStoreServerError, guard, detail, keepSignerCause, forgetSignerCause } = require('./errors.js');

/** The largest DER ECDSA P-256 signature (the library's signature_cap). */
const SIGNATURE_CAPACITY = 72;
/** The library's default deadline of one signature (appstore_signing_key_new_with_signer's timeout_ms 0). */
const DEFAULT_TIMEOUT_MS = 10000;
const MAX_TIMEOUT_MS = 0xffffffff;

const WHERE = 'ExternalSigner';

/**
 * A key held outside the process (a KMS or an HSM): pass it as `signingKey` wherever a .p8 PEM goes.
 *
 * sign(message, digest): the ES256 signature of `message` (ECDSA P-256 over SHA-256(message)), as a Buffer /
 * Uint8Array of 64 bytes r||s or DER (what KMS and most HSMs return), or a Promise of it. `digest` is
 * SHA-256(message), for signers that take a digest (KMS MessageType DIGEST, PKCS#11 CKM_ECDSA). Called on the JS
 * thread, possibly several times at once.
 * publicKey: the key's public half as KMS and HSM APIs hand it out: PEM "-----BEGIN PUBLIC KEY-----" text (string or
 * bytes) or DER SubjectPublicKeyInfo. Every signature is verified with it before use: one made with another key, over
 * another message or random bytes fails the call (AppStoreServerError INVALID_KEY / signer_failed).
 * options.timeoutMs: how long one signature may take (default 10000, 1 to 4294967295): after it the call fails
 * (signer_failed, a TimeoutError as `cause`); the signer itself is not interrupted. In an API call the client's
 * timeout (a deadline for the whole call) bounds it too: the call stops waiting at its deadline and fails with
 * AppStoreServerError TRANSPORT_ERROR / deadline_exceeded, the signer's late answer discarded. sign gets the
 * milliseconds it has as a third argument, sign(message, digest, timeoutMs), to pass on to the KMS client.
 */
class ExternalSigner {
  constructor(sign, publicKey, options) {
    if (typeof sign !== 'function')
      throw args.fail(WHERE, 'sign', 'a function (message: Buffer, digest: Buffer) => Buffer | Promise<Buffer>', sign);
    if (typeof publicKey !== 'string' && !(publicKey instanceof Uint8Array))
      throw args.fail(WHERE, 'publicKey', 'the signer\'s public key: PEM text (string or Buffer) or DER SubjectPublicKeyInfo (Buffer)', publicKey);
    if (publicKey.length === 0) throw new TypeError(`${WHERE}: publicKey is empty: the signer's public key is required`);
    const opts = args.options(WHERE, options);
    for (const k of Object.keys(opts)) {
      if (k !== 'timeoutMs') throw new TypeError(`${WHERE}: options.${k} is not an option (known: timeoutMs)`);
    }
    let timeoutMs = DEFAULT_TIMEOUT_MS;
    if (opts.timeoutMs != null) {
      timeoutMs = args.integer(WHERE, 'options.timeoutMs', opts.timeoutMs);
      if (timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS)
        throw new RangeError(`${WHERE}: options.timeoutMs must be 1 to ${MAX_TIMEOUT_MS} (got ${timeoutMs})`);
      timeoutMs = Number(timeoutMs);
    }
    // The key's bytes as given (a copy: a later change of the caller's Buffer changes nothing).
    const key = typeof publicKey === 'string' ? publicKey : Buffer.from(publicKey);
    Object.defineProperty(this, 'sign', { value: sign, enumerable: true });
    Object.defineProperty(this, 'publicKey', { value: key, enumerable: true });
    Object.defineProperty(this, 'timeoutMs', { value: timeoutMs, enumerable: true });
  }
}

/** What a value is, for a message (never its contents: a signer's value may be key material). */
function kind(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `a string (${v.length} characters)`;
  if (typeof v === 'object') return `an object${v.constructor && v.constructor.name ? ` (${v.constructor.name})` : ''}`;
  return typeof v === 'undefined' ? 'undefined' : `a ${typeof v}`;
}

/** A thrown value, for a message: "Error: KMS unavailable". */
function thrown(e) {
  if (e instanceof Error) return e.message ? `${e.name}: ${e.message}` : e.name;
  if (typeof e === 'string') return e;
  return kind(e);
}

/**
 * The dispatcher of one key's bridge: called on this thread for each signature the library asks for, with the
 * message, its digest and the request to answer (native.signerRespond). Nothing escapes: whatever the signer does,
 * the request is answered (or its waiter gives up at the timeout).
 */
function dispatcher(sign) {
  return function dispatch(message, digest, request, timeoutMs) {
    const fail = (what, hasCause, cause) => {
      const id = hasCause ? keepSignerCause(cause) : 0;
      let accepted = false;
      try {
        accepted = native.signerRespond(request, null, what, id);
      } catch {
        // answered already
      }
      if (!accepted && id) forgetSignerCause(id);
    };
    const answer = (value, verb) => {
      const bytes = value instanceof ArrayBuffer ? new Uint8Array(value) : value;
      if (!(bytes instanceof Uint8Array)) return fail(`${verb} ${kind(value)}, not a Buffer`, false);
      if (bytes.byteLength === 0 || bytes.byteLength > SIGNATURE_CAPACITY) {
        return fail(`${verb} ${bytes.byteLength} bytes; an ECDSA P-256 signature is 64 bytes r||s or DER of at most ` +
          `${SIGNATURE_CAPACITY}`, false);
      }
      try {
        native.signerRespond(request, bytes, null, 0);
      } catch {
        // answered already
      }
      return undefined;
    };
    let out;
    let then;
    try {
      out = sign(message, digest, timeoutMs);
      then = out !== null && (typeof out === 'object' || typeof out === 'function') ? out.then : undefined;
    } catch (e) {
      fail(`it threw ${thrown(e)}`, true, e);
      return;
    }
    if (typeof then !== 'function') {
      answer(out, 'it returned');
      return;
    }
    Promise.resolve(out).then((value) => answer(value, 'its Promise resolved to'),
      (e) => fail(`its Promise rejected with ${thrown(e)}`, true, e));
  };
}

/** Whether signingKey is an external signer (after the type check). */
function isSigner(signingKey) {
  return signingKey instanceof ExternalSigner;
}

/** The type check of a signingKey argument: the .p8 PEM (string or Buffer) or an ExternalSigner. */
function checkSigningKey(where, signingKey) {
  if (isSigner(signingKey) || typeof signingKey === 'string' || signingKey instanceof Uint8Array) return;
  if (typeof signingKey === 'function') {
    throw new TypeError(`${where}: signingKey is a function: an external signer needs its public key, which every ` +
      'signature is checked with: pass new ExternalSigner(sign, publicKey)');
  }
  throw args.fail(where, 'signingKey', 'the .p8 PEM (a string or Buffer) or an ExternalSigner', signingKey);
}

/**
 * The library's key for signingKey (checked with checkSigningKey): a .p8 PEM parsed by the library, or an external
 * signer behind the addon's bridge. issuerId null: none (promotional offers v1).
 */
function newKey(where, signingKey, keyId, issuerId, bundleId) {
  checkSigningKey(where, signingKey);
  args.string(where, 'keyId', keyId);
  if (issuerId !== null) args.string(where, 'issuerId', issuerId);
  args.string(where, 'bundleId', bundleId);
  if (!isSigner(signingKey)) return guard('config', () => native.signing_key_new(signingKey, keyId, issuerId, bundleId));
  return guard('config', () => native.signerKeyNew(dispatcher(signingKey.sign), signingKey.publicKey,
    signingKey.timeoutMs, keyId, issuerId, bundleId));
}

/** The refusal of a synchronous call on a key held by an external signer (the signer needs this thread). */
function syncRefused(where, promiseMethod) {
  return new AppStoreServerError(`${where}: a synchronous call cannot use an ExternalSigner: the signer runs on this ` +
    `thread, which the call would block; use ${promiseMethod}`, detail('INVALID_KEY', 'signer_failed'));
}

module.exports = { ExternalSigner, checkSigningKey, newKey, isSigner, syncRefused };
