<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The PHP examples (examples/php/*.php) run as a user runs them: as scripts, against the project's own PKI, the mock
 * App Store server (every signature checked by check_signatures.py), and PHP's built-in server for the receiver.
 */
final class ExamplesTest extends TestCase
{
    private static function examples(): string
    {
        return Support::repo() . '/examples/php';
    }

    /** @return array{0: int, 1: string, 2: string} exit status, stdout, stderr */
    private static function script(string $script, array $args, array $env = []): array
    {
        $p = proc_open(array_merge([PHP_BINARY, '-d', 'ffi.enable=1', self::examples() . "/$script"], $args),
            [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env + getenv());
        $out = (string) stream_get_contents($pipes[1]);
        $err = (string) stream_get_contents($pipes[2]);
        return [proc_close($p), $out, $err];
    }

    public function testVerifyNotification(): void
    {
        $pki = Support::testpki();
        [$rc, $out, $err] = self::script('verify-notification.php', ["$pki/jws/notif-valid-did-renew.jws", 'com.example.testpki', "--root=$pki/root.der"]);
        $this->assertSame(0, $rc, $err);
        $this->assertStringStartsWith('type: DID_RENEW', $out);
        $this->assertStringContainsString('transaction: ', $out);
        [$rc, , $err] = self::script('verify-notification.php', ["$pki/jws/notif-untrusted-forged-chain.jws", 'com.example.testpki', "--root=$pki/root.der"]);
        $this->assertSame(1, $rc);
        $this->assertStringContainsString('NOT VERIFIED', $err);
        $this->assertStringContainsString('UNTRUSTED_CHAIN', $err);
    }

    public function testVerifyNotificationWithTheBundledRootOnRealAppleData(): void
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
        [$rc, $out, $err] = self::script('verify-notification.php', ["$c/{$f['path']}", $f['bundleId']]);
        $this->assertSame(0, $rc, $err);
        $this->assertStringStartsWith('type: ', $out);
    }

    private static function mock(): Served
    {
        $k = Support::keys();
        return new Served('mock_app_store.py', '--cases', Support::repo() . '/Tests/support/api_cases.json',
            '--public-key', "$k/p256_public.pem", '--key-id', Support::KEY_ID, '--issuer-id', Support::ISSUER,
            '--bundle-id', Support::BUNDLE);
    }

    public function testRefundHistoryEveryPage(): void
    {
        $mock = self::mock();
        $env = ['APPSTORE_PRIVATE_KEY' => (string) file_get_contents(Support::keys() . '/p256.p8')];
        $ids = ['--key-id=' . Support::KEY_ID, '--issuer-id=' . Support::ISSUER, '--bundle-id=' . Support::BUNDLE, '--environment=Sandbox'];
        [$rc, $out, $err] = self::script('refund-history.php', array_merge($ids, ['--base-url=' . $mock->url(), '2000000000000001']), $env);
        $mock->stop();
        $this->assertSame(0, $rc, $err);
        $pages = null;
        foreach (Support::json(Support::repo() . '/Tests/support/api_cases.json')['cases'] as $c) {
            if ($c['endpoint'] === 'getRefundHistory') {
                $pages = $c['pages'];
            }
        }
        $want = '';
        foreach ($pages as $i => $p) {
            $want .= 'page ' . ($i + 1) . ': ' . count($p['signedTransactions']) . ' refunded transactions, more: ' . ($p['hasMore'] ? 'true' : 'false') . "\n";
        }
        $this->assertSame($want, $out);
        [$rc, , $err] = self::script('refund-history.php', array_merge($ids, ['--base-url=http://127.0.0.1:1', '2000000000000001']), $env);
        $this->assertSame(1, $rc);
        $this->assertStringContainsString('failed: TRANSPORT_ERROR', $err);
    }

    public function testOfferSignatureVerifiesIndependently(): void
    {
        $env = ['APPSTORE_PRIVATE_KEY' => (string) file_get_contents(Support::keys() . '/p256.p8')];
        [$rc, $out, $err] = self::script('offer-signature.php', ['--key-id=' . Support::KEY_ID, '--issuer-id=' . Support::ISSUER,
            '--bundle-id=' . Support::BUNDLE, 'com.example.monthly', 'WINBACK'], $env);
        $this->assertSame(0, $rc, $err);
        $file = tempnam(sys_get_temp_dir(), 'sig');
        file_put_contents($file, json_encode(['public_key' => Support::keys() . '/p256_public.pem', 'items' => [[
            'kind' => 'promo_v2', 'value' => trim($out), 'expect' => ['kid' => Support::KEY_ID, 'iss' => Support::ISSUER,
                'bid' => Support::BUNDLE, 'productId' => 'com.example.monthly', 'offerIdentifier' => 'WINBACK']]]]));
        exec('python3 ' . escapeshellarg(Support::repo() . '/Tests/support/check_signatures.py') . ' check ' . escapeshellarg($file) . ' 2>&1', $o, $rc);
        unlink($file);
        $this->assertSame(0, $rc, implode("\n", $o));
    }

    public function testNotificationReceiver(): void
    {
        $pki = Support::testpki();
        $db = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/receiver-' . bin2hex(random_bytes(4)) . '.db';
        $env = ['APPSTORE_BUNDLE_ID' => 'com.example.testpki', 'APPSTORE_LEDGER' => "sqlite:$db", 'APPSTORE_ROOT' => "$pki/root.der"] + getenv();
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr(strrchr((string) stream_socket_get_name($s, false), ':'), 1);
        fclose($s);
        $server = proc_open([PHP_BINARY, '-d', 'ffi.enable=1', '-S', "127.0.0.1:$port", self::examples() . '/notification-receiver.php'],
            [0 => ['pipe', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, $env);
        try {
            $post = static function (string $body) use ($port): array {
                $ctx = stream_context_create(['http' => ['method' => 'POST', 'content' => $body, 'ignore_errors' => true,
                    'header' => "Content-Type: application/json\r\n", 'timeout' => 30]]);
                $text = @file_get_contents("http://127.0.0.1:$port/notifications", false, $ctx);
                preg_match('#^HTTP/\S+ (\d+)#', $http_response_header[0] ?? '', $m);
                return [(int) ($m[1] ?? 0), json_decode((string) $text, true)];
            };
            for ($i = 0; $i < 100 && !@fsockopen('127.0.0.1', $port); $i++) {
                usleep(100_000); // the built-in server starting
            }
            $valid = json_encode(['signedPayload' => trim((string) file_get_contents("$pki/jws/notif-valid-did-renew.jws"))]);
            [$status, $body] = $post($valid);
            $this->assertSame(200, $status, json_encode($body));
            $this->assertTrue($body['stored']);
            [$status, $body] = $post($valid);
            $this->assertSame(200, $status);
            $this->assertFalse($body['stored'], 'a duplicate is acknowledged, not stored twice');
            [$status, $body] = $post(json_encode(['signedPayload' => trim((string) file_get_contents("$pki/jws/notif-untrusted-forged-chain.jws"))]));
            $this->assertSame([403, 'untrusted_chain'], [$status, $body['error']]);
            [$status, $body] = $post('{"nope": 1}');
            $this->assertSame([400, 'malformed_body'], [$status, $body['error']]);
            $text = file_get_contents("http://127.0.0.1:$port/customers/unknown-customer");
            $this->assertSame([], json_decode((string) $text, true)['entitlements']);
        } finally {
            proc_terminate($server);
            proc_close($server);
            @unlink($db);
        }
    }
}
