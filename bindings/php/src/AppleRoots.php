<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\Native;
use FFI;

/** Apple's root certificates, carried by the library (each checked against Apple's published SHA-256 fingerprint). */
final class AppleRoots
{
    /** Apple Root CA - G3, the root of App Store signed data (DER). */
    public static function appleRootCAG3(): string
    {
        return self::der(0);
    }

    /** Apple Inc. Root, the root of app receipts (DER). */
    public static function appleIncRoot(): string
    {
        return self::der(1);
    }

    /** @return list<array{name: string, sha256: string, der: string}> */
    public static function all(): array
    {
        $f = Native::ffi();
        $out = [];
        for ($i = 0, $n = $f->appstore_apple_root_count(); $i < $n; $i++) {
            $out[] = ['name' => $f->appstore_apple_root_name($i), 'sha256' => $f->appstore_apple_root_sha256($i), 'der' => self::der($i)];
        }
        return $out;
    }

    private static function der(int $index): string
    {
        $f = Native::ffi();
        $len = $f->new('size_t');
        $p = $f->appstore_apple_root_der($index, FFI::addr($len));
        if ($p === null || FFI::isNull($p) || $len->cdata === 0) {
            throw new \RuntimeException("Apple root $index is not available");
        }
        return FFI::string($p, $len->cdata);
    }
}
