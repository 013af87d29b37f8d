<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\AppStoreStatus;
use AppStoreServer\FailureReason;
use AppStoreServer\Http\CurlTransport;
use AppStoreServer\Http\HttpTransport;
use AppStoreServer\Http\StreamTransport;
use AppStoreServer\Http\TransportException;
use AppStoreServer\Http\TransportFailure;
use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;
use PHPUnit\Framework\TestCase;

/**
 * Bad input is an exception with a reason, never a fatal error or a crash: hostile JWS, wrong argument types
 * (TypeError, PHP's norm under strict_types), bad values; and both transports against Tests/support/hostile_http.py
 * (no redirect followed, the body limit while reading, one deadline for the whole exchange).
 */
final class HardeningTest extends TestCase
{
    private static ?Served $hostile = null;

    public static function tearDownAfterClass(): void
    {
        self::$hostile?->stop();
        self::$hostile = null;
    }

    private static function url(string $behaviour): string
    {
        self::$hostile ??= new Served('hostile_http.py', '--lifetime', '600');
        return 'http://127.0.0.1:' . self::$hostile->ports[0] . "/$behaviour";
    }

    private static function verifier(mixed ...$kw): SignedDataVerifier
    {
        return new SignedDataVerifier([(string) file_get_contents(Support::testpki() . '/root.der')], false,
            Environment::SANDBOX, 'com.example.testpki', ...$kw);
    }

    public static function hostileJws(): iterable
    {
        yield 'empty' => ['', FailureReason::MALFORMED];
        yield 'one segment' => ['abc', FailureReason::MALFORMED];
        yield 'three empty segments' => ['..', FailureReason::MALFORMED];
        yield 'NUL bytes' => ["a\0b.c\0d.e\0f", FailureReason::MALFORMED];
        yield 'not UTF-8' => ["\xff\xfe.\xc3\x28.\x80", FailureReason::MALFORMED];
        yield 'header not JSON' => [rtrim(strtr(base64_encode('{{{'), '+/', '-_'), '=') . '.e30.AA', FailureReason::MALFORMED];
        yield 'deep JSON' => [rtrim(strtr(base64_encode(str_repeat('[', 5000)), '+/', '-_'), '=') . '.e30.AA', FailureReason::MALFORMED];
        yield 'over 1 MiB' => [str_repeat('a', 1048577), FailureReason::INPUT_TOO_LARGE];
    }

    /** @dataProvider hostileJws */
    public function testHostileJwsIsAVerificationException(string $jws, FailureReason $reason): void
    {
        $v = self::verifier();
        foreach (['verifyAndDecodeNotification', 'verifyAndDecodeTransaction', 'verifyAndDecodeRenewalInfo',
                     'verifyAndDecodeAppTransaction', 'verifyAndDecodeRealtimeRequest', 'verifyAndDecodeNotificationDeep'] as $m) {
            try {
                $v->$m($jws);
                $this->fail("$m accepted it");
            } catch (VerificationException $e) {
                $this->assertSame($reason, $e->reason, "$m: {$e->getMessage()}");
            }
        }
    }

    public function testWrongArgumentTypesAreTypeErrors(): void
    {
        $v = self::verifier();
        $calls = [
            static fn () => $v->verifyAndDecodeTransaction(...[null]),
            static fn () => $v->verifyAndDecodeTransaction(...[['a.b.c']]),
            static fn () => $v->verifyAndDecodeTransaction(...[12]),
            static fn () => new SignedDataVerifier([12], false, Environment::SANDBOX, 'x'),
            static fn () => new SignedDataVerifier(...['roots', false, Environment::SANDBOX, 'x']),
            static fn () => new SignedDataVerifier(...[[], false, 'Sandbox', 'x']),
        ];
        foreach ($calls as $i => $call) {
            try {
                $call();
                $this->fail("call $i accepted it");
            } catch (\TypeError) {
                $this->addToAssertionCount(1);
            }
        }
    }

