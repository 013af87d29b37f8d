<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

/** Shared inputs of the tests: the repository, the own PKI (Tests/support/testpki.py), the conformance data. */
final class Support
{
    public const KEY_ID = 'ABC123DEFG';
    public const ISSUER = '57246542-96fe-1a63-e053-0824d011072a';
    public const BUNDLE = 'com.example.app';

    public static function repo(): string
    {
        return getenv('APPSTORESERVER_REPO') ?: dirname(__DIR__, 3);
    }

    public static function conformance(): string
    {
        $env = getenv('APPSTORESERVER_CONFORMANCE');
        $dir = $env ?: self::repo() . '/../shared/conformance';
        return realpath($dir) ?: $dir;
    }

    /** Made once per run by run-tests (APPSTORESERVER_TESTPKI), else here into a temporary folder. */
    public static function testpki(): string
    {
        static $dir = null;
        if ($dir === null) {
            $dir = getenv('APPSTORESERVER_TESTPKI') ?: self::generate('testpki.py');
        }
        return $dir;
    }

    /** Tests/support/check_signatures.py keys: p256.p8, p256_public.pem, p384.p8, rsa.p8, encrypted.p8 ... */
    public static function keys(): string
    {
        static $dir = null;
        if ($dir === null) {
            $dir = getenv('APPSTORESERVER_KEYS') ?: self::generate('check_signatures.py', 'keys');
        }
        return $dir;
    }

    private static function generate(string $script, string ...$args): string
    {
        $out = sys_get_temp_dir() . '/appstoreserver-php-' . bin2hex(random_bytes(6));
        mkdir($out);
        $cmd = array_merge(['python3', self::repo() . "/Tests/support/$script"], $args, [$out]);
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $o = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
        if (proc_close($p) !== 0) {
            throw new \RuntimeException("$script failed: $o");
        }
        register_shutdown_function(static fn () => exec('rm -rf ' . escapeshellarg($out)));
        return $out;
    }

    public static function json(string $path): array
    {
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }
}
