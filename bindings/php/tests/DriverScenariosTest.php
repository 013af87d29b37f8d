<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\Api\APIException;
use AppStoreServer\Api\AppStoreServerAPIClient;
use AppStoreServer\Http\HttpResponse;
use AppStoreServer\Http\TransportException;
use AppStoreServer\Http\TransportFailure;
use AppStoreServer\Model\Environment;
use PHPUnit\Framework\Assert as A;
use PHPUnit\Framework\TestCase;

/**
 * The call driver's shared scenarios (Tests/driver/scenarios.json, read its "doc") through the PHP client's own loop:
 * each SEND reaches executeRequest (checked against the scenario's method and full URL), each WAIT reaches sleepMs,
 * the clock is nowMs serving each step's `now`, and the call ends with the scenario's answer or its error. The
 * driverOnly scenarios misuse the driver, which a client loop never does (the C and Swift runners run them).
 */
final class DriverScenariosTest extends TestCase
{
    public static function scenarios(): iterable
    {
        foreach (Support::json(Support::repo() . '/Tests/driver/scenarios.json')['scenarios'] as $s) {
            if (empty($s['driverOnly'])) {
                yield $s['name'] => [$s];
            }
        }
    }

    public function testEveryScenarioIsRun(): void
    {
        $all = Support::json(Support::repo() . '/Tests/driver/scenarios.json')['scenarios'];
        $this->assertGreaterThanOrEqual(21, count($all));
        $this->assertSame(['misuse: next before the outcome, and after the end'],
            array_values(array_map(static fn ($s) => $s['name'], array_filter($all, static fn ($s) => !empty($s['driverOnly'])))));
    }

    /** @dataProvider scenarios */
    public function testScenario(array $s): void
    {
        $script = new Script($s);
        $opts = $s['client'];
        $kw = [];
        if (isset($opts['timeoutMs'])) {
            $kw['timeoutMs'] = $opts['timeoutMs'];
        }
        if (isset($opts['maxRetries'])) {
            $kw += ['maxRetries' => $opts['maxRetries'], 'initialBackoffMs' => $opts['initialBackoffMs'], 'maxBackoffMs' => $opts['maxBackoffMs']];
        }
        if (!empty($opts['sandboxFallback'])) {
            $kw['sandboxFallback'] = true;
        }
        if (isset($opts['rateLimit'])) {
            $kw += ['rateLimitMaxWaitMs' => $opts['rateLimit']['maxWaitMs'], 'rateLimitSharePercent' => $opts['rateLimit']['sharePercent']];
        }
        $client = new class ((string) file_get_contents(Support::keys() . '/p256.p8'), Support::KEY_ID, Support::ISSUER,
            Support::BUNDLE, constant(Environment::class . '::' . $opts['environment']), ...$kw) extends AppStoreServerAPIClient {
            public Script $script;

            protected function nowMs(): int
            {
                return $this->script->nowMs();
            }

            protected function sleepMs(int $ms): void
            {
                $this->script->sleep($ms);
            }

            protected function executeRequest(string $method, string $url, array $headers, string $body, int $timeoutMs): HttpResponse
            {
                return $this->script->execute($method, $url, $headers, $body, $timeoutMs);
            }
        };
        $client->script = $script;
        [$method, $args] = ApiCall::of($s['endpoint'], $s['params'], !empty($s['pages']));
        try {
            if (!empty($s['pages'])) {
                foreach ($client->$method(...$args) as $page) {
                    $script->done($page, $client->lastEnvironment());
                }
            } else {
                $script->done($client->$method(...$args), $client->lastEnvironment());
            }
            $script->stopped();
        } catch (APIException $e) {
            $script->error($e);
        }
        $script->finished();
    }
}

/** One scenario's steps, served in order to the client loop's hooks. */
final class Script
{
    private int $i = 0;
    private ?array $answered = null;
    private ?TransportException $raised = null;
    private array $steps;
    private string $name;
    private mixed $body;

    public function __construct(array $s)
    {
        $this->steps = $s['steps'];
        $this->name = $s['name'];
        $this->body = $s['params']['body'] ?? null;
    }

    private function wentOn(): void
    {
        if ($this->answered !== null) {
            A::assertTrue($this->answered['hasNextPage'], "{$this->name}: the loop went on after the last page");
            $this->answered = null;
        }
    }

