<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Http\HttpTransport;
use AppStoreServer\Internal\AbiConstants as K;
use AppStoreServer\Internal\CTransport;
use AppStoreServer\Internal\ErrorInfo;
use AppStoreServer\Internal\Native;
use AppStoreServer\Internal\NotCloneable;
use AppStoreServer\Model\AppTransaction;
use AppStoreServer\Model\DecodedRealtimeRequestBody;
use AppStoreServer\Model\Environment;
use AppStoreServer\Model\JWSRenewalInfoDecodedPayload;
use AppStoreServer\Model\JWSTransactionDecodedPayload;
use AppStoreServer\Model\ResponseBodyV2DecodedPayload;
use AppStoreServer\Model\VerifiedNotification;
use FFI;
use FFI\CData;

/**
 * Verifies and decodes signed data from the App Store (Apple's constructor and method names).
 *
 * It checks the ES256 signature first, then the x5c chain against the given roots only (never the chain's own
 * root), Apple's marker extensions, the certificates' validity at the payload's date (at the current time with
 * online checks), revocation (online checks, OCSP), and the identity: bundle id, app Apple ID (Production),
 * environment. A failure throws VerificationException. A verifier is immutable; create it once per process (a
 * php-fpm worker keeps it across requests in a static) so its chain cache is reused.
 */
class SignedDataVerifier
{
    use NotCloneable;

    private ?CData $handle = null;
    private ?ErrorInfo $failure = null;
    private ?CTransport $transport = null;

