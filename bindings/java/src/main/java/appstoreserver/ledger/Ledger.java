package appstoreserver.ledger;

import appstoreserver.AppStoreStatus;
import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Cleaners;
import appstoreserver.internal.Errors;
import appstoreserver.internal.Json;
import appstoreserver.internal.NativeError;
import appstoreserver.internal.NativeHandle;
import appstoreserver.internal.Verifiers;
import appstoreserver.model.LedgerCustomer;
import appstoreserver.model.LedgerDisagreementPage;
import appstoreserver.model.LedgerExportResult;
import appstoreserver.model.LedgerIdPage;
import appstoreserver.model.LedgerImportResult;
import appstoreserver.model.LedgerIngestResult;
import appstoreserver.model.LedgerReverifyResult;
import appstoreserver.model.LedgerSubscription;
import appstoreserver.model.LedgerSummary;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ref.Cleaner;
import java.time.Instant;
import java.util.Set;

/**
 * The purchase ledger (docs/ledger.md): verified App Store data in, who is entitled to what at any instant out,
 * durably.
 *
 * <pre>{@code
 * try (Ledger ledger = Ledger.open("sqlite:/var/lib/app/ledger.db", verifier)) {
 *     ledger.ingestNotification(signedPayload);                 // returns once the event is durable
 *     LedgerCustomer customer = ledger.customer(appAccountToken); // now; or customer(token, instant)
 *     for (LedgerEntitlement e : customer.getEntitlements()) {
 *         System.out.println(e.getProductId() + " " + e.getReason() + " " + e.getUntil());
 *     }
 * }
 * }</pre>
 *
 * <p>Every value is verified with the ledger's {@link SignedDataVerifier} before it is stored; a value the verifier
 * refuses throws its {@link VerificationException} (Apple's status, this library's status and reason, the message)
 * and changes nothing. Answers are the generated models ({@link LedgerSubscription}, {@link LedgerCustomer},
 * {@link LedgerSummary}, {@link LedgerIngestResult}, {@link LedgerReverifyResult}). A database failure throws
 * {@link LedgerException}; an argument the ledger cannot use, IllegalArgumentException (null: NullPointerException).
 *
 * <p>Thread-safe: one ledger may be shared by any number of threads (calls are serialized inside the library; no Java
 * lock is held). It holds native resources: close() closes the database (later calls throw IllegalStateException);
 * a ledger dropped without close() is closed when it is collected.
 */
public final class Ledger implements AutoCloseable {
    /** The statuses a refused value comes with: the verifier's (spec/errors.json, the verification family). */
    private static final Set<AppStoreStatus> VERIFICATION_STATUSES = Set.of(AppStoreStatus.VERIFICATION_FAILURE,
            AppStoreStatus.RETRYABLE_VERIFICATION_FAILURE, AppStoreStatus.INVALID_APP_IDENTIFIER,
            AppStoreStatus.INVALID_ENVIRONMENT, AppStoreStatus.INVALID_CHAIN_LENGTH, AppStoreStatus.INVALID_CERTIFICATE,
            AppStoreStatus.INVALID_JWT_FORMAT);

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;
    private final String url;
    private final SignedDataVerifier verifier;

    private Ledger(String url, SignedDataVerifier verifier) {
        byte[] u = Args.cString(url, "url");
        NativeHandle v = Verifiers.handle(verifier);
        long vh = v.acquire();
        long l;
        try {
            l = Abi.ledger_open(u, vh);
        } catch (NativeError e) {
            throw failure(e);
        } finally {
            v.release();
        }
        this.handle = new NativeHandle("Ledger", l, Abi::ledger_free);
        this.cleanable = Cleaners.register(this, handle);
        this.url = url;
        this.verifier = verifier;
    }

    /**
     * Opens the ledger at a URL, creating it if needed: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
     * "sqlite::memory:" (lives until the ledger is closed), or "postgresql://user&#64;host:port/database" (also
     * "postgres://"; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The schema
     * is created or migrated; no stored event is read (each query reads the events of the subscription or customer it
     * asks about, by an index; docs/ledger.md, "Queries"). The URL parameter "cache_mib=N" (0...65536, default 32)
     * bounds the cache of those per-key states. Every value it records is verified with the given verifier.
     *
     * <p>The ledger keeps the verifier alive as long as it needs it. A database of another app or environment than
     * the verifier's, of a newer schema, or one that cannot be reached throws {@link LedgerException}; a URL it
     * cannot use, IllegalArgumentException.
     *
     * @param url the database
     * @param verifier verifies every value before it is stored
     * @return the open ledger; close it
     * @cfunction appstore_ledger_open
     */
    public static Ledger open(String url, SignedDataVerifier verifier) {
        return new Ledger(url, verifier);
    }