    private function take(string $kind): array
    {
        $this->wentOn();
        A::assertLessThan(count($this->steps), $this->i, "{$this->name}: the loop went on after the last step ($kind)");
        $step = $this->steps[$this->i];
        A::assertArrayHasKey($kind, $step, "{$this->name}: step {$this->i} is " . implode(',', array_keys($step)) . ", the loop did $kind");
        $this->i++;
        return $step;
    }

    public function nowMs(): int
    {
        $this->wentOn();
        A::assertLessThan(count($this->steps), $this->i, "{$this->name}: the loop asked the clock after the last step");
        $step = $this->steps[$this->i];
        A::assertArrayHasKey('now', $step, "{$this->name}: step {$this->i} gives no time, the loop asked for it");
        if (isset($step['receive'])) {
            $this->i++;
        }
        return $step['now'];
    }

    public function sleep(int $ms): void
    {
        A::assertSame($this->take('wait')['wait'], $ms, "{$this->name}: slept $ms ms");
    }

    public function execute(string $method, string $url, array $headers, string $body, int $timeoutMs): HttpResponse
    {
        $want = $this->take('send')['send'];
        A::assertSame([$want['method'], $want['url']], [$method, $url], "{$this->name}: step " . ($this->i - 1));
        if (isset($want['timeoutMs'])) { // the time left before the call's deadline
            A::assertSame($want['timeoutMs'], $timeoutMs, "{$this->name}: the request's timeout");
        }
        $auth = null;
        foreach ($headers as [$n, $v]) {
            if (strcasecmp($n, 'Authorization') === 0) {
                $auth = $v;
            }
        }
        A::assertStringStartsWith('Bearer ', (string) $auth);
        A::assertEquals($this->body, $body === '' ? null : json_decode($body, true), $this->name);
        A::assertLessThan(count($this->steps), $this->i, "{$this->name}: no outcome scripted for the send");
        $step = $this->steps[$this->i];
        if (isset($step['fail'])) {
            $this->i++;
            $this->raised = new TransportException(constant(TransportFailure::class . '::' . $step['fail']['result']), $step['fail']['message']);
            throw $this->raised;
        }
        A::assertArrayHasKey('receive', $step, "{$this->name}: step {$this->i} after a send");
        $r = $step['receive'];
        $content = array_key_exists('bodyText', $r) ? $r['bodyText'] : json_encode($r['body'], JSON_UNESCAPED_SLASHES);
        $hs = [];
        foreach ($r['headers'] ?? [] as $n => $v) {
            $hs[] = [$n, $v];
        }
        return new HttpResponse($r['status'], $hs, $content);
    }

    public function done(mixed $page, ?Environment $environment): void
    {
        $want = $this->take('done')['done'];
        A::assertEquals($want['json'], $page === null ? null : json_decode(json_encode($page), true), $this->name);
        A::assertSame(constant(Environment::class . '::' . $want['environment']), $environment, "{$this->name}: answered by");
        $this->answered = $want;
    }

    public function stopped(): void
    {
        A::assertTrue($this->answered !== null && !$this->answered['hasNextPage'], "{$this->name}: stopped early");
        $this->answered = null;
    }

    public function error(APIException $e): void
    {
        $want = $this->take('error')['error'];
        if ($this->raised !== null) {
            A::assertSame($this->raised, $e->getPrevious(), "{$this->name}: the transport's exception is the cause");
        }
        $got = ['status' => $e->appstoreStatus->name, 'reason' => strtolower($e->reason->name), 'httpStatus' => $e->httpStatusCode,
            'apiErrorCode' => $e->rawApiError, 'retryAfterMs' => $e->retryAfter];
        $listed = array_intersect_key($got, $want);
        A::assertSame(array_intersect_key($want, $listed), $listed, "{$this->name}: {$e->getMessage()}");
        foreach ($want['messageContains'] ?? [] as $t) {
            A::assertStringContainsString($t, $e->detail, $this->name);
        }
        foreach ($want['messageLacks'] ?? [] as $t) {
            A::assertStringNotContainsString($t, $e->detail, $this->name);
        }
    }

    public function finished(): void
    {
        A::assertSame(count($this->steps), $this->i, "{$this->name}: ended at step {$this->i}");
    }
}
