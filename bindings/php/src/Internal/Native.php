<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

use AppStoreServer\AppStoreServerException;
use FFI;
use FFI\CData;

/**
 * The loaded C library: one FFI instance per process (per request under php-fpm, or the preloaded scope).
 *
 * Where the library is: $APPSTORESERVER_LIB when set, else the copy this package carries (lib/, put there by the
 * package build, bindings/php/scripts/build). The declarations are generated from the ABI description
 * (generated/appstoreserver.h). Under php-fpm with ffi.enable=preload, preload.php loads them once into the scope
 * APPSTORESERVER (FFI::load), and every request takes that scope (no parsing, no dlopen per request).
 *
 * @internal
 */
final class Native
{
    public const SCOPE = 'APPSTORESERVER';

    private static ?FFI $ffi = null;
    private static string $from = '';

    public static function ffi(): FFI
    {
        return self::$ffi ??= self::load();
    }

    /** How this request got the library: "scope" (preloaded, preload.php) or "cdef" (parsed on first use). */
    public static function loadedFrom(): string
    {
        self::ffi();
        return self::$from;
    }

    /** The library file this package loads. */
    public static function libraryPath(): string
    {
        $env = getenv('APPSTORESERVER_LIB');
        if (is_string($env) && $env !== '') {
            return $env;
        }
        return dirname(__DIR__, 2) . '/lib/libappstoreserver.so.0';
    }

    public static function headerPath(): string
    {
        return dirname(__DIR__, 2) . '/generated/appstoreserver.h';
    }

    private static function load(): FFI
    {
        if (!extension_loaded('ffi')) {
            throw new \RuntimeException('appstoreserver needs PHP\'s FFI extension (ext-ffi)');
        }
        // Preloaded (preload.php): the scope is there, nothing to parse.
        if ((ini_get('opcache.preload') || ini_get('ffi.preload')) && self::scopeLoaded()) {
            self::$from = 'scope';
            return FFI::scope(self::SCOPE);
        }
        self::$from = 'cdef';
        $lib = self::libraryPath();
        if (!is_file($lib)) {
            throw new \RuntimeException("appstoreserver: the library is missing at $lib (set APPSTORESERVER_LIB, or build "
                . 'the package with bindings/php/scripts/build)');
        }
        $header = file_get_contents(self::headerPath());
        if ($header === false) {
            throw new \RuntimeException('appstoreserver: cannot read ' . self::headerPath());
        }
        try {
            return FFI::cdef($header, $lib);
        } catch (\FFI\Exception $e) {
            throw new \RuntimeException('appstoreserver: PHP refused FFI (' . $e->getMessage() . '): with ffi.enable=preload '
                . '(php-fpm\'s default) preload the package (opcache.preload=.../preload.php, docs/php.md "php-fpm"), or set '
                . 'ffi.enable=1', 0, $e);
        }
    }

    private static function scopeLoaded(): bool
    {
        try {
            FFI::scope(self::SCOPE);
            return true;
        } catch (\Throwable) {
            return false;
        }
    }

    /** The declarations with FFI_SCOPE and the library's absolute path as FFI_LIB (for FFI::load / ffi.preload). */
    public static function scopedHeader(): string
    {
        $lib = realpath(self::libraryPath());
        if ($lib === false) {
            throw new \RuntimeException('appstoreserver: the library is missing at ' . self::libraryPath());
        }
        return '#define FFI_SCOPE "' . self::SCOPE . "\"\n#define FFI_LIB \"" . addcslashes($lib, "\"\\") . "\"\n"
            . file_get_contents(self::headerPath());
    }

    /**
     * For opcache.preload (preload.php): loads the declarations into the scope APPSTORESERVER, unless php.ini's
     * ffi.preload did already (ffi-header.php writes that file). FFI::load reads the library's path from the header,
     * so the header is written to $cacheDir first.
     */
    public static function preload(?string $cacheDir = null): void
    {
        if (self::scopeLoaded()) {
            return; // ffi.preload
        }
        if (ini_get('opcache.preload_user')) {
            throw new \RuntimeException('appstoreserver: FFI::load cannot run at preload time with opcache.preload_user; '
                . 'write the declarations with `php ffi-header.php FILE` and set ffi.preload=FILE');
        }
        $text = self::scopedHeader();
        $path = ($cacheDir ?? sys_get_temp_dir()) . '/appstoreserver-' . hash('sha256', $text) . '.h';
        if (!is_file($path)) {
            $tmp = $path . '.' . getmypid();
            file_put_contents($tmp, $text);
            rename($tmp, $path);
        }
        if (FFI::load($path) === null) {
            throw new \RuntimeException("appstoreserver: FFI::load($path) failed");
        }
    }

    // ---- errors ----------------------------------------------------------------------------------------------------

    /** A new `appstore_error *` slot (NULL), for an err_out argument (FFI::addr of it). */
    public static function errorSlot(): CData
    {
        return self::ffi()->new('appstore_error *');
    }

    /** Reads and frees the error a failed call wrote (status, reason, message, and Apple's answer for API calls). */
    public static function takeError(CData $slot, int $status): ErrorInfo
    {
        $f = self::ffi();
        if (FFI::isNull($slot)) {
            return new ErrorInfo($status, 0, "failed with status $status");
        }
        try {
            $info = new ErrorInfo(
                $f->appstore_error_status($slot),
                $f->appstore_error_reason($slot),
                $f->appstore_error_message($slot),
                $f->appstore_error_http_status($slot),
                $f->appstore_error_api_error_code($slot),
                $f->appstore_error_api_error_message($slot),
                $f->appstore_error_retry_after($slot),
                $f->appstore_error_retry_at_ms($slot),
            );
            $n = $f->appstore_error_header_count($slot);
            for ($i = 0; $i < $n; $i++) {
                $info->headers[] = [$f->appstore_error_header_name($slot, $i), $f->appstore_error_header_value($slot, $i)];
            }
            return $info;
        } finally {
            $f->appstore_error_free($slot);
        }
    }

    /** The text of a `char *` the library returned, freed. */
    public static function takeString(CData $out): string
    {
        $f = self::ffi();
        try {
            return FFI::string($out);
        } finally {
            $f->appstore_string_free($out);
        }
    }

    /** Throws a TypeError-free InvalidArgumentException for text C cannot take (a NUL inside). */
    public static function cText(string $value, string $name): string
    {
        if (str_contains($value, "\0")) {
            throw new \InvalidArgumentException("$name must not contain a NUL character");
        }
        return $value;
    }

    /** Text for C with any NUL replaced (messages, never values that must be exact). */
    public static function cleanText(string $value): string
    {
        return str_replace("\0", '?', $value);
    }

    /** A live handle count and malloc's bytes in use, for leak checks (null when the library predates them). */
    public static function debugCounters(): ?array
    {
        $f = self::ffi();
        try {
            return [$f->appstore_debug_live_objects(), $f->appstore_debug_malloc_in_use()];
        } catch (\Throwable) {
            return null;
        }
    }
}
