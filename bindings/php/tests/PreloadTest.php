<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/**
 * preload.php as php-fpm runs it (opcache.preload, ffi.enable=preload), here in the CLI with OPcache on: the
 * request takes the preloaded scope (no declarations parsed, no library opened) and verifies.
 */
final class PreloadTest extends TestCase
{
    public function testThePreloadedScopeServesTheRequest(): void
    {
        if (!function_exists('opcache_get_status') && !extension_loaded('Zend OPcache')) {
            $this->markTestSkipped('SKIPPED: no OPcache, no preloading');
        }
        $package = dirname(__DIR__);
        $pki = Support::testpki();
        $script = tempnam(sys_get_temp_dir(), 'preload') . '.php';
        file_put_contents($script, <<<'PHP'
            <?php
            declare(strict_types=1);
            use AppStoreServer\SignedDataVerifier;
            use AppStoreServer\Model\Environment;
            $v = new SignedDataVerifier([file_get_contents($argv[1] . '/root.der')], false, Environment::SANDBOX, 'com.example.testpki');
            echo $v->verifyAndDecodeTransaction(trim(file_get_contents($argv[1] . '/jws/tx-valid.jws')))->transactionId, ' ',
                \AppStoreServer\Internal\Native::loadedFrom(), "\n";
            PHP);
        $user = posix_getpwuid(posix_geteuid())['name'] ?? 'root';
        $header = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/appstoreserver-' . bin2hex(random_bytes(4)) . '.h';
        exec(escapeshellarg(PHP_BINARY) . ' ' . escapeshellarg("$package/ffi-header.php") . ' ' . escapeshellarg($header), $o, $rc);
        $this->assertSame(0, $rc, implode("\n", $o));
        // As php-fpm started as root runs it: ffi.preload (the declarations), opcache.preload (the classes).
        $cmd = [PHP_BINARY, '-d', 'opcache.enable=1', '-d', 'opcache.enable_cli=1', '-d', "opcache.preload=$package/preload.php",
            '-d', "opcache.preload_user=$user", '-d', 'ffi.enable=preload', '-d', "ffi.preload=$header", $script, $pki];
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        $out = (string) stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        $rc = proc_close($p);
        unlink($script);
        @unlink($header);
        $this->assertSame(0, $rc, $out);
        $this->assertSame('2000000912345678 scope', trim($out));
    }

    /** FFI disabled: the first use says what to configure, as an exception (not a fatal error). */
    public function testFfiRefusedIsAnExceptionThatSaysWhatToDo(): void
    {
        $script = tempnam(sys_get_temp_dir(), 'noffi') . '.php';
        file_put_contents($script, '<?php require ' . var_export(dirname(__DIR__) . '/vendor/autoload.php', true) . ';'
            . ' try { AppStoreServer\AppleRoots::appleRootCAG3(); echo "loaded"; } catch (RuntimeException $e) { echo $e->getMessage(); }');
        exec(escapeshellarg(PHP_BINARY) . ' -d ffi.enable=0 ' . escapeshellarg($script) . ' 2>&1', $out, $rc);
        unlink($script);
        $this->assertSame(0, $rc, implode("\n", $out));
        $this->assertStringContainsString('PHP refused FFI', implode("\n", $out));
        $this->assertStringContainsString('preload.php', implode("\n", $out));
    }
}
