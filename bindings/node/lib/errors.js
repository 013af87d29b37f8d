'use strict';
// Exceptions: Apple's VerificationException / APIException (same constructors and fields), with the library's
// precise status, reason and message added; AppStoreServerError for everything else the library reports.
const spec = require('../generated/spec.js');
const { redact } = require('./redact.js');

/**
 * The library's status and reason by name, with their numbers from the generated tables (spec/errors.json):
 * {statusName, status, reasonName, reason}, the shape of the addon's error objects. An unknown name is a bug here.
 */
function detail(statusName, reasonName, extra) {
  const status = spec.LibraryStatus[statusName];
  const reason = spec.FailureReason[String(reasonName).toUpperCase()];
  if (typeof status !== 'number' || typeof reason !== 'number' || spec.REASONS[reason].name !== reasonName)
    throw new Error(`appstoreserver: no library status ${statusName} / reason ${reasonName} (spec/errors.json)`);
  return { ...extra, statusName, status, reasonName, reason };
}

/** Fields the library adds to every error it raises. */
function detailFields(target, d) {
  target.libraryStatus = d.statusName;
  target.libraryStatusCode = d.status;
  target.reason = d.reasonName;
  target.reasonCode = d.reason;
}

const INTERNAL = detail('INTERNAL_ERROR', 'internal');

/** What an error says: the library's precise message, then its reason ("... [bad_signature]"), as Python's do. */
function spoken(message, detail) {
  const reason = detail && detail.reasonName;
  return reason && reason !== 'none' && !String(message).endsWith(`[${reason}]`) ? `${message} [${reason}]` : message;
}

/** A failure the library reports outside verification and API answers (configuration, keys, receipts, ...).
 *  retryAtMs: when the client's own rate limit has a free slot again (RATE_LIMITED / local_rate_limit), or when the
 *  wait that would have passed the call's deadline would have ended (TRANSPORT_ERROR / deadline_exceeded). */
class AppStoreServerError extends Error {
  constructor(message, detail) {
    super(spoken(message, detail));
    this.name = 'AppStoreServerError';
    detailFields(this, detail || INTERNAL);
    if (detail && (detail.statusName === 'RATE_LIMITED' || detail.reasonName === 'deadline_exceeded') &&
        detail.retryAtMs >= 0) this.retryAtMs = detail.retryAtMs;
  }
}

/** Apple's VerificationException: `status` is Apple's Node VerificationStatus; `cause` as Apple's. Beyond Apple:
 *  `reason` ("bad_signature", ...), `message`, `libraryStatus` ("INVALID_CHAIN_LENGTH", ...). */
class VerificationException extends Error {
  constructor(status, cause, detail) {
    super(detail ? spoken(detail.message, detail) : '');
    this.name = 'VerificationException';
    this.status = status;
    this.cause = cause;
    if (detail) detailFields(this, detail);
  }
}

/**
 * The headers of an answer as an object: lowercased names -> value, a repeated header's values joined with ", " (as
 * fetch's Headers gives them). pairs: [[name, value], ...] as received.
 */
function headerObject(pairs) {
  const byName = new Map();
  for (const [name, value] of pairs || []) {
    const key = String(name).toLowerCase();
    byName.set(key, byName.has(key) ? `${byName.get(key)}, ${value}` : String(value));
  }
  return Object.fromEntries(byName); // own data properties, whatever the names
}

/**
 * Apple's APIException: httpStatusCode, apiError (the raw errorCode, or null), errorMessage (or null). Beyond Apple:
 * apiErrorName; headers (the answer's, lowercased names -> value; {} without an answer); Retry-After as
 * retryAfter (UNIX time in milliseconds, Apple's documented form of the header; or null), retryAtMs (the same) and
 * retryAfterSeconds (seconds from the answer, rounded up); reason, message, libraryStatus.
 */
