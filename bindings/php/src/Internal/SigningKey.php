<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

use AppStoreServer\Internal\AbiConstants as K;
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

    public function __construct(string $pem, string $keyId, ?string $issuerId, string $bundleId)
    {
        Native::cText($keyId, 'keyId');
        Native::cText($bundleId, 'bundleId');
        if ($issuerId !== null) {
            Native::cText($issuerId, 'issuerId');
        }
        $f = Native::ffi();
        $out = $f->new('appstore_signing_key *');
        $err = Native::errorSlot();
        $st = $f->appstore_signing_key_new($pem, strlen($pem), $keyId, $issuerId, $bundleId, FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw $st === K::APPSTORE_INVALID_KEY ? SigningException::fromInfo($i) : new \InvalidArgumentException($i->message);
        }
        $this->handle = $out;
        $this->own();
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
