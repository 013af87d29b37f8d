<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\AbiConstants as K;
use AppStoreServer\Internal\ErrorInfo;
use AppStoreServer\Internal\Native;
use AppStoreServer\Internal\NotCloneable;
use AppStoreServer\Model\LedgerCustomer;
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
     * Opens (creating if needed) "sqlite:/path/ledger.db", "sqlite::memory:" or "postgresql://user@host:port/db".
     *
     * @throws \InvalidArgumentException a URL it cannot use
     * @throws ConfigurationException a database of a newer schema, PostgreSQL without libpq, a verifier without roots
     * @throws LedgerException the database failed or cannot be reached
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

    /** Closes the database (also when the object is destroyed). */
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
     * Verifies and records a notification (its signed transaction and renewal info too).
     *
     * @throws VerificationException a value the verifier refuses (nothing changes)
     * @throws LedgerException the database failed (nothing was acknowledged)
     */
    public function ingestNotification(string $signedPayload): LedgerIngestResult
    {
        return $this->ingest('appstore_ledger_ingest_notification', $signedPayload);
    }

    /** Verifies and records a signed transaction (from the app, Get Transaction History / Info, statuses). */
    public function ingestTransaction(string $signedTransaction): LedgerIngestResult
    {
        return $this->ingest('appstore_ledger_ingest_transaction', $signedTransaction);
    }

    /** Verifies and records a signed renewal info (Get All Subscription Statuses). */
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
     * One subscription (its originalTransactionId) at an instant (milliseconds since 1970; null = now); null when
     * the ledger knows nothing of it then.
     */
    public function subscription(string $originalTransactionId, ?int $atMs = null): ?LedgerSubscription
    {
        $v = $this->query('appstore_ledger_query_subscription', Native::cText($originalTransactionId, 'originalTransactionId'), self::at($atMs));
        return $v === null ? null : LedgerSubscription::fromArray($v);
    }

    /** One customer (an appAccountToken, or the originalTransactionId of purchases without one) at an instant. */
    public function customer(string $customerId, ?int $atMs = null): LedgerCustomer
    {
        return LedgerCustomer::fromArray($this->query('appstore_ledger_query_customer', Native::cText($customerId, 'customerId'), self::at($atMs)) ?? []);
    }

    /** Counts, and the notifications whose data.status the ledger does not reproduce at their signedDate. */
    public function summary(): LedgerSummary
    {
        return LedgerSummary::fromArray($this->query('appstore_ledger_query_summary') ?? []);
    }

    private static function at(?int $atMs): int
    {
        if ($atMs !== null && $atMs <= 0) {
            throw new \InvalidArgumentException("atMs must be milliseconds since 1970, got $atMs");
        }
        return $atMs ?? 0;
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