    /**
     * @param list<string> $rootCertificates DER (or PEM) root certificates: Apple Root CA - G3 (AppleRoots::appleRootCAG3())
     * @param bool $enableOnlineChecks check revocation at the responders the certificates name (OCSP over $transport)
     * @param Environment $environment the environment the data must come from
     * @param string $bundleId the app's bundle identifier
     * @param ?int $appAppleId the app's Apple ID; required for Production
     * @param ?int $chainCacheSize verified chains cached (default 32; 0 disables the cache)
     * @param ?int $chainCacheTtl seconds a verified chain is reused (default 900)
     * @param ?HttpTransport $transport the HTTP client of online checks (default: curl, else PHP streams)
     * @param int $onlineTimeoutMs the time one OCSP exchange may take
     * @param ?int $maxJwsBytes the largest JWS accepted (default 1 MiB)
     * @throws \InvalidArgumentException a bad value (Production without app Apple ID, a root that is no certificate)
     * @throws ConfigurationException options that do not make a verifier
     */
    public function __construct(
        array $rootCertificates,
        bool $enableOnlineChecks,
        Environment $environment,
        string $bundleId,
        ?int $appAppleId = null,
        ?int $chainCacheSize = null,
        ?int $chainCacheTtl = null,
        ?HttpTransport $transport = null,
        int $onlineTimeoutMs = 30000,
        ?int $maxJwsBytes = null,
    ) {
        foreach ($rootCertificates as $i => $root) {
            if (!is_string($root)) {
                throw new \TypeError("rootCertificates[$i] must be a string (DER or PEM), not " . get_debug_type($root));
            }
        }
        if ($environment === Environment::PRODUCTION && $appAppleId === null) {
            throw new \InvalidArgumentException('appAppleId is required when the environment is Production');
        }
        Native::cText($bundleId, 'bundleId');
        if ($chainCacheSize !== null && ($chainCacheSize < 0 || $chainCacheSize > 0xFFFFFFFF)) {
            throw new \InvalidArgumentException("chainCacheSize must be 0 ... 4294967295, got $chainCacheSize");
        }
        if ($chainCacheTtl !== null && $chainCacheTtl < 0) {
            throw new \InvalidArgumentException("chainCacheTtl must be >= 0, got $chainCacheTtl");
        }
        if ($onlineTimeoutMs < 1 || $onlineTimeoutMs > 3_600_000) {
            throw new \InvalidArgumentException("onlineTimeoutMs must be 1 ... 3600000, got $onlineTimeoutMs");
        }
        if ($maxJwsBytes !== null && ($maxJwsBytes < 1 || $maxJwsBytes > 2147483647)) {
            throw new \InvalidArgumentException("maxJwsBytes must be 1 ... 2147483647, got $maxJwsBytes");
        }
        $this->own();
        $f = Native::ffi();
        $opts = $f->new('appstore_verifier_options *');
        $err = Native::errorSlot();
        $st = $f->appstore_verifier_options_new(FFI::addr($opts), FFI::addr($err));
        if ($st !== 0) {
            throw ConfigurationException::fromInfo(Native::takeError($err, $st));
        }
        try {
            foreach (array_values($rootCertificates) as $i => $der) {
                $this->option($f->appstore_verifier_options_add_root($opts, $der, strlen($der), FFI::addr($err)), $err, "rootCertificates[$i]");
            }
            $this->option($f->appstore_verifier_options_set_bundle_id($opts, $bundleId, FFI::addr($err)), $err, 'bundleId');
            if ($appAppleId !== null) {
                $this->option($f->appstore_verifier_options_set_app_apple_id($opts, $appAppleId, FFI::addr($err)), $err, 'appAppleId');
            }
            $this->option($f->appstore_verifier_options_set_environment($opts, self::environmentCode($environment), FFI::addr($err)), $err, 'environment');
            $this->option($f->appstore_verifier_options_set_online_checks($opts, $enableOnlineChecks ? 1 : 0, FFI::addr($err)), $err, 'enableOnlineChecks');
            if ($chainCacheSize !== null || $chainCacheTtl !== null) {
                $this->option($f->appstore_verifier_options_set_chain_cache($opts, $chainCacheSize ?? 32, $chainCacheTtl ?? 900, FFI::addr($err)), $err, 'chainCache');
            }
            if ($maxJwsBytes !== null) {
                $this->option($f->appstore_verifier_options_set_max_jws_bytes($opts, $maxJwsBytes, FFI::addr($err)), $err, 'maxJwsBytes');
            }
            if ($enableOnlineChecks) {
                $this->transport = CTransport::for($transport);
                $this->option($f->appstore_verifier_options_set_transport($opts, $this->transport->handle, $onlineTimeoutMs, FFI::addr($err)), $err, 'transport');
            }
            $out = $f->new('appstore_verifier *');
            $st = $f->appstore_verifier_new($opts, FFI::addr($out), FFI::addr($err));
            if ($st !== 0) {
                $info = Native::takeError($err, $st);
                if ($info->reason === K::APPSTORE_REASON_NO_TRUST_ANCHOR) {
                    // As Apple's libraries: the verifier is made, and every verification fails.
                    $this->failure = $info;
                } elseif ($info->reason === K::APPSTORE_REASON_BAD_CERTIFICATE) {
                    throw new \InvalidArgumentException("rootCertificates: {$info->message}");
                } else {
                    throw ConfigurationException::fromInfo($info);
                }
            } else {
                $this->handle = $out;
            }
        } finally {
            $f->appstore_verifier_options_free($opts);
        }
    }

    private function option(int $status, CData $err, string $name): void
    {
        if ($status !== 0) {
            throw new \InvalidArgumentException("$name: " . Native::takeError($err, $status)->message);
        }
    }

    /** @internal The verifier's handle (the ledger keeps its own reference); null when it has no roots. */
    public function handle(): ?CData
    {
        return $this->handle;
    }

    /** @internal Why the verifier has no handle (no roots), thrown as every verification would. */
    public function failure(): VerificationException
    {
        $i = $this->failure;
        return new VerificationException($i->status, $i->reason, $i->message);
    }

    /** @internal The C code of an environment. */
    public static function environmentCode(Environment $environment): int
    {
        return match ($environment) {
            Environment::SANDBOX => K::APPSTORE_ENVIRONMENT_SANDBOX,
            Environment::PRODUCTION => K::APPSTORE_ENVIRONMENT_PRODUCTION,
            Environment::XCODE => K::APPSTORE_ENVIRONMENT_XCODE,
            Environment::LOCAL_TESTING => K::APPSTORE_ENVIRONMENT_LOCAL_TESTING,
        };
    }