    public function testBadValuesAreInvalidArgumentExceptions(): void
    {
        $root = (string) file_get_contents(Support::testpki() . '/root.der');
        $calls = [
            'a root that is no certificate' => static fn () => new SignedDataVerifier(['garbage'], false, Environment::SANDBOX, 'x'),
            'a NUL in the bundle id' => static fn () => new SignedDataVerifier([$root], false, Environment::SANDBOX, "a\0b"),
            'Production without app Apple ID' => static fn () => new SignedDataVerifier([$root], false, Environment::PRODUCTION, 'x'),
            'a negative cache size' => static fn () => new SignedDataVerifier([$root], false, Environment::SANDBOX, 'x', chainCacheSize: -1),
            'an unknown kind' => static fn () => self::verifier()->verifyAndDecodeJson('receipt', 'a.b.c'),
        ];
        foreach ($calls as $what => $call) {
            try {
                $call();
                $this->fail("$what: accepted");
            } catch (\InvalidArgumentException $e) {
                $this->assertNotSame('', $e->getMessage(), $what);
            }
        }
    }

    public function testASmallerJwsLimitIsRefusedBeforeReading(): void
    {
        $jws = trim((string) file_get_contents(Support::testpki() . '/jws/tx-valid.jws'));
        try {
            self::verifier(maxJwsBytes: 100)->verifyAndDecodeTransaction($jws);
            $this->fail('accepted');
        } catch (VerificationException $e) {
            $this->assertSame(FailureReason::INPUT_TOO_LARGE, $e->reason);
            $this->assertSame(AppStoreStatus::INVALID_JWT_FORMAT, $e->appstoreStatus);
        }
    }

    public static function transports(): iterable
    {
        yield 'curl' => [new CurlTransport()];
        yield 'streams' => [new StreamTransport()];
    }

    /** @dataProvider transports */
    public function testRedirectsAreAnswersNotFollowed(HttpTransport $t): void
    {
        foreach ([301, 302, 307, 308] as $code) {
            $r = $t->send('GET', self::url("redirect-$code") . '/inApps/v1/transactions/1', [['Authorization', 'Bearer x']], '', 10000, 1 << 20);
            $this->assertSame($code, $r->status);
        }
        $caught = json_decode($t->send('GET', self::url('caught'), [], '', 10000, 1 << 20)->body, true);
        $this->assertSame(0, $caught['count'], 'a redirect was followed');
    }

    /** @dataProvider transports */
    public function testTheBodyLimitStopsReading(HttpTransport $t): void
    {
        foreach (['huge-64', 'hugecl-64'] as $b) {
            try {
                $t->send('GET', self::url($b), [], '', 60000, 1 << 20);
                $this->fail("$b: read");
            } catch (TransportException $e) {
                $this->assertSame(TransportFailure::FAILED, $e->failure, $e->getMessage());
            }
        }
    }

    /** @dataProvider transports */
    public function testOneDeadlineForTheWholeExchange(HttpTransport $t): void
    {
        // A byte every 100 ms never trips a per-read timeout; the 700 ms deadline of the whole exchange must. The
        // bound checked (30 s) is the drip's own limit, far above the deadline, so load cannot make this flaky.
        $start = hrtime(true);
        try {
            $t->send('GET', self::url('drip-100'), [], '', 700, 1 << 20);
            $this->fail('no timeout');
        } catch (TransportException $e) {
            $this->assertSame(TransportFailure::TIMEOUT, $e->failure, $e->getMessage());
        }
        $this->assertLessThan(30e9, hrtime(true) - $start);
    }

    /** @dataProvider transports */
    public function testNoAnswerIsATransportFailure(HttpTransport $t): void
    {
        try {
            $t->send('GET', self::url('nostatus'), [], '', 10000, 1 << 20);
            $this->fail('an answer');
        } catch (TransportException $e) {
            $this->assertContains($e->failure, [TransportFailure::FAILED, TransportFailure::UNREACHABLE]);
        }
        try {
            $t->send('GET', 'http://127.0.0.1:1/', [], '', 10000, 1 << 20);
            $this->fail('an answer');
        } catch (TransportException $e) {
            $this->assertSame(TransportFailure::UNREACHABLE, $e->failure, $e->getMessage());
        }
    }