    /** The URL the ledger was opened with. */
    public String getUrl() {
        return url;
    }

    /** The verifier every ingested value goes through. */
    public SignedDataVerifier getVerifier() {
        return verifier;
    }

    // ---- ingest -----------------------------------------------------------------------------------------------------

    /**
     * Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too),
     * a transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
     * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
     * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason
     * and changes nothing. The result says what happened: "stored" is false when the same payload was already there,
     * and for a notification with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its
     * signedDate), and "verdict": AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which;
     * a catch-up fills them) or CONTRADICTION (the facts it decided from, the notification's own transaction,
     * disagree with data.status).
     *
     * <p>An App Store Server Notification V2 signedPayload; returns once it is durable.
     *
     * @param signedPayload the notification's signedPayload
     * @return what happened: stored (false when the same payload was already there) and the oracle's verdict
     * @throws VerificationException the verifier refuses the value (nothing is changed)
     * @cfunction appstore_ledger_ingest_notification
     */
    public LedgerIngestResult ingestNotification(String signedPayload) throws VerificationException {
        return ingest(Abi::ledger_ingest_notification, signedPayload, "signedPayload");
    }

    /**
     * Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too),
     * a transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
     * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
     * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason
     * and changes nothing. The result says what happened: "stored" is false when the same payload was already there,
     * and for a notification with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its
     * signedDate), and "verdict": AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which;
     * a catch-up fills them) or CONTRADICTION (the facts it decided from, the notification's own transaction,
     * disagree with data.status).
     *
     * <p>A signed transaction; returns once it is durable.
     *
     * @param signedTransaction the signed transaction
     * @return what happened (stored is false when the same value was already there)
     * @throws VerificationException the verifier refuses the value (nothing is changed)
     * @cfunction appstore_ledger_ingest_transaction
     */
    public LedgerIngestResult ingestTransaction(String signedTransaction) throws VerificationException {
        return ingest(Abi::ledger_ingest_transaction, signedTransaction, "signedTransaction");
    }

    /**
     * Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too),
     * a transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
     * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
     * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason
     * and changes nothing. The result says what happened: "stored" is false when the same payload was already there,
     * and for a notification with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its
     * signedDate), and "verdict": AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which;
     * a catch-up fills them) or CONTRADICTION (the facts it decided from, the notification's own transaction,
     * disagree with data.status).
     *
     * <p>A signed renewal info; returns once it is durable.
     *
     * @param signedRenewalInfo the signed renewal info
     * @return what happened (stored is false when the same value was already there)
     * @throws VerificationException the verifier refuses the value (nothing is changed)
     * @cfunction appstore_ledger_ingest_renewal_info
     */
    public LedgerIngestResult ingestRenewalInfo(String signedRenewalInfo) throws VerificationException {
        return ingest(Abi::ledger_ingest_renewal_info, signedRenewalInfo, "signedRenewalInfo");
    }

    private interface Ingest {
        byte[] call(long ledger, byte[] jws);
    }

    private LedgerIngestResult ingest(Ingest fn, String signed, String name) throws VerificationException {
        byte[] jws = Args.text(signed, name);
        long h = handle.acquire();
        try {
            return read(fn.call(h, jws), LedgerIngestResult.class);
        } catch (NativeError e) {
            if (VERIFICATION_STATUSES.contains(AppStoreStatus.fromValue(e.status))) {
                throw Verifiers.failure(e);
            }
            throw failure(e);
        } finally {
            handle.release();
        }
    }

    // ---- queries ----------------------------------------------------------------------------------------------------
    // Two times (docs/ledger.md, "Bitemporal queries"): `at`, the instant the answer is about, and `asOf`, the
    // knowledge time (only facts signed by then count). Both default to now; asOf = at is "as known then".

