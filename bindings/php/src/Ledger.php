<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\AbiConstants as K;
use AppStoreServer\Internal\ErrorInfo;
use AppStoreServer\Internal\Native;
use AppStoreServer\Internal\NotCloneable;
use AppStoreServer\Model\LedgerCustomer;
use AppStoreServer\Model\LedgerDisagreementPage;
use AppStoreServer\Model\LedgerIdPage;
use AppStoreServer\Model\LedgerExportResult;
use AppStoreServer\Model\LedgerImportResult;
use AppStoreServer\Model\LedgerReverifyResult;
use AppStoreServer\Model\LedgerIngestResult;
use AppStoreServer\Model\LedgerSubscription;
use AppStoreServer\Model\LedgerSummary;
use FFI;
use FFI\CData;

/**
 * The purchase ledger (docs/ledger.md): a durable record of verified App Store data and, from it, what each customer
 * is entitled to at any instant. Only values the verifier accepts enter; the same events in any order, any number of
 * times, give the same answers. Several processes (php-fpm workers) may open one SQLite file.
 */
final class Ledger
{
    use NotCloneable;

    private ?CData $handle = null;

    private function __construct(CData $handle, public readonly string $url)
    {
        $this->handle = $handle;
        $this->own();
    }

    /**
     * Opens the ledger at a URL, creating it if needed: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
     * "sqlite::memory:" (lives until the ledger is closed), or "postgresql://user@host:port/database" (also
     * "postgres://"; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The schema
     * is created or migrated; no stored event is read (each query reads the events of the subscription or customer it
     * asks about, by an index; docs/ledger.md, "Queries"). The URL parameter "cache_mib=N" (0...65536, default 32)
     * bounds the cache of those per-key states. Every value it records is verified with the given verifier.
     *
     * @throws \InvalidArgumentException a URL it cannot use
     * @throws ConfigurationException a database of a newer schema, PostgreSQL without libpq, a verifier without roots
     * @throws LedgerException the database failed or cannot be reached
     *
     * @cfunction appstore_ledger_open
     */
    public static function open(string $url, SignedDataVerifier $verifier): self
    {
        Native::cText($url, 'url');
        $h = $verifier->handle();
        if ($h === null) {
            throw new ConfigurationException(K::APPSTORE_CONFIGURATION_ERROR, K::APPSTORE_REASON_NO_TRUST_ANCHOR,
                'the verifier has no root certificates');
        }
        $f = Native::ffi();
        $out = $f->new('appstore_ledger *');
        $err = Native::errorSlot();
        $st = $f->appstore_ledger_open($url, $h, FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            throw self::exception(Native::takeError($err, $st));
        }
        return new self($out, $url);
    }

    private static function exception(ErrorInfo $i): \Exception
    {
        return match ($i->status) {
            K::APPSTORE_INVALID_ARGUMENT => new \InvalidArgumentException($i->message),
            K::APPSTORE_CONFIGURATION_ERROR => ConfigurationException::fromInfo($i),
            K::APPSTORE_STORAGE_ERROR, K::APPSTORE_INTERNAL_ERROR => LedgerException::fromInfo($i),
            default => new VerificationException($i->status, $i->reason, $i->message),
        };
    }

    /**
     * Closes the database and frees the ledger.
     *
     * @cfunction appstore_ledger_free
     */
    public function close(): void
    {
        if ($this->owns() && $this->handle !== null) {
            Native::ffi()->appstore_ledger_free($this->handle);
            $this->handle = null;
        }
    }

    public function __destruct()
    {
        $this->close();
    }

