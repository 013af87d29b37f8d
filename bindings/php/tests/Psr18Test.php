<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\Api\APIException;
use AppStoreServer\Api\AppStoreServerAPIClient;
use AppStoreServer\AppStoreStatus;
use AppStoreServer\FailureReason;
use AppStoreServer\Http\CurlTransport;
use AppStoreServer\Http\Psr18Transport;
use AppStoreServer\Model\Environment;
use PHPUnit\Framework\TestCase;

/**
 * A PSR-18 client plugged in through Http\Psr18Transport, with no PSR package installed: the duck-typed client,
 * request and stream below (the methods PSR-7/17/18 define) carry real exchanges with the mock App Store server.
 */
final class Psr18Test extends TestCase
{
    public function testAPsr18ClientCarriesTheCalls(): void
    {
        $k = Support::keys();
        $mock = new Served('mock_app_store.py', '--cases', Support::repo() . '/Tests/support/api_cases.json',
            '--public-key', "$k/p256_public.pem", '--key-id', Support::KEY_ID, '--issuer-id', Support::ISSUER,
            '--bundle-id', Support::BUNDLE);
        $psr = new FakePsr18Client();
        $client = new AppStoreServerAPIClient((string) file_get_contents("$k/p256.p8"), Support::KEY_ID, Support::ISSUER,
            Support::BUNDLE, Environment::SANDBOX, new Psr18Transport($psr, new FakeFactory(), new FakeFactory()), baseUrl: $mock->url());
        $this->assertSame('signed-transaction-info', $client->getTransactionInfo('2000000000000001')->signedTransactionInfo);
        $pages = iterator_to_array($client->iterateRefundHistory('2000000000000001'), false);
        $this->assertGreaterThan(1, count($pages));
        $this->assertSame(1 + count($pages), $psr->sent);
        try {
            $client->getTransactionInfo('error-404-4040010');
            $this->fail('no exception');
        } catch (APIException $e) {
            $this->assertSame(404, $e->httpStatusCode);
        }
        $mock->stop();
        $psr->down = true;
        try {
            $client->getTransactionInfo('1');
            $this->fail('no exception');
        } catch (APIException $e) {
            $this->assertSame(AppStoreStatus::TRANSPORT_ERROR, $e->appstoreStatus);
            $this->assertSame(FailureReason::TRANSPORT_UNREACHABLE, $e->reason);
        }
    }

    public function testAnObjectWithoutThePsrMethodsIsRefused(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        new Psr18Transport(new \stdClass(), new FakeFactory(), new FakeFactory());
    }
}

interface NetworkExceptionInterface
{
}

final class FakeNetworkException extends \RuntimeException implements NetworkExceptionInterface
{
}

final class FakeStream
{
    private int $at = 0;

    public function __construct(private readonly string $data)
    {
    }

    public function eof(): bool
    {
        return $this->at >= strlen($this->data);
    }

    public function read(int $n): string
    {
        $s = substr($this->data, $this->at, $n);
        $this->at += strlen($s);
        return $s;
    }

    public function __toString(): string
    {
        return $this->data;
    }
}

final class FakeRequest
{
    public array $headers = [];
    public ?FakeStream $body = null;

    public function __construct(public readonly string $method, public readonly string $uri)
    {
    }

    public function withHeader(string $name, string $value): self
    {
        $c = clone $this;
        $c->headers[] = [$name, $value];
        return $c;
    }

    public function withBody(FakeStream $body): self
    {
        $c = clone $this;
        $c->body = $body;
        return $c;
    }
}

final class FakeResponse
{
    public function __construct(private readonly int $status, private readonly array $headers, private readonly FakeStream $body)
    {
    }

    public function getStatusCode(): int
    {
        return $this->status;
    }

    public function getHeaders(): array
    {
        return $this->headers;
    }

    public function getBody(): FakeStream
    {
        return $this->body;
    }
}

final class FakeFactory
{
    public function createRequest(string $method, string $uri): FakeRequest
    {
        return new FakeRequest($method, $uri);
    }

    public function createStream(string $content = ''): FakeStream
    {
        return new FakeStream($content);
    }
}

final class FakePsr18Client
{
    public int $sent = 0;
    public bool $down = false;

    public function sendRequest(FakeRequest $r): FakeResponse
    {
        if ($this->down) {
            throw new FakeNetworkException('connection refused');
        }
        $this->sent++;
        $got = (new CurlTransport())->send($r->method, $r->uri, $r->headers, $r->body === null ? '' : (string) $r->body, 10000, 1 << 24);
        $headers = [];
        foreach ($got->headers as [$n, $v]) {
            $headers[$n][] = $v;
        }
        return new FakeResponse($got->status, $headers, new FakeStream($got->body));
    }
}
