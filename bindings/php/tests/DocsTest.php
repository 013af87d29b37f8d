<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/**
 * docs/php.md's PHP blocks: the one marked "test: post" runs as written, as a web script under PHP's built-in server
 * (its `vendor/autoload.php` is this package's), and answers a real Sandbox notification as the page says; every
 * other PHP block must at least parse (`php -l`).
 */
final class DocsTest extends TestCase
{
    /** @return list<array{0: string, 1: string}> (marker, code) */
    private static function blocks(): array
    {
        $text = (string) file_get_contents(Support::repo() . '/docs/php.md');
        preg_match_all('/(?:<!-- test: (\w+)[^\n]*-->\n)?```php\n(.*?)```/s', $text, $m, PREG_SET_ORDER);
        return array_map(static fn ($x) => [$x[1] ?: 'none', $x[2]], $m);
    }

    public function testEveryPhpBlockIsMarkedAndParses(): void
    {
        $blocks = self::blocks();
        $this->assertGreaterThanOrEqual(4, count($blocks));
        foreach ($blocks as $i => [$marker, $code]) {
            $this->assertContains($marker, ['post', 'lint'], "block $i has no test marker");
            $file = tempnam(sys_get_temp_dir(), 'doc') . '.php';
            file_put_contents($file, $code);
            exec(escapeshellarg(PHP_BINARY) . ' -l ' . escapeshellarg($file) . ' 2>&1', $out, $rc);
            unlink($file);
            $this->assertSame(0, $rc, "block $i: " . implode("\n", $out));
        }
    }

    public function testTheQuickStartAnswersARealNotification(): void
    {
        $c = Support::conformance();
        if (!is_file("$c/manifest.json")) {
            $this->markTestSkipped("SKIPPED: $c not found; real Apple data NOT checked");
        }
        $f = null;
        foreach (Support::json("$c/manifest.json")['files'] as $x) {
            if (($x['kind'] ?? '') === 'notification' && !empty($x['signedDate']) && ($x['environment'] ?? '') === 'Sandbox') {
                $f ??= $x;
            }
        }
        $this->assertNotNull($f);
        $posts = array_values(array_filter(self::blocks(), static fn ($b) => $b[0] === 'post'));
        $this->assertCount(1, $posts);
        $dir = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/docs-' . bin2hex(random_bytes(4));
        mkdir("$dir/vendor", 0777, true);
        file_put_contents("$dir/vendor/autoload.php", '<?php require ' . var_export(dirname(__DIR__) . '/vendor/autoload.php', true) . ';');
        file_put_contents("$dir/index.php", $posts[0][1]);
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr(strrchr((string) stream_socket_get_name($s, false), ':'), 1);
        fclose($s);
        $server = proc_open([PHP_BINARY, '-d', 'ffi.enable=1', '-S', "127.0.0.1:$port", "$dir/index.php"],
            [0 => ['pipe', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', "$dir/server.log", 'w']], $pipes);
        try {
            for ($i = 0; $i < 100 && !@fsockopen('127.0.0.1', $port); $i++) {
                usleep(100_000); // the built-in server starting
            }
            $jws = trim((string) file_get_contents("$c/{$f['path']}"));
            $post = static function (string $body) use ($port): int {
                $ctx = stream_context_create(['http' => ['method' => 'POST', 'content' => $body, 'ignore_errors' => true, 'timeout' => 30]]);
                @file_get_contents("http://127.0.0.1:$port/", false, $ctx);
                preg_match('#^HTTP/\S+ (\d+)#', $http_response_header[0] ?? '', $m);
                return (int) ($m[1] ?? 0);
            };
            // Genuine, but another app's: 422, and the log says why.
            $this->assertSame(422, $post(json_encode(['signedPayload' => $jws])));
            // Forged (one byte of the signature changed): 403.
            $forged = substr($jws, 0, -4) . (substr($jws, -4, 1) === 'A' ? 'B' : 'A') . substr($jws, -3);
            $this->assertSame(403, $post(json_encode(['signedPayload' => $forged])));
            usleep(200_000);
            $log = (string) file_get_contents("$dir/server.log");
            $this->assertStringContainsString('Verification failed with status INVALID_APP_IDENTIFIER (WRONG_BUNDLE)', $log);
        } finally {
            proc_terminate($server);
            proc_close($server);
            exec('rm -rf ' . escapeshellarg($dir));
        }
    }
}