class APIException extends Error {
  constructor(httpStatusCode, apiError = null, errorMessage = null, detail) {
    super(detail ? spoken(detail.message, detail) : '');
    this.name = 'APIException';
    this.httpStatusCode = httpStatusCode;
    this.apiError = apiError;
    this.errorMessage = errorMessage;
    this.headers = headerObject(detail && detail.headers);
    if (detail) {
      detailFields(this, detail);
      this.apiErrorName = detail.apiErrorName || null;
      this.retryAfter = detail.retryAtMs >= 0 ? detail.retryAtMs : null;
      this.retryAfterSeconds = detail.retryAfter >= 0 ? detail.retryAfter : null;
      this.retryAtMs = this.retryAfter;
    }
  }
}

function isNative(e) {
  return e !== null && typeof e === 'object' && e.appstoreError === true;
}

// External signers (lib/signer.js): what a JS signer threw or rejected with, by id, from the moment the waiting
// library call accepts the failure until that call's error takes it as its cause. Bounded: an id nobody takes (it
// cannot happen, short of a bug) is dropped with the oldest.
const signerCauses = new Map();
let nextSignerCause = 1;
const MAX_SIGNER_CAUSES = 256;

function keepSignerCause(value) {
  const id = nextSignerCause++;
  signerCauses.set(id, value);
  if (signerCauses.size > MAX_SIGNER_CAUSES) signerCauses.delete(signerCauses.keys().next().value);
  return id;
}

function forgetSignerCause(id) {
  signerCauses.delete(id);
}

/**
 * A call that failed because its external signer did (the addon's note: signerFailure, signerCauseId,
 * signerTimedOut): the library's "the signer callback returned 1" becomes what the JS signer did, and what it threw
 * or rejected with becomes the cause (a TimeoutError for a signer that did not answer in time).
 */
function signerDetail(e, err) {
  if (typeof e.signerFailure !== 'string') return;
  const what = e.signerFailure;
  const re = /the signer callback returned -?\d+/;
  err.message = redact(re.test(err.message) ? err.message.replace(re, () => what) : `${err.message} (${what})`);
  if (e.signerCauseId) {
    if (signerCauses.has(e.signerCauseId)) err.cause = signerCauses.get(e.signerCauseId);
    signerCauses.delete(e.signerCauseId);
  } else if (e.signerTimedOut) {
    err.cause = new DOMException(what, 'TimeoutError');
  }
}

/** Apple's Node VerificationStatus for a library failure: by reason, else by status (spec/apple.json node). */
function appleVerificationStatus(d) {
  const byReason = spec.VERIFICATION_STATUS_BY_REASON[d.reasonName];
  if (byReason !== undefined) return byReason;
  const byStatus = spec.VERIFICATION_STATUS_BY_STATUS[d.statusName];
  return byStatus !== undefined ? byStatus : spec.VERIFICATION_STATUS_OTHERWISE;
}

/** The exception for a native failure: e is the addon's error object (or already a JS error). */
function convert(e, kind) {
  if (!isNative(e)) return e;
  // The library's message may quote an argument; one holding a key is described instead.
  e.message = redact(e.message);
  if (e.statusName === 'INVALID_ARGUMENT' && e.reasonName === 'invalid_parameters') {
    const t = new TypeError(e.message);
    detailFields(t, e);
    return t;
  }
  if (kind === 'verify' && e.statusName !== 'CONFIGURATION_ERROR' && e.statusName !== 'INVALID_ARGUMENT' &&
      e.statusName !== 'INTERNAL_ERROR') {
    return new VerificationException(appleVerificationStatus(e), undefined, e);
  }
  if (kind === 'api' && e.statusName === 'API_ERROR') {
    return new APIException(e.httpStatus, e.apiErrorCode ? e.apiErrorCode : null,
      e.apiErrorCode ? e.apiErrorMessage : null, e);
  }
  const err = new AppStoreServerError(e.message, e);
  signerDetail(e, err);
  return err;
}

/** Calls fn(); a native failure is thrown as convert(failure, kind). */
function guard(kind, fn) {
  try {
    return fn();
  } catch (e) {
    throw convert(e, kind);
  }
}

module.exports = { AppStoreServerError, VerificationException, APIException, convert, guard, isNative, detail,
  appleVerificationStatus, keepSignerCause, forgetSignerCause };
