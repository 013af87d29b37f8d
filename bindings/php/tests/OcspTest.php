<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\FailureReason;
use AppStoreServer\Http\HttpTransport;
use AppStoreServer\Http\StreamTransport;
use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;
use AppStoreServer\VerificationStatus;
use PHPUnit\Framework\TestCase;

/**
 * Online (OCSP) checks through the PHP transports (curl by default, PHP streams) behind the library's transport
 * callback, against the real `openssl ocsp` responders of Tests/support/ocsp_harness.py: every case's status, reason
 * and message, the requests the responders received, the offline outcome, the cache.
 */
final class OcspTest extends TestCase
{
    private static ?Served $harness = null;
    private static ?array $setup = null;

    public static function setUpBeforeClass(): void
    {
        if (!is_executable('/usr/bin/openssl') && !shell_exec('command -v openssl')) {
            return;
        }
        if (!shell_exec('command -v faketime')) {
            return;
        }
        $out = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/ocsp-' . bin2hex(random_bytes(4));
        mkdir($out);
        self::$harness = new Served('ocsp_harness.py', 'serve', $out, '--lifetime', '600');
        self::$setup = Support::json(self::$harness->words[0]);
    }

    public static function tearDownAfterClass(): void
    {
        self::$harness?->stop();
        self::$harness = null;
    }

    protected function setUp(): void
    {
        if (self::$setup === null) {
            $this->markTestSkipped('SKIPPED: the openssl and faketime commands run the OCSP responders');
        }
    }

    private static function counts(): array
    {
        return json_decode((string) file_get_contents(self::$setup['controlUrl']), true);
    }

    private static function verifier(bool $online = true, ?HttpTransport $transport = null, mixed ...$kw): SignedDataVerifier
    {
        return new SignedDataVerifier([(string) file_get_contents(self::$setup['root'])], $online, Environment::SANDBOX,
            self::$setup['bundleId'], ...($kw + ['transport' => $transport]));
    }

    private static function jws(string $name, int $i = 0): string
    {
        return trim((string) file_get_contents(self::$setup['cases'][$name]['jws'][$i]));
    }

    private static function outcome(SignedDataVerifier $v, string $jws): array
    {
        try {
            $v->verifyAndDecodeTransaction($jws);
            return ['status' => 'OK'];
        } catch (VerificationException $e) {
            return ['status' => $e->appstoreStatus->name, 'reason' => strtolower($e->reason->name), 'message' => $e->detail, 'apple' => $e->status];
        }
    }

    public function testEveryCase(): void
    {
        $problems = [];
        foreach (self::$setup['cases'] as $name => $case) {
            $expect = $case['expect'];
            $slow = $name === 'responder_slow';
            $v = self::verifier(true, null, onlineTimeoutMs: $slow ? 2500 : 10000);
            $before = self::counts();
            $got = self::outcome($v, self::jws($name));
            $received = self::counts()['total'] - $before['total'];
            $want = ['status' => $expect['status']] + (isset($expect['reason']) ? ['reason' => $expect['reason']] : []);
            if (array_intersect_key($got, $want) != $want) {
                $problems[] = "$name: expected " . json_encode($want) . ', got ' . json_encode($got);
                continue;
            }
            foreach ($expect['messageContains'] ?? [] as $piece) {
                if (!str_contains($got['message'] ?? '', $piece)) {
                    $problems[] = "$name: message lacks $piece";
                }
            }
            if ($received !== $expect['responderRequests']) {
                $problems[] = "$name: the responders received $received requests, expected {$expect['responderRequests']}";
            }
            if ($got['status'] === 'RETRYABLE_VERIFICATION_FAILURE' && $got['apple'] !== VerificationStatus::RETRYABLE_VERIFICATION_FAILURE) {
                $problems[] = "$name: Apple's status";
            }
            $off = self::outcome(self::verifier(false), self::jws($name));
            if (array_intersect_key($off, $expect['offline']) != $expect['offline']) {
                $problems[] = "$name offline: expected " . json_encode($expect['offline']) . ', got ' . json_encode($off);
            }
        }
        $this->assertSame([], $problems);
    }

    public function testStreamsTransportAndTheCache(): void
    {
        $v = self::verifier(true, new StreamTransport());
        $before = self::counts();
        $n = count(self::$setup['cases']['good']['jws']);
        for ($i = 0; $i < $n; $i++) {
            $this->assertSame(self::$setup['bundleId'], $v->verifyAndDecodeTransaction(self::jws('good', $i))->bundleId);
        }
        $this->assertSame(2, self::counts()['total'] - $before['total'], 'the chain\'s two certificates checked once, then cached');
        $this->assertSame(['hits' => $n - 1, 'misses' => 1, 'entries' => 1], $v->cacheStats());
        $off = self::verifier(true, null, chainCacheSize: 0);
        $before = self::counts();
        $off->verifyAndDecodeTransaction(self::jws('good', 0));
        $off->verifyAndDecodeTransaction(self::jws('good', 1));
        $this->assertSame(4, self::counts()['total'] - $before['total']);
    }

    public function testRevokedIsVerificationFailure(): void
    {
        try {
            self::verifier()->verifyAndDecodeTransaction(self::jws('leaf_revoked'));
            $this->fail('accepted');
        } catch (VerificationException $e) {
            $this->assertSame(VerificationStatus::VERIFICATION_FAILURE, $e->status);
            $this->assertSame(FailureReason::REVOKED, $e->reason);
        }
    }

    public function testATransportThatThrowsIsRetryableNotACrash(): void
    {
        $t = new class () implements HttpTransport {
            public function send(string $method, string $url, array $headers, string $body, int $timeoutMs, int $bodyLimit): \AppStoreServer\Http\HttpResponse
            {
                throw new \LogicException('a bug in the transport');
            }
        };
        try {
            self::verifier(true, $t)->verifyAndDecodeTransaction(self::jws('good'));
            $this->fail('accepted');
        } catch (VerificationException $e) {
            $this->assertSame(VerificationStatus::RETRYABLE_VERIFICATION_FAILURE, $e->status, $e->getMessage());
            $this->assertTrue($e->isRetryable());
        }
    }
}
