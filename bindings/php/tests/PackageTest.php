<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The package as users install it: `composer install` from a path repository (a copy, not a symlink) into a scratch
 * project, offline (COMPOSER_DISABLE_NETWORK, no Packagist), with PATH stripped of the Swift toolchain; a script
 * of that project then verifies a transaction of the own PKI with the library the package carries.
 */
final class PackageTest extends TestCase
{
    public function testComposerInstallsThePackageOfflineAndItVerifies(): void
    {
        $package = dirname(__DIR__);
        $this->assertFileExists("$package/lib/libappstoreserver.so.0", 'the package build (scripts/build) copies the library in');
        $project = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/scratch-' . bin2hex(random_bytes(4));
        mkdir($project);
        file_put_contents("$project/composer.json", json_encode([
            'name' => 'example/receiver',
            'repositories' => [['type' => 'path', 'url' => $package, 'options' => ['symlink' => false]], ['packagist.org' => false]],
            'require' => ['appstoreserver/appstoreserver' => '*@dev'],
        ], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES));
        $pki = Support::testpki();
        file_put_contents("$project/verify.php", <<<'PHP'
            <?php
            declare(strict_types=1);
            require __DIR__ . '/vendor/autoload.php';
            use AppStoreServer\SignedDataVerifier;
            use AppStoreServer\Model\Environment;
            $v = new SignedDataVerifier([file_get_contents($argv[1] . '/root.der')], false, Environment::SANDBOX, 'com.example.testpki');
            $t = $v->verifyAndDecodeTransaction(trim(file_get_contents($argv[1] . '/jws/tx-valid.jws')));
            echo $t->transactionId, ' ', \AppStoreServer\Internal\Native::libraryPath(), "\n";
            PHP);
        $path = implode(':', array_filter(explode(':', (string) getenv('PATH')), static fn ($d) => !is_executable("$d/swift") && !is_executable("$d/swiftc")));
        $env = ['PATH' => $path, 'HOME' => $project, 'COMPOSER_HOME' => "$project/.composer", 'COMPOSER_DISABLE_NETWORK' => '1',
            'COMPOSER_NO_INTERACTION' => '1'];
        [$rc, $out] = self::exec(['composer', 'install', '--no-progress', '--no-interaction'], $project, $env);
        $this->assertSame(0, $rc, $out);
        $installed = "$project/vendor/appstoreserver/appstoreserver";
        $this->assertFalse(is_link($installed), 'a copy, as users get it');
        $this->assertFileExists("$installed/lib/libappstoreserver.so.0");
        [$rc, $out] = self::exec([PHP_BINARY, '-d', 'ffi.enable=1', 'verify.php', $pki], $project, $env);
        $this->assertSame(0, $rc, $out);
        $this->assertSame("2000000912345678 $installed/lib/libappstoreserver.so.0", trim($out));
        exec('rm -rf ' . escapeshellarg($project));
    }

    /** @return array{0: int, 1: string} */
    private static function exec(array $cmd, string $cwd, array $env): array
    {
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes, $cwd, $env);
        $out = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        return [proc_close($p), (string) $out];
    }
}