    private function h(): CData
    {
        if ($this->handle === null) {
            throw new \LogicException('the ledger is closed');
        }
        return $this->handle;
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
     * @throws VerificationException a value the verifier refuses (nothing changes)
     * @throws LedgerException the database failed (nothing was acknowledged)
     *
     * @cfunction appstore_ledger_ingest_notification
     */
    public function ingestNotification(string $signedPayload): LedgerIngestResult
    {
        return $this->ingest('appstore_ledger_ingest_notification', $signedPayload);
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
     * @cfunction appstore_ledger_ingest_transaction
     */
    public function ingestTransaction(string $signedTransaction): LedgerIngestResult
    {
        return $this->ingest('appstore_ledger_ingest_transaction', $signedTransaction);
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
     * @cfunction appstore_ledger_ingest_renewal_info
     */
    public function ingestRenewalInfo(string $signedRenewalInfo): LedgerIngestResult
    {
        return $this->ingest('appstore_ledger_ingest_renewal_info', $signedRenewalInfo);
    }

    private function ingest(string $fn, string $jws): LedgerIngestResult
    {
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = Native::errorSlot();
        $st = $f->$fn($this->h(), $jws, strlen($jws), FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            throw self::exception(Native::takeError($err, $st));
        }
        return LedgerIngestResult::fromArray(json_decode(Native::takeString($out), true, 512, JSON_THROW_ON_ERROR));
    }

    /**
     * One subscription (its originalTransactionId) at an instant: Apple's status (1-5), product, expiry, grace period,
     * auto-renew state, pending product, upgrade, offer, family sharing, revocation. No subscription when the ledger
     * knew nothing of it.
     *
     * $atMs: the instant asked about; $asOfMs: the knowledge time, only facts signed by then count ($asOfMs = $atMs:
     * as known then; docs/ledger.md, "Bitemporal queries"). Milliseconds since 1970; null: now.
     *
     * @cfunction appstore_ledger_query_subscription
     */
    public function subscription(string $originalTransactionId, ?int $atMs = null, ?int $asOfMs = null): ?LedgerSubscription
    {
        $v = $this->query('appstore_ledger_query_subscription', Native::cText($originalTransactionId, 'originalTransactionId'),
            self::at($atMs), self::at($asOfMs, 'asOfMs'));
        return $v === null ? null : LedgerSubscription::fromArray($v);
    }

    /**
     * One customer (an appAccountToken, in any case; or the originalTransactionId of purchases without one) at an
     * instant: the products they are entitled to, each with why and until when, their subscriptions, their one-time
     * purchases, and consumables bought and refunded. An unknown customer has empty lists.
     *
     * $atMs, $asOfMs: the instant asked about and the knowledge time, as for subscription() (null: now).
     *
     * @cfunction appstore_ledger_query_customer
     */
    public function customer(string $customerId, ?int $atMs = null, ?int $asOfMs = null): LedgerCustomer
    {
        return LedgerCustomer::fromArray($this->query('appstore_ledger_query_customer', Native::cText($customerId, 'customerId'),
            self::at($atMs), self::at($asOfMs, 'asOfMs')) ?? []);
    }

    /**
     * Counts, and the oracle: the notifications whose data.status the ledger does not reproduce at their signedDate,
     * each with its verdict: INCOMPLETE_HISTORY (the ledger lacks facts before it; "missing" says which, a catch-up
     * fills them) or CONTRADICTION (the signed facts the ledger decided from disagree with data.status).
     * "contradictions" and "incompleteHistories" count them all; "disagreements" lists at most 1,000, every
     * CONTRADICTION first, then INCOMPLETE_HISTORY, each by signedDate (a fresh ledger's backlog of first renewals never
     * hides a contradiction, and the answer stays small at any size).
     *
     * @cfunction appstore_ledger_query_summary
     */
    public function summary(): LedgerSummary
    {
        return LedgerSummary::fromArray($this->query('appstore_ledger_query_summary') ?? []);
    }

    /**
     * Verifies every stored value again with the ledger's verifier (the one it was opened with): how many were checked
     * and the ones it refuses now, each with the verifier's status, reason and message. With online checks on, a
     * certificate revoked since the value was stored is found; without them, the answer does not change with time.
     * Stored values are not verified when the ledger is opened (they were before they were stored): this is the check.
     * Nothing is changed.
     *
     * @cfunction appstore_ledger_reverify
     */
    public function reverify(): LedgerReverifyResult
    {
        return LedgerReverifyResult::fromArray($this->query('appstore_ledger_reverify') ?? []);
    }

    /**
     * Every disagreement of the oracle, a page at a time, in the summary's order (every CONTRADICTION first, then
     * INCOMPLETE_HISTORY, each by signedDate, then notificationUUID), read along an index: a page costs its own rows at
     * any size. A page holds at most the limit asked for (1 to 10,000) after the cursor given (the "next" of the
     * previous page, opaque), and "next", absent after the last page. A verdict that changes between two pages (a
     * catch-up turns an INCOMPLETE_HISTORY into AGREES) is listed at most once.
     *
     * $after: the previous page's `next`, or null (or '') for the first page; `next` is null after the last page. A
     * cursor this method did not make, or a limit out of range, throws InvalidArgumentException.
     *
     * @cfunction appstore_ledger_query_disagreements
     */
    public function disagreements(?string $after = null, int $limit = 1000): LedgerDisagreementPage
    {
        if ($limit < 1 || $limit > 10000) {
            throw new \InvalidArgumentException("limit must be 1 to 10000, got $limit");
        }
        $cursor = Native::cText($after ?? '', 'after');
        return LedgerDisagreementPage::fromArray($this->query('appstore_ledger_query_disagreements', $cursor, $limit) ?? []);
    }

    /**
     * The ledger's subscription ids (originalTransactionIds of auto-renewable subscriptions), a page at a time in the
     * database's order, read along an index: a page costs its own rows at any size and nothing is held between pages (a
     * sweep over every subscription, as `sync` makes). A page holds at most the limit asked for (1 to 10,000) of the ids
     * after the cursor given (the "next" of the previous page: its last id), and "next", absent after the last page.
     *
     * $after: the previous page's `next`, or null (or '') for the first page; `next` is null after the last page. A
     * limit out of range throws InvalidArgumentException.
     *
     * @cfunction appstore_ledger_query_subscription_ids
     */
    public function subscriptionIds(?string $after = null, int $limit = 1000): LedgerIdPage
    {
        return $this->idPage('appstore_ledger_query_subscription_ids', $after, $limit);
    }

    /**
     * The ledger's customer ids (appAccountTokens in lowercase, else originalTransactionIds), a page at a time, as the
     * subscription ids are.
     *
     * Each is a customer id customer() answers for; $after and $limit as for subscriptionIds().
     *
     * @cfunction appstore_ledger_query_customer_ids
     */
    public function customerIds(?string $after = null, int $limit = 1000): LedgerIdPage
    {
        return $this->idPage('appstore_ledger_query_customer_ids', $after, $limit);
    }

    private function idPage(string $function, ?string $after, int $limit): LedgerIdPage
    {
        if ($limit < 1 || $limit > 10000) {
            throw new \InvalidArgumentException("limit must be 1 to 10000, got $limit");
        }
        $cursor = Native::cText($after ?? '', 'after');
        return LedgerIdPage::fromArray($this->query($function, $cursor, $limit) ?? []);
    }

    /**
     * Imports a file of JSON lines of signed values (a backfill, a migration from another system; docs/ledger.md, "Bulk
     * import"): each line {"notification": JWS}, {"signedPayload": JWS} (a notification body as Apple posts it),
     * {"transaction": JWS}, {"renewalInfo": JWS}, or a bare JWS (a notification); empty lines are skipped. Values are
     * verified on every core, outside the ledger's lock, and committed `batch_size` lines per transaction (0: 1000). A
     * value whose payload and signature are already stored is counted "alreadyPresent" without being verified again, so
     * running the same file again after an interruption stores what is missing and nothing twice.
     *
     * Refused lines are in the result (refusedCount, and refused with their line numbers), not thrown; a file that
     * cannot be read throws InvalidArgumentException. $batchSize: 0 (1000) to 4294967295.
     *
     * @cfunction appstore_ledger_import_jsonl
     */
    public function importJsonl(string $path, int $batchSize = 0): LedgerImportResult
    {
        if ($batchSize < 0 || $batchSize > 0xFFFFFFFF) {
            throw new \InvalidArgumentException("batchSize must be 0 (the default) to 4294967295, got $batchSize");
        }
        return LedgerImportResult::fromArray($this->query('appstore_ledger_import_jsonl', Native::cText($path, 'path'), $batchSize) ?? []);
    }

    /**
     * Exports every stored value of the ledger's identity as the JSON lines the bulk import reads (a backup, a move to
     * another store, a hand-over to another system; docs/ledger.md, "Export"): one line per value, in the order stored,
     * {"notification": JWS}, {"transaction": JWS} or {"renewalInfo": JWS}, each JWS byte for byte as it was ingested, so
     * it can be verified again.
     *
     * Imported back (importJsonl()), into a new ledger on any store, it is the same ledger. The file is written beside
     * $path under a temporary name of its own (mode 0600), flushed to disk and renamed over $path. A file that cannot
     * be created or put in place throws InvalidArgumentException; a failed write (disk full) a LedgerException. On any
     * failure $path keeps what it was.
     *
     * @cfunction appstore_ledger_export_jsonl
     */
    public function exportJsonl(string $path): LedgerExportResult
    {
        return LedgerExportResult::fromArray($this->query('appstore_ledger_export_jsonl', Native::cText($path, 'path')) ?? []);
    }

    private static function at(?int $ms, string $name = 'atMs'): int
    {
        if ($ms !== null && $ms <= 0) {
            throw new \InvalidArgumentException("$name must be milliseconds since 1970, got $ms");
        }
        return $ms ?? 0;
    }

    private function query(string $fn, mixed ...$args): ?array
    {
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = Native::errorSlot();
        $st = $f->$fn($this->h(), ...[...$args, FFI::addr($out), FFI::addr($err)]);
        if ($st !== 0) {
            throw self::exception(Native::takeError($err, $st));
        }
        return json_decode(Native::takeString($out), true, 512, JSON_THROW_ON_ERROR);
    }
}
