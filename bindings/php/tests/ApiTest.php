<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\Api\APIError;
use AppStoreServer\Api\APIException;
use AppStoreServer\Api\AppStoreServerAPIClient;
use AppStoreServer\AppStoreStatus;
use AppStoreServer\FailureReason;
use AppStoreServer\Http\CurlTransport;
use AppStoreServer\Http\HttpTransport;
use AppStoreServer\Http\StreamTransport;
use AppStoreServer\Http\TransportException;
use AppStoreServer\Http\TransportFailure;
use AppStoreServer\Model\Environment;
use AppStoreServer\SigningException;
use PHPUnit\Framework\TestCase;

/**
 * The API client against the mock App Store server (Tests/support/mock_app_store.py, which checks every request:
 * the bearer token with the public key, the method, path, query and body): every endpoint of api_cases.json through
 * its generated PHP method, over curl and over PHP streams; Apple's errors, Retry-After, retries, pages.
 */
final class ApiTest extends TestCase
{
    private static ?Served $mock = null;

    public static function setUpBeforeClass(): void
    {
        $k = Support::keys();
        self::$mock = new Served('mock_app_store.py', '--cases', Support::repo() . '/Tests/support/api_cases.json',
            '--public-key', "$k/p256_public.pem", '--key-id', Support::KEY_ID, '--issuer-id', Support::ISSUER,
            '--bundle-id', Support::BUNDLE);
    }

    public static function tearDownAfterClass(): void
    {
        self::$mock?->stop();
        self::$mock = null;
    }

    private static function client(?HttpTransport $transport = null, mixed ...$kw): AppStoreServerAPIClient
    {
        return new AppStoreServerAPIClient((string) file_get_contents(Support::keys() . '/p256.p8'), Support::KEY_ID,
            Support::ISSUER, Support::BUNDLE, Environment::SANDBOX, $transport, ...($kw + ['baseUrl' => self::$mock->url()]));
    }

    public static function cases(): iterable
    {
        foreach (Support::json(Support::repo() . '/Tests/support/api_cases.json')['cases'] as $c) {
            yield "curl {$c['endpoint']}" => [$c, 'curl'];
            yield "streams {$c['endpoint']}" => [$c, 'streams'];
        }
    }

    public function testEveryEndpointIsAMethod(): void
    {
        $names = array_unique(array_column(Support::json(Support::repo() . '/Tests/support/api_cases.json')['cases'], 'endpoint'));
        sort($names);
        $spec = array_keys(ApiCall::endpoints());
        sort($spec);
        $this->assertSame($spec, $names, 'api_cases.json and spec/endpoints.json disagree');
        foreach ($spec as $name) {
            $this->assertTrue(method_exists(AppStoreServerAPIClient::class, $name), $name);
        }
    }

    /** @dataProvider cases */
    public function testEndpoint(array $case, string $transport): void
    {
        $c = self::client($transport === 'curl' ? new CurlTransport() : new StreamTransport());
        $pages = $case['pages'] ?? [$case['response']];
        if (!empty($case['pages'])) {
            [$method, $args] = ApiCall::of($case['endpoint'], $case['params'], true);
            $got = [];
            foreach ($c->$method(...$args) as $page) {
                $got[] = json_decode(json_encode($page), true);
            }
            $this->assertEquals($pages, $got);
        }
        [$method, $args] = ApiCall::of($case['endpoint'], $case['params']);
        $answer = $c->$method(...$args);
        if ($case['response'] === null && empty($case['pages'])) {
            $this->assertNull($answer);
        } else {
            $this->assertEquals($pages[0], json_decode(json_encode($answer), true));
        }
        $this->assertSame(Environment::SANDBOX, $c->lastEnvironment());
    }

    public function testAppleErrorPayload(): void
    {
        try {
            self::client()->getTransactionInfo('error-404-4040010');
            $this->fail('no exception');
        } catch (APIException $e) {
            $this->assertSame(404, $e->httpStatusCode);
            $this->assertSame(APIError::TRANSACTION_ID_NOT_FOUND, $e->apiError);
            $this->assertSame(4040010, $e->rawApiError);
            $this->assertSame(AppStoreStatus::API_ERROR, $e->appstoreStatus);
            $this->assertSame(FailureReason::API_ERROR, $e->reason);
        }
    }

    public function testRateLimitedWithRetryAfter(): void
    {
        $before = (int) (microtime(true) * 1000);
        try {
            self::client()->getTransactionInfo('ratelimit');
            $this->fail('no exception');
        } catch (APIException $e) {
            $this->assertSame(429, $e->httpStatusCode);
            $this->assertSame(FailureReason::RATE_LIMITED, $e->reason);
            // Retry-After: 7 (delta-seconds) from the answer: 7 s after the request, give or take the exchange.
            $this->assertGreaterThanOrEqual($before + 7000, $e->retryAfter);
            $this->assertLessThan($before + 7000 + 60000, $e->retryAfter);
        }
    }