    /**
     * One subscription (its originalTransactionId) at an instant: Apple's status (1-5), product, expiry, grace
     * period, auto-renew state, pending product, upgrade, offer, family sharing, revocation. No subscription when the
     * ledger knew nothing of it.
     *
     * <p>As it is now.
     *
     * @param originalTransactionId the subscription
     * @return the subscription, or null when the ledger knows nothing of it
     * @cfunction appstore_ledger_query_subscription
     */
    public LedgerSubscription subscription(String originalTransactionId) {
        return subscription(originalTransactionId, null);
    }

    /**
     * One subscription (its originalTransactionId) at an instant: Apple's status (1-5), product, expiry, grace
     * period, auto-renew state, pending product, upgrade, offer, family sharing, revocation. No subscription when the
     * ledger knew nothing of it.
     *
     * <p>At an instant after 1970 (millisecond precision; null: now).
     *
     * @param originalTransactionId the subscription
     * @param at the instant
     * @return the subscription, or null when the ledger knows nothing of it then
     * @cfunction appstore_ledger_query_subscription
     */
    public LedgerSubscription subscription(String originalTransactionId, Instant at) {
        byte[] key = Args.cString(originalTransactionId, "originalTransactionId");
        return subscription(originalTransactionId, at, null);
    }

    /**
     * One subscription (its originalTransactionId) at an instant: Apple's status (1-5), product, expiry, grace
     * period, auto-renew state, pending product, upgrade, offer, family sharing, revocation. No subscription when the
     * ledger knew nothing of it.
     *
     * @param originalTransactionId the subscription
     * @param at the instant the answer is about (null: now)
     * @param asOf the knowledge time (null: now)
     * @return the subscription, or null when the ledger knows nothing of it then
     * @cfunction appstore_ledger_query_subscription
     */
    public LedgerSubscription subscription(String originalTransactionId, Instant at, Instant asOf) {
        byte[] key = Args.cString(originalTransactionId, "originalTransactionId");
        long atMs = instant(at, "at");
        long asOfMs = instant(asOf, "asOf");
        byte[] json = query(h -> Abi.ledger_query_subscription(h, key, atMs, asOfMs));
        return read(json, LedgerSubscription.class); // JSON null: Jackson gives null
    }

    /**
     * One customer (an appAccountToken, in any case; or the originalTransactionId of purchases without one) at an
     * instant: the products they are entitled to, each with why and until when, their subscriptions, their one-time
     * purchases, and consumables bought and refunded. An unknown customer has empty lists.
     *
     * <p>As it is now.
     *
     * @param customerId an appAccountToken, or the originalTransactionId of purchases without one
     * @return the customer (empty lists when unknown)
     * @cfunction appstore_ledger_query_customer
     */
    public LedgerCustomer customer(String customerId) {
        return customer(customerId, null);
    }

    /**
     * One customer (an appAccountToken, in any case; or the originalTransactionId of purchases without one) at an
     * instant: the products they are entitled to, each with why and until when, their subscriptions, their one-time
     * purchases, and consumables bought and refunded. An unknown customer has empty lists.
     *
     * <p>At an instant after 1970 (millisecond precision; null: now).
     *
     * @param customerId an appAccountToken, or the originalTransactionId of purchases without one
     * @param at the instant
     * @return the customer (empty lists when unknown)
     * @cfunction appstore_ledger_query_customer
     */
    public LedgerCustomer customer(String customerId, Instant at) {
        return customer(customerId, at, null);
    }

    /**
     * One customer (an appAccountToken, in any case; or the originalTransactionId of purchases without one) at an
     * instant: the products they are entitled to, each with why and until when, their subscriptions, their one-time
     * purchases, and consumables bought and refunded. An unknown customer has empty lists.
     *
     * @param customerId an appAccountToken, or the originalTransactionId of purchases without one
     * @param at the instant the answer is about (null: now)
     * @param asOf the knowledge time (null: now)
     * @return the customer (empty lists when unknown)
     * @cfunction appstore_ledger_query_customer
     */
    public LedgerCustomer customer(String customerId, Instant at, Instant asOf) {
        byte[] key = Args.cString(customerId, "customerId");
        long atMs = instant(at, "at");
        long asOfMs = instant(asOf, "asOf");
        return read(query(h -> Abi.ledger_query_customer(h, key, atMs, asOfMs)), LedgerCustomer.class);
    }

