'use strict';
// The purchase ledger (docs/ledger.md): verified App Store data in, who is entitled to what out, durably. Every call
// that touches the database (open, ingest, queries) runs on the libuv thread pool (native.async.*) and returns a
// Promise; the ledger is locked inside the library, so calls from several Promises at once are safe.
const native = require('./native.js');
const args = require('./args.js');
const { convert, guard } = require('./errors.js');
const { SignedDataVerifier } = require('./verifier.js');

const WHERE = 'Ledger';

/** The C ABI's at_ms / as_of_ms: 0 = now; a Date or milliseconds since 1970 (> 0). Throws a TypeError / RangeError. */
function instant(where, at, name = 'at') {
  if (at === undefined || at === null) return 0;
  let ms = at;
  if (at instanceof Date) ms = at.getTime();
  else if (typeof at === 'bigint') ms = Number(at);
  else if (typeof at !== 'number') throw args.fail(where, name, 'a Date or milliseconds since 1970', at);
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new RangeError(`${where}: ${name} must be an instant after 1970 (a Date or milliseconds since 1970), got ${String(at)}`);
  return ms;
}

/** The verifier's library handle, or the reason there is none. */
function verifierHandle(verifier) {
  if (!(verifier instanceof SignedDataVerifier))
    throw args.fail(WHERE, 'verifier', 'a SignedDataVerifier', verifier);
  const failure = verifier._withoutHandle('ledger_open');
  if (failure) {
    // A verifier without roots refuses everything; a ledger over it could store nothing.
    throw new TypeError(`${WHERE}: the verifier cannot verify anything: ${failure.message}`);
  }
  return verifier._handle;
}

/** Runs a pool call; a synchronous throw (a closed handle, an argument the addon refuses) becomes a rejection. */
function pool(fn, kind, ...a) {
  try {
    return native.async[fn](...a);
  } catch (e) {
    return Promise.reject(convert(e, kind));
  }
}

class Ledger {
  /** Use Ledger.open(url, verifier) (or Ledger.openSync). */
  constructor(handle, url, verifier) {
    if (!handle || typeof url !== 'string' || !(verifier instanceof SignedDataVerifier))
      throw new TypeError(`${WHERE}: use Ledger.open(url, verifier)`);
    Object.defineProperty(this, '_handle', { value: handle });
    Object.defineProperty(this, '_closed', { value: false, writable: true });
    /** The URL the ledger was opened with. */
    this.url = url;
    /** The verifier every ingested value goes through. */
    this.verifier = verifier;
  }

  /**
   * Opens (creating it if needed) the ledger at `url`: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
   * "sqlite::memory:" (lives until close()). The schema is created or migrated on the thread pool; no stored event is
   * read (queries read their key's events; "?cache_mib=N" bounds the cache of those states). Every value is verified
   * with `verifier`.
   */
  static open(url, verifier) {
    let h;
    try {
      args.string(`${WHERE}.open`, 'url', url);
      h = verifierHandle(verifier);
    } catch (e) {
      return Promise.reject(e);
    }
    return pool('ledger_open', 'config', url, h).then((handle) => new Ledger(handle, url, verifier));
  }

  /** Ledger.open on the calling thread (opening may migrate the schema: prefer open()). */
  static openSync(url, verifier) {
    args.string(`${WHERE}.openSync`, 'url', url);
    const h = verifierHandle(verifier);
    return new Ledger(guard('config', () => native.ledger_open(url, h)), url, verifier);
  }

