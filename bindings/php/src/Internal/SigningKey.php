<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

use AppStoreServer\Internal\AbiConstants as K;
use AppStoreServer\ExternalKey;
use AppStoreServer\SigningException;
use FFI;
use FFI\CData;

/**
 * An appstore_signing_key (the .p8 key and its identifiers), freed with its PHP object.
 *
 * @internal
 */
final class SigningKey
{
    use NotCloneable;

    public readonly CData $handle;

    private ?\Closure $callback = null; // an external signer's trampoline, alive as long as the handle

    public function __construct(string|ExternalKey $key, string $keyId, ?string $issuerId, string $bundleId)
    {
        Native::cText($keyId, 'keyId');
        Native::cText($bundleId, 'bundleId');
        if ($issuerId !== null) {
            Native::cText($issuerId, 'issuerId');
        }
        $f = Native::ffi();
        $out = $f->new('appstore_signing_key *');
        $err = Native::errorSlot();
        if ($key instanceof ExternalKey) {
            $this->callback = self::bridge($key->signer);
            $st = $f->appstore_signing_key_new_with_signer($this->callback, null, $key->publicKey, strlen($key->publicKey),
                $key->timeoutMs, $keyId, $issuerId, $bundleId, FFI::addr($out), FFI::addr($err));
        } else {
            $st = $f->appstore_signing_key_new($key, strlen($key), $keyId, $issuerId, $bundleId, FFI::addr($out), FFI::addr($err));
        }
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw $st === K::APPSTORE_INVALID_KEY ? SigningException::fromInfo($i) : new \InvalidArgumentException($i->message);
        }
        $this->handle = $out;
        $this->own();
    }

    /**
     * The C signer callback around a PHP signer: it catches everything (a PHP exception must never unwind through C)
     * and reports any failure as a failed signature; it captures only the signer (no cycle through this object).
     */
    private static function bridge(\Closure $signer): \Closure
    {
        return static function ($userData, $message, $messageLen, $digest, $signature, $cap, $signatureLen, $timeoutMs) use ($signer): int {
            try {
                $m = (int) $messageLen > 0 ? FFI::string($message, (int) $messageLen) : '';
                // The time it has (the key's timeout, or what is left of an API call's): PHP cannot abandon a signer,
                // so one that overruns is waited for, and its signature discarded when the call's deadline passed.
                $sig = $signer($m, FFI::string($digest, 32), (int) $timeoutMs);
                if (!is_string($sig) || $sig === '' || strlen($sig) > (int) $cap) {
                    return 1;
                }
                FFI::memcpy($signature, $sig, strlen($sig));
                $signatureLen[0] = strlen($sig);
                return 0;
            } catch (\Throwable) {
                return 1;
            }
        };
    }

    public function __destruct()
    {
        if ($this->owns()) {
            Native::ffi()->appstore_signing_key_free($this->handle);
        }
    }

    /**
     * Calls a signing function (key first, the output string and the error last) and returns the string it made.
     *
     * @throws SigningException the key could not sign, \InvalidArgumentException a value the library refused
     */
    public function sign(string $fn, mixed ...$args): string
    {
        $f = Native::ffi();
        $out = $f->new('char *');
        $err = Native::errorSlot();
        $st = $f->$fn($this->handle, ...[...$args, FFI::addr($out), FFI::addr($err)]);
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw $st === K::APPSTORE_INVALID_ARGUMENT ? new \InvalidArgumentException($i->message) : SigningException::fromInfo($i);
        }
        return Native::takeString($out);
    }
}