    /**
     * Counts, and the oracle: the notifications whose data.status the ledger does not reproduce at their signedDate,
     * each with its verdict: INCOMPLETE_HISTORY (the ledger lacks facts before it; "missing" says which, a catch-up
     * fills them) or CONTRADICTION (the signed facts the ledger decided from disagree with data.status).
     * "contradictions" and "incompleteHistories" count them all; "disagreements" lists at most 1,000, every
     * CONTRADICTION first, then INCOMPLETE_HISTORY, each by signedDate (a fresh ledger's backlog of first renewals
     * never hides a contradiction, and the answer stays small at any size).
     *
     * <p>The notifications the ledger does not reproduce are in getDisagreements().
     *
     * @return the counts and the disagreements
     * @cfunction appstore_ledger_query_summary
     */
    public LedgerSummary summary() {
        return read(query(Abi::ledger_query_summary), LedgerSummary.class);
    }

    /**
     * Every disagreement of the oracle, a page at a time, in the summary's order (every CONTRADICTION first, then
     * INCOMPLETE_HISTORY, each by signedDate, then notificationUUID), read along an index: a page costs its own rows
     * at any size. A page holds at most the limit asked for (1 to 10,000) after the cursor given (the "next" of the
     * previous page, opaque), and "next", absent after the last page. A verdict that changes between two pages (a
     * catch-up turns an INCOMPLETE_HISTORY into AGREES) is listed at most once.
     *
     * <p>A cursor this method did not make, or a limit out of range: IllegalArgumentException.
     *
     * @param after the previous page's getNext(), or null (or "") for the first page
     * @param limit at most this many disagreements (1 to 10,000)
     * @return getDisagreements(), and getNext() for the next page (null after the last)
     * @cfunction appstore_ledger_query_disagreements
     */
    public LedgerDisagreementPage disagreements(String after, int limit) {
        byte[] cursor = Args.cString(after == null ? "" : after, "after");
        if (limit < 1 || limit > 10000) {
            throw new IllegalArgumentException("limit must be 1 to 10000, got " + limit);
        }
        return read(query(h -> Abi.ledger_query_disagreements(h, cursor, limit)), LedgerDisagreementPage.class);
    }

    /**
     * The first page of at most 1,000 disagreements: {@code disagreements(null, 1000)}.
     *
     * @return getDisagreements(), and getNext() for the next page (null when there is none)
     */
    public LedgerDisagreementPage disagreements() {
        return disagreements(null, 1000);
    }

    /**
     * The ledger's subscription ids (originalTransactionIds of auto-renewable subscriptions), a page at a time in the
     * database's order, read along an index: a page costs its own rows at any size and nothing is held between pages
     * (a sweep over every subscription, as `sync` makes). A page holds at most the limit asked for (1 to 10,000) of
     * the ids after the cursor given (the "next" of the previous page: its last id), and "next", absent after the
     * last page.
     *
     * <p>A limit out of range: IllegalArgumentException.
     *
     * @param after the previous page's getNext(), or null (or "") for the first page
     * @param limit at most this many ids (1 to 10,000)
     * @return getIds(), and getNext() for the next page (null after the last)
     * @cfunction appstore_ledger_query_subscription_ids
     */
    public LedgerIdPage subscriptionIds(String after, int limit) {
        byte[] cursor = idCursor(after, limit);
        return read(query(h -> Abi.ledger_query_subscription_ids(h, cursor, limit)), LedgerIdPage.class);
    }

    /**
     * The ledger's customer ids (appAccountTokens in lowercase, else originalTransactionIds), a page at a time, as
     * the subscription ids are.
     *
     * @param after the previous page's getNext(), or null (or "") for the first page
     * @param limit at most this many ids (1 to 10,000)
     * @return getIds(), and getNext() for the next page (null after the last)
     * @cfunction appstore_ledger_query_customer_ids
     */
    public LedgerIdPage customerIds(String after, int limit) {
        byte[] cursor = idCursor(after, limit);
        return read(query(h -> Abi.ledger_query_customer_ids(h, cursor, limit)), LedgerIdPage.class);
    }

    private static byte[] idCursor(String after, int limit) {
        byte[] cursor = Args.cString(after == null ? "" : after, "after");
        if (limit < 1 || limit > 10000) {
            throw new IllegalArgumentException("limit must be 1 to 10000, got " + limit);
        }
        return cursor;
    }