  _ingest(fn, jws, name) {
    if (typeof jws !== 'string' && !(jws instanceof Uint8Array))
      return Promise.reject(args.fail(`${WHERE}.${name}`, 'signed', 'a string (or Buffer)', jws));
    try {
      return pool(fn, 'verify', this._live(name), jws);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  _live(name) {
    if (this._closed) throw new Error(`${WHERE}.${name}: the ledger is closed`);
    return this._handle;
  }

  /**
   * Verifies an App Store Server Notification V2 signedPayload deeply (its signedTransactionInfo and
   * signedRenewalInfo too) and records it. Resolves to a LedgerIngestResult once the event is durable ("stored":
   * false when the same payload was already there; appleStatus / engineStatus / agrees: the oracle). A value the
   * verifier refuses rejects with its VerificationException and changes nothing.
   */
  ingestNotification(signedPayload) {
    return this._ingest('ledger_ingest_notification', signedPayload, 'ingestNotification');
  }

  /** Verifies a signed transaction (from the app, Get Transaction History, Get Transaction Info, Get All
   *  Subscription Statuses) and records it; resolves once it is durable. */
  ingestTransaction(signedTransaction) {
    return this._ingest('ledger_ingest_transaction', signedTransaction, 'ingestTransaction');
  }

  /** Verifies a signed renewal info (Get All Subscription Statuses) and records it; resolves once it is durable. */
  ingestRenewalInfo(signedRenewalInfo) {
    return this._ingest('ledger_ingest_renewal_info', signedRenewalInfo, 'ingestRenewalInfo');
  }

  /**
   * The subscription `originalTransactionId` at `at`, from the facts signed by `asOf` (each undefined: now; a Date or
   * milliseconds since 1970; asOf = at: as known then, docs/ledger.md "Bitemporal queries"): Apple's status (1-5),
   * product, expiry, grace period, auto-renew state, pending product, upgrade, offer, family sharing, revocation.
   * Resolves to null when the ledger knows no transaction of it.
   */
  subscription(originalTransactionId, at, asOf) {
    try {
      args.string(`${WHERE}.subscription`, 'originalTransactionId', originalTransactionId);
      return pool('ledger_query_subscription', 'config', this._live('subscription'), originalTransactionId,
        instant(`${WHERE}.subscription`, at), instant(`${WHERE}.subscription`, asOf, 'asOf'));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * The customer `customerId` (an appAccountToken, in any case; or the originalTransactionId of purchases without
   * one) at `at`, from the facts signed by `asOf` (each undefined: now; asOf = at: as known then): the products they
   * are entitled to, each with why and until when, their subscriptions, one-time purchases, and consumables bought
   * and refunded (an unknown customer has empty lists).
   */
  customer(customerId, at, asOf) {
    try {
      args.string(`${WHERE}.customer`, 'customerId', customerId);
      return pool('ledger_query_customer', 'config', this._live('customer'), customerId, instant(`${WHERE}.customer`, at),
        instant(`${WHERE}.customer`, asOf, 'asOf'));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Counts, and the oracle: the notifications whose data.status the ledger does not reproduce (disagreements). */
  summary() {
    try {
      return pool('ledger_query_summary', 'config', this._live('summary'));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Every disagreement of the oracle, a page at a time, in the summary's order: at most `limit` (1 to 10000) after
   * `after` (the previous page's `next`; undefined, null or '': the first page). Resolves to { disagreements, next },
   * `next` absent after the last page.
   */
  disagreements(after, limit = 1000) {
    try {
      const where = `${WHERE}.disagreements`;
      const cursor = args.optionalString(where, 'after', after) ?? '';
      args.integer(where, 'limit', limit);
      if (limit < 1 || limit > 10000) throw new RangeError(`${where}: limit must be 1 to 10000, got ${limit}`);
      return pool('ledger_query_disagreements', 'config', this._live('disagreements'), cursor, limit);
    } catch (e) {
      return Promise.reject(e);
    }
  }
  /**
   * The ledger's subscription ids (originalTransactionIds), a page at a time in the database's order: at most `limit` (1 to
   * 10000) after `after` (the previous page's `next`, its last id; undefined, null or '': the first page). Resolves to
   * { ids, next }, `next` absent after the last page.
   */
  subscriptionIds(after, limit = 1000) {
    return this._idPage('subscriptionIds', 'ledger_query_subscription_ids', after, limit);
  }

  /** The ledger's customer ids (what `customer()` answers for), a page at a time, as `subscriptionIds`. */
  customerIds(after, limit = 1000) {
    return this._idPage('customerIds', 'ledger_query_customer_ids', after, limit);
  }

  _idPage(name, fn, after, limit) {
    try {
      const where = `${WHERE}.${name}`;
      const cursor = args.optionalString(where, 'after', after) ?? '';
      args.integer(where, 'limit', limit);
      if (limit < 1 || limit > 10000) throw new RangeError(`${where}: limit must be 1 to 10000, got ${limit}`);
      return pool(fn, 'config', this._live(name), cursor, limit);
    } catch (e) {
      return Promise.reject(e);
    }
  }


  /**
   * Verifies every stored value again with the ledger's verifier: { checked, refused: [{ eventId, kind, status,
   * reason, message }] }. Changes nothing.
   */
  reverify() {
    try {
      return pool('ledger_reverify', 'config', this._live('reverify'));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Imports a JSON lines file of signed values (docs/ledger.md, "Bulk import"): verified on every core, committed
   * `batchSize` lines per transaction (0: 1000); re-running it after an interruption stores what is missing and
   * nothing twice. Resolves to { read, stored, alreadyPresent, refusedCount, refused: [{ line, status, reason,
   * message }] }: refused lines are reported, not thrown.
   */
  importJsonl(path, batchSize = 0) {
    try {
      args.string(`${WHERE}.importJsonl`, 'path', path);
      args.integer(`${WHERE}.importJsonl`, 'batchSize', batchSize);
      if (batchSize < 0 || batchSize > 0xffffffff) {
        throw new RangeError(`${WHERE}.importJsonl: batchSize must be 0 (the default) to 4294967295, got ${batchSize}`);
      }
      return pool('ledger_import_jsonl', 'config', this._live('importJsonl'), path, batchSize);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Writes every stored value as the JSON lines `importJsonl` reads (docs/ledger.md, "Export"), each JWS byte for
   * byte as ingested: written beside `path` (mode 0600), flushed, then renamed over it. Resolves to { exported,
   * notifications, transactions, renewalInfos }.
   */
  exportJsonl(path) {
    try {
      args.string(`${WHERE}.exportJsonl`, 'path', path);
      return pool('ledger_export_jsonl', 'config', this._live('exportJsonl'), path);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Closes the database and frees the ledger (after calls in flight complete); later calls reject. */
  close() {
    if (this._closed) return;
    this._closed = true;
    native.close(this._handle);
  }
}

module.exports = { Ledger };