    public function testRetriesThenSucceeds(): void
    {
        $tag = bin2hex(random_bytes(4));
        $r = self::client(null, maxRetries: 3, initialBackoffMs: 1, maxBackoffMs: 10)->getTransactionInfo("flaky5000001-2-$tag");
        $this->assertSame('attempt-3', $r->signedTransactionInfo);
    }

    public function testUndecodableAnswer(): void
    {
        try {
            self::client()->getTransactionInfo('badtype');
            $this->fail('no exception');
        } catch (APIException $e) {
            $this->assertSame(AppStoreStatus::INVALID_RESPONSE, $e->appstoreStatus);
        }
    }

    public function testTransportFailureIsTheCause(): void
    {
        $failing = new class () implements HttpTransport {
            public function send(string $method, string $url, array $headers, string $body, int $timeoutMs, int $bodyLimit): \AppStoreServer\Http\HttpResponse
            {
                throw new TransportException(TransportFailure::UNREACHABLE, 'no route');
            }
        };
        try {
            self::client($failing)->getTransactionInfo('1');
            $this->fail('no exception');
        } catch (APIException $e) {
            $this->assertSame(AppStoreStatus::TRANSPORT_ERROR, $e->appstoreStatus);
            $this->assertSame(FailureReason::TRANSPORT_UNREACHABLE, $e->reason);
            $this->assertInstanceOf(TransportException::class, $e->getPrevious());
        }
    }

    public function testBadArgumentsAreExceptions(): void
    {
        $c = self::client();
        $this->expectException(\InvalidArgumentException::class);
        $c->getTransactionInfo("a\0b");
    }

    public function testUnusableKeyIsASigningException(): void
    {
        try {
            new AppStoreServerAPIClient('not a key', Support::KEY_ID, Support::ISSUER, Support::BUNDLE, Environment::SANDBOX);
            $this->fail('no exception');
        } catch (SigningException $e) {
            $this->assertSame(FailureReason::KEY_NOT_PEM, $e->reason);
        }
    }

    public function testWrongArgumentTypeIsATypeError(): void
    {
        $this->expectException(\TypeError::class);
        $c = self::client();
        $c->getTransactionInfo(...[12345]);
    }

    public function testBearerTokensFromAnExternalKey(): void
    {
        $p8 = openssl_pkey_get_private((string) file_get_contents(Support::keys() . '/p256.p8'));
        $calls = 0;
        $ext = new \AppStoreServer\ExternalKey(static function (string $message, string $digest) use ($p8, &$calls): string {
            $calls++;
            openssl_sign($message, $der, $p8, OPENSSL_ALGO_SHA256);
            return $der;
        }, (string) file_get_contents(Support::keys() . '/p256_public.pem'));
        $c = new AppStoreServerAPIClient($ext, Support::KEY_ID, Support::ISSUER, Support::BUNDLE, Environment::SANDBOX,
            baseUrl: self::$mock->url());
        // The mock verifies the bearer token with the public key (joserfc), never with this library.
        $this->assertSame('signed-transaction-info', $c->getTransactionInfo('2000000000000001')->signedTransactionInfo);
        $this->assertSame(1, $calls);
    }

    /**
     * The client's timeout is a deadline for the whole call: the signer is told the time left, and PHP (which cannot
     * abandon a running signer) discards a signature that comes after the deadline: APIException TRANSPORT_ERROR /
     * DEADLINE_EXCEEDED, nothing sent. Deterministic: the signer sleeps 700 ms of the call's 500 (a sleep never ends
     * early).
     */
    public function testAnExternalKeyPastTheDeadlineIsDiscarded(): void
    {
        $p8 = openssl_pkey_get_private((string) file_get_contents(Support::keys() . '/p256.p8'));
        $told = [];
        $ext = new \AppStoreServer\ExternalKey(static function (string $message, string $digest, int $timeoutMs) use ($p8, &$told): string {
            $told[] = $timeoutMs;
            usleep(700_000);
            openssl_sign($message, $der, $p8, OPENSSL_ALGO_SHA256);
            return $der;
        }, (string) file_get_contents(Support::keys() . '/p256_public.pem'));
        // Nothing listens on port 9: a request sent would fail as TRANSPORT_UNREACHABLE, not DEADLINE_EXCEEDED.
        $c = new AppStoreServerAPIClient($ext, Support::KEY_ID, Support::ISSUER, Support::BUNDLE, Environment::SANDBOX,
            baseUrl: 'http://127.0.0.1:9', timeoutMs: 500);
        try {
            $c->getTransactionInfo('1');
            $this->fail('the call succeeded past its deadline');
        } catch (APIException $e) {
            $this->assertSame([AppStoreStatus::TRANSPORT_ERROR, FailureReason::DEADLINE_EXCEEDED], [$e->appstoreStatus, $e->reason], $e->getMessage());
            $this->assertStringContainsString('its signature is discarded', $e->getMessage());
        }
        // Told the call's time left (less than the key's own 10 s), minus what the first step took.
        $this->assertCount(1, $told);
        $this->assertTrue($told[0] > 0 && $told[0] <= 500, "told {$told[0]} ms");
    }
}