    /**
     * Verifies every stored value again with the ledger's verifier (the one it was opened with): how many were
     * checked and the ones it refuses now, each with the verifier's status, reason and message. With online checks
     * on, a certificate revoked since the value was stored is found; without them, the answer does not change with
     * time. Stored values are not verified when the ledger is opened (they were before they were stored): this is the
     * check. Nothing is changed.
     *
     * <p>Changes nothing.
     *
     * @return getChecked() and getRefused() (each with eventId, kind and the verifier's status, reason and message)
     * @cfunction appstore_ledger_reverify
     */
    public LedgerReverifyResult reverify() {
        return read(query(Abi::ledger_reverify), LedgerReverifyResult.class);
    }

    /**
     * Imports a file of JSON lines of signed values (a backfill, a migration from another system; docs/ledger.md,
     * "Bulk import"): each line {"notification": JWS}, {"signedPayload": JWS} (a notification body as Apple posts
     * it), {"transaction": JWS}, {"renewalInfo": JWS}, or a bare JWS (a notification); empty lines are skipped.
     * Values are verified on every core, outside the ledger's lock, and committed `batch_size` lines per transaction
     * (0: 1000). A value whose payload and signature are already stored is counted "alreadyPresent" without being
     * verified again, so running the same file again after an interruption stores what is missing and nothing twice.
     *
     * <p>Refused lines are in the result (getRefusedCount(), and getRefused() with their line numbers), not thrown; a
     * file that cannot be read: IllegalArgumentException.
     *
     * @param path the file
     * @param batchSize lines per transaction (0: 1000)
     * @return what was read, stored, already present and refused
     * @cfunction appstore_ledger_import_jsonl
     */
    public LedgerImportResult importJsonl(String path, int batchSize) {
        byte[] p = Args.cString(path, "path");
        if (batchSize < 0) {
            throw new IllegalArgumentException("batchSize must be 0 (the default) or more, got " + batchSize);
        }
        return read(query(h -> Abi.ledger_import_jsonl(h, p, batchSize)), LedgerImportResult.class);
    }

    /**
     * Exports every stored value of the ledger's identity as the JSON lines the bulk import reads (a backup, a move
     * to another store, a hand-over to another system; docs/ledger.md, "Export"): one line per value, in the order
     * stored, {"notification": JWS}, {"transaction": JWS} or {"renewalInfo": JWS}, each JWS byte for byte as it was
     * ingested, so it can be verified again.
     *
     * <p>A file that cannot be created: IllegalArgumentException; a failed write (disk full): LedgerException.
     *
     * @param path the file, replaced once the export is whole
     * @return how many values were written, by kind
     * @cfunction appstore_ledger_export_jsonl
     */
    public LedgerExportResult exportJsonl(String path) {
        byte[] p = Args.cString(path, "path");
        return read(query(h -> Abi.ledger_export_jsonl(h, p)), LedgerExportResult.class);
    }

    /**
     * Closes the database and frees the ledger.
     *
     * <p>What was acknowledged is on disk already. Waits for calls in progress on other threads; idempotent.
     *
     * @cfunction appstore_ledger_free
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Ledger(" + url + ")";
    }

    // ---- the calls --------------------------------------------------------------------------------------------------

    private interface Query {
        byte[] call(long ledger);
    }

    private byte[] query(Query fn) {
        long h = handle.acquire();
        try {
            return fn.call(h);
        } catch (NativeError e) {
            throw failure(e);
        } finally {
            handle.release();
        }
    }

    /** at/asOf: null (now) or an instant after 1970 -> the C ABI's at_ms/as_of_ms (0 = now). */
    private static long instant(Instant at, String name) {
        if (at == null) {
            return 0;
        }
        long ms;
        try {
            ms = at.toEpochMilli();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(name + " is out of range: " + at);
        }
        if (ms <= 0) {
            throw new IllegalArgumentException(name + " must be an instant after 1970, got " + at);
        }
        return ms;
    }

    /** A failure that is not a refused value: INVALID_ARGUMENT as IllegalArgumentException, else LedgerException. */
    private static RuntimeException failure(NativeError e) {
        if (e.status == AppStoreStatus.INVALID_ARGUMENT.getValue()) {
            return Errors.library(e);
        }
        return new LedgerException(e.status, e.reason, e.detail);
    }

    private static <T> T read(byte[] json, Class<T> type) {
        try {
            return Json.read(json, type);
        } catch (IOException e) {
            // The library wrote this JSON from the same spec the models are generated from.
            throw new UncheckedIOException("the ledger's answer does not map to " + type.getSimpleName(), e);
        }
    }
}