    public function __destruct()
    {
        if ($this->owns() && $this->handle !== null) {
            Native::ffi()->appstore_verifier_free($this->handle);
            $this->handle = null;
        }
    }

    /**
     * Verifies and decodes an App Store Server Notification V2 signedPayload.
     *
     * @throws VerificationException the data is not genuine, not valid, or not for this verifier
     *
     * @cfunction appstore_verifier_verify_notification
     */
    public function verifyAndDecodeNotification(string $signedPayload): ResponseBodyV2DecodedPayload
    {
        if ((new \ReflectionMethod($this, 'verifyNotification'))->getDeclaringClass()->getName() === self::class) {
            return ResponseBodyV2DecodedPayload::fromArray($this->verify('notification', $signedPayload));
        }
        // A subclass overrides verifyNotification: the library verifies all but the app, which the override checks.
        if ($this->handle === null) {
            $i = $this->failure;
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
        $f = Native::ffi();
        $out = $f->new('char *');
        $ident = $f->new('char *');
        $err = $f->new('appstore_error *');
        $st = $f->appstore_verifier_notification_leaving_identity($this->handle, $signedPayload, strlen($signedPayload),
            FFI::addr($out), FFI::addr($ident), FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
        $text = FFI::string($out);
        $f->appstore_string_free($out);
        $id = json_decode(FFI::string($ident), true, 512, JSON_THROW_ON_ERROR);
        $f->appstore_string_free($ident);
        $this->verifyNotification($id['bundleId'] ?? null, $id['appAppleId'] ?? null,
            isset($id['environment']) ? (Environment::tryFrom($id['environment']) ?? $id['environment']) : null);
        return ResponseBodyV2DecodedPayload::fromArray(json_decode($text, true, 512, JSON_THROW_ON_ERROR));
    }

    /**
     * The app check of a notification on its own: the default of Apple's verifyNotification extension point.
     *
     * Called by verifyAndDecodeNotification after the signature, the chain and the payload passed, with the app the
     * notification names (data, summary, externalPurchaseToken or appData, in Apple's order; null when absent). A
     * subclass may override it, e.g. to accept several apps; the notification is returned only when it returns.
     *
     * @throws VerificationException INVALID_APP_IDENTIFIER or INVALID_ENVIRONMENT
     *
     * @cfunction appstore_verifier_check_notification_identity
     */
    protected function verifyNotification(?string $bundleId, ?int $appAppleId, Environment|string|null $environment): void
    {
        if ($this->handle === null) {
            $i = $this->failure;
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
        if ($bundleId !== null) {
            Native::cText($bundleId, 'bundleId');
        }
        $env = $environment instanceof Environment ? $environment->value : $environment;
        if ($env !== null) {
            Native::cText($env, 'environment');
        }
        $f = Native::ffi();
        $err = $f->new('appstore_error *');
        $st = $f->appstore_verifier_check_notification_identity($this->handle, $bundleId, $appAppleId ?? 0, $env, FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            if ($i->status === K::APPSTORE_INVALID_ARGUMENT) {
                throw new \InvalidArgumentException($i->message);
            }
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
    }

    /**
     * Verifies and decodes a signedTransaction (bundle id, then environment).
     *
     * @throws VerificationException the data is not genuine, not valid, or not for this verifier
     *
     * @cfunction appstore_verifier_verify_transaction
     */
    public function verifyAndDecodeTransaction(string $signedTransaction): JWSTransactionDecodedPayload
    {
        return JWSTransactionDecodedPayload::fromArray($this->verify('transaction', $signedTransaction));
    }

    /**
     * Verifies and decodes a signedRenewalInfo (the environment is checked; Apple checks no bundle id).
     *
     * @throws VerificationException the data is not genuine, not valid, or not for this verifier
     *
     * @cfunction appstore_verifier_verify_renewal_info
     */
    public function verifyAndDecodeRenewalInfo(string $signedRenewalInfo): JWSRenewalInfoDecodedPayload
    {
        return JWSRenewalInfoDecodedPayload::fromArray($this->verify('renewal_info', $signedRenewalInfo));
    }

    /**
     * Verifies and decodes a signed AppTransaction.
     *
     * @throws VerificationException the data is not genuine, not valid, or not for this verifier
     *
     * @cfunction appstore_verifier_verify_app_transaction
     */
    public function verifyAndDecodeAppTransaction(string $signedAppTransaction): AppTransaction
    {
        return AppTransaction::fromArray($this->verify('app_transaction', $signedAppTransaction));
    }

    /**
     * Verifies and decodes a Retention Messaging "Get Retention Message" realtime request body's signedPayload.
     *
     * @throws VerificationException the data is not genuine, not valid, or not for this verifier
     *
     * @cfunction appstore_verifier_verify_realtime_request
     */
    public function verifyAndDecodeRealtimeRequest(string $signedPayload): DecodedRealtimeRequestBody
    {
        return DecodedRealtimeRequestBody::fromArray($this->verify('realtime_request', $signedPayload));
    }

    /**
     * Verifies and decodes a notification and the signed values nested in it (data.signedTransactionInfo,
     * data.signedRenewalInfo, appData.signedAppTransactionInfo), each at its own effective date, all returned decoded
     * (notification, transaction, renewalInfo, appTransaction; each absent when the notification carries none). A
     * nested failure fails the call, and the error message starts with the field name (e.g.
     * "data.signedTransactionInfo: ...").
     *
     * @throws VerificationException the data is not genuine, not valid, or not for this verifier
     *
     * @cfunction appstore_verifier_verify_notification_deep
     */
    public function verifyAndDecodeNotificationDeep(string $signedPayload): VerifiedNotification
    {
        return VerifiedNotification::fromArray($this->verify('notification_deep', $signedPayload));
    }

    /**
     * The verified payload as decoded JSON (an array, every key as Apple signed it, unknown ones included).
     *
     * @param string $kind notification, transaction, renewal_info, app_transaction, realtime_request or notification_deep
     */
    public function verifyAndDecodeJson(string $kind, string $jws): array
    {
        return $this->verify($kind, $jws);
    }

    private const FUNCTIONS = [
        'notification' => 'appstore_verifier_verify_notification',
        'transaction' => 'appstore_verifier_verify_transaction',
        'renewal_info' => 'appstore_verifier_verify_renewal_info',
        'app_transaction' => 'appstore_verifier_verify_app_transaction',
        'realtime_request' => 'appstore_verifier_verify_realtime_request',
        'notification_deep' => 'appstore_verifier_verify_notification_deep',
    ];

    private function verify(string $kind, string $jws): array
    {
        $fn = self::FUNCTIONS[$kind] ?? null;
        if ($fn === null) {
            throw new \InvalidArgumentException('kind must be one of ' . implode(', ', array_keys(self::FUNCTIONS)) . ", got '$kind'");
        }
        if ($this->handle === null) {
            $i = $this->failure;
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = $f->new('appstore_error *');
        $st = $f->$fn($this->handle, $jws, strlen($jws), FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw new VerificationException($i->status, $i->reason, $i->message);
        }
        $text = FFI::string($out);
        $f->appstore_string_free($out);
        return json_decode($text, true, 512, JSON_THROW_ON_ERROR);
    }

    /**
     * Chain cache counters since the verifier was created: hits, misses, and the chains cached now.
     *
     * @return array{hits: int, misses: int, entries: int}
     *
     * @cfunction appstore_verifier_cache_stats
     */
    public function cacheStats(): array
    {
        if ($this->handle === null) {
            return ['hits' => 0, 'misses' => 0, 'entries' => 0];
        }
        $f = Native::ffi();
        $h = $f->new('uint64_t');
        $m = $f->new('uint64_t');
        $e = $f->new('uint64_t');
        $f->appstore_verifier_cache_stats($this->handle, FFI::addr($h), FFI::addr($m), FFI::addr($e), null);
        return ['hits' => $h->cdata, 'misses' => $m->cdata, 'entries' => $e->cdata];
    }
}