    /**
     * Every endpoint method with values of the right types but wrong content (invalid UTF-8, negative numbers, empty
     * models, unknown enum values): an InvalidArgumentException or an APIException (nothing reachable: the base URL
     * is a closed port), never another error.
     */
    public function testEveryEndpointRefusesBadValuesWithAnException(): void
    {
        $client = new \AppStoreServer\Api\AppStoreServerAPIClient((string) file_get_contents(Support::keys() . '/p256.p8'),
            Support::KEY_ID, Support::ISSUER, Support::BUNDLE, Environment::SANDBOX, baseUrl: 'http://127.0.0.1:1', timeoutMs: 2000);
        $rc = new \ReflectionClass($client);
        $methods = 0;
        foreach ($rc->getMethods(\ReflectionMethod::IS_PUBLIC) as $m) {
            if (!$m->getDeclaringClass()->isTrait() && $m->getFileName() !== (new \ReflectionClass(\AppStoreServer\Api\EndpointMethods::class))->getFileName()) {
                continue;
            }
            foreach (["\xff\xfe", '', "no-uuid"] as $text) {
                $args = [];
                foreach ($m->getParameters() as $p) {
                    $t = $p->getType();
                    $names = $t instanceof \ReflectionUnionType ? array_map(static fn ($x) => $x->getName(), $t->getTypes()) : [$t->getName()];
                    $cls = current(array_filter($names, static fn ($n) => str_starts_with($n, 'AppStoreServer\\')));
                    $args[] = match (true) {
                        $cls !== false && method_exists($cls, 'fromArray') => $cls::fromArray([]),
                        in_array('string', $names, true) => $text,
                        in_array('array', $names, true) => [$text],
                        in_array('int', $names, true) => -1,
                        in_array('bool', $names, true) => true,
                        default => null,
                    };
                }
                try {
                    $r = $m->invokeArgs($client, $args);
                    if ($r instanceof \Generator) {
                        iterator_to_array($r);
                    }
                    $this->fail("{$m->getName()}: accepted");
                } catch (\InvalidArgumentException | \AppStoreServer\Api\APIException $e) {
                    $this->assertNotSame('', $e->getMessage());
                }
            }
            $methods++;
        }
        $this->assertGreaterThanOrEqual(37, $methods);
    }

    /**
     * A clone would share the library handle and free it twice, an unserialized object would hold a forged one:
     * cloning and (un)serializing any handle-owning object throws, and the original still works once the refused
     * copies are gone (their destructors free nothing).
     */
    public function testHandleOwnersCannotBeClonedOrSerialized(): void
    {
        $v = self::verifier();
        $objects = [$v, \AppStoreServer\Ledger::open('sqlite::memory:', $v), new \AppStoreServer\ReceiptVerifier([(string) file_get_contents(Support::testpki() . '/root.der')]),
            new \AppStoreServer\Api\AppStoreServerAPIClient((string) file_get_contents(Support::keys() . '/p256.p8'), Support::KEY_ID,
                Support::ISSUER, Support::BUNDLE, Environment::SANDBOX)];
        foreach ($objects as $o) {
            try {
                $copy = clone $o;
                $this->fail(get_class($o) . ': cloned');
            } catch (\LogicException $e) {
                $this->assertStringContainsString('cannot be cloned', $e->getMessage());
            }
        }
        foreach ($objects as $o) {
            try {
                serialize($o);
                $this->fail(get_class($o) . ': serialized');
            } catch (\LogicException $e) {
                $this->assertStringContainsString('cannot be serialized', $e->getMessage());
            }
            $c = get_class($o);
            try {
                unserialize('O:' . strlen($c) . ':"' . $c . '":1:{s:6:"handle";i:5;}'); // a forged handle
                $this->fail("$c: unserialized");
            } catch (\LogicException $e) {
                $this->assertStringContainsString('cannot be unserialized', $e->getMessage());
            }
        }
        gc_collect_cycles();
        $jws = trim((string) file_get_contents(Support::testpki() . '/jws/tx-valid.jws'));
        $this->assertSame('2000000912345678', $v->verifyAndDecodeTransaction($jws)->transactionId);
        $this->assertSame(0, $objects[1]->summary()->events);
    }
}
