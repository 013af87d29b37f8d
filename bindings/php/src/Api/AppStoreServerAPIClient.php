<?php

declare(strict_types=1);

namespace AppStoreServer\Api;

use AppStoreServer\ConfigurationException;
use AppStoreServer\Http\DefaultTransport;
use AppStoreServer\Http\HttpResponse;
use AppStoreServer\Http\HttpTransport;
use AppStoreServer\Http\TransportException;
use AppStoreServer\Internal\AbiConstants as K;
use AppStoreServer\Internal\Native;
use AppStoreServer\Internal\SigningKey;
use AppStoreServer\ExternalKey;
use AppStoreServer\Internal\NotCloneable;
use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\SigningException;
use FFI;
use FFI\CData;

/**
 * The App Store Server API (Apple's class and method names; every endpoint of spec/endpoints.json, generated into
 * EndpointMethods). The core's call driver (appstore_api_call_*) decides everything between the sends: a fresh
 * bearer token per attempt, retries and Retry-After, the Sandbox fallback, the rate limit, the pages. This class
 * only moves bytes (over $transport: curl, PHP streams, or a PSR-18 client through Http\Psr18Transport) and waits.
 */
class AppStoreServerAPIClient
{
    use EndpointMethods;
    use NotCloneable;

    private CData $client;
    private SigningKey $signingKey; // the key (and an external signer's callback), kept as long as the client
    private HttpTransport $transport;
    private ?Environment $lastEnvironment = null;

    /**
     * @param string|ExternalKey $signingKey the App Store Connect key (.p8 PEM text), or a key held in a KMS or an HSM
     * @param int $timeoutMs a deadline for the whole call (the external signer, rate-limit and retry waits, every
     *        exchange, each given the time left); a wait past it is not made: APIException TRANSPORT_ERROR /
     *        DEADLINE_EXCEEDED
     * @param int $maxRetries retries of HTTP 429 and Apple's retryable errors (0 = off), waiting
     *        $initialBackoffMs, doubling up to $maxBackoffMs, or until Retry-After
     * @param bool $sandboxFallback Production lookups that Production does not know are asked in Sandbox
     * @param ?int $rateLimitMaxWaitMs turn on the client-side rate limit (Apple's published limits), waiting at most
     *        this long for a slot; $rateLimitSharePercent: this process's share of the limit
     * @param ?string $baseUrl another server (tests); $sandboxBaseUrl: the fallback's
     * @throws SigningException a key that cannot be used
     * @throws ConfigurationException options that do not make a client (the Xcode environment, ...)
     */
    public function __construct(
        string|ExternalKey $signingKey,
        string $keyId,
        string $issuerId,
        string $bundleId,
        Environment $environment,
        ?HttpTransport $transport = null,
        int $timeoutMs = 30000,
        int $maxRetries = 0,
        int $initialBackoffMs = 1000,
        int $maxBackoffMs = 30000,
        bool $sandboxFallback = false,
        ?string $sandboxBaseUrl = null,
        ?int $rateLimitMaxWaitMs = null,
        int $rateLimitSharePercent = 100,
        ?string $baseUrl = null,
    ) {
        $f = Native::ffi();
        foreach (['keyId' => $keyId, 'issuerId' => $issuerId, 'bundleId' => $bundleId, 'baseUrl' => $baseUrl ?? '', 'sandboxBaseUrl' => $sandboxBaseUrl ?? ''] as $n => $v) {
            Native::cText($v, $n);
        }
        if ($timeoutMs < 1 || $timeoutMs > 0xFFFFFFFF || $maxRetries < 0 || $maxRetries > 100 || $initialBackoffMs < 0
            || $initialBackoffMs > 0xFFFFFFFF || $maxBackoffMs < 0 || $maxBackoffMs > 0xFFFFFFFF
            || ($rateLimitMaxWaitMs !== null && ($rateLimitMaxWaitMs < 0 || $rateLimitMaxWaitMs > 0xFFFFFFFF))
            || $rateLimitSharePercent < 1 || $rateLimitSharePercent > 100) {
            throw new \InvalidArgumentException('timeoutMs, maxRetries (0-100), backoffs, rateLimitMaxWaitMs or rateLimitSharePercent (1-100) out of range');
        }
        $this->own();
        $this->transport = $transport ?? DefaultTransport::create();
        $err = Native::errorSlot();
        $this->signingKey = new SigningKey($signingKey, $keyId, $issuerId, $bundleId);
        $key = $this->signingKey->handle;
        $opts = $f->new('appstore_api_client_options *');
        $st = $f->appstore_api_client_options_new(FFI::addr($opts), FFI::addr($err));
        if ($st !== 0) {
            throw ConfigurationException::fromInfo(Native::takeError($err, $st));
        }
        try {
            $check = static function (int $st, string $what) use ($err): void {
                if ($st !== 0) {
                    throw new \InvalidArgumentException("$what: " . Native::takeError($err, $st)->message);
                }
            };
            $check($f->appstore_api_client_options_set_timeout_ms($opts, $timeoutMs, FFI::addr($err)), 'timeoutMs');
            if ($maxRetries > 0) {
                $check($f->appstore_api_client_options_set_retry($opts, $maxRetries, $initialBackoffMs, $maxBackoffMs, FFI::addr($err)), 'retries');
            }
            if ($baseUrl !== null) {
                $check($f->appstore_api_client_options_set_base_url($opts, $baseUrl, FFI::addr($err)), 'baseUrl');
            }
            if ($sandboxFallback) {
                $check($f->appstore_api_client_options_set_sandbox_fallback($opts, 1, $sandboxBaseUrl, FFI::addr($err)), 'sandboxFallback');
            }
            if ($rateLimitMaxWaitMs !== null) {
                $check($f->appstore_api_client_options_set_rate_limit($opts, 1, $rateLimitMaxWaitMs, $rateLimitSharePercent, FFI::addr($err)), 'rateLimit');
            }
            $client = $f->new('appstore_api_client *');
            $st = $f->appstore_api_client_new($key, SignedDataVerifier::environmentCode($environment), $opts, FFI::addr($client), FFI::addr($err));
            if ($st !== 0) {
                throw ConfigurationException::fromInfo(Native::takeError($err, $st));
            }
            $this->client = $client;
        } finally {
            $f->appstore_api_client_options_free($opts);
        }
    }

    public function __destruct()
    {
        if (!$this->owns()) {
            return;
        }
        $f = Native::ffi();
        if (isset($this->client)) {
            $f->appstore_api_client_free($this->client);
        }
    }

    /** The environment that answered the last call (Sandbox when a Production lookup fell back). */
    public function lastEnvironment(): ?Environment
    {
        return $this->lastEnvironment;
    }

    // ---- the host's side of the loop: overridable (tests script them) ---------------------------------------------

    /** Milliseconds since 1970: the time the driver dates rate-limit slots and Retry-After with. */
    protected function nowMs(): int
    {
        return (int) floor(microtime(true) * 1000);
    }

    protected function sleepMs(int $ms): void
    {
        usleep($ms * 1000);
    }

    /**
     * One HTTP exchange (Apple's makeRequest hook): throw Http\TransportException when there is no answer.
     *
     * @param list<array{0: string, 1: string}> $headers
     */
    protected function executeRequest(string $method, string $url, array $headers, string $body, int $timeoutMs): HttpResponse
    {
        return $this->transport->send($method, $url, $headers, $body, $timeoutMs, K::APPSTORE_LIMIT_API_RESPONSE_BYTES);
    }

    // ---- the loop ----------------------------------------------------------------------------------------------

    /** @internal the endpoint methods' single call */
    protected function call(string $endpoint, array $params, ?string $cls): mixed
    {
        foreach ($this->drive($endpoint, $params, $cls, false) as $page) {
            return $page;
        }
        return null; // not reached: drive yields once or throws
    }

    /** @internal the iterate* methods */
    protected function pages(string $endpoint, array $params, ?string $cls): \Generator
    {
        yield from $this->drive($endpoint, $params, $cls, true);
    }

    private function drive(string $endpoint, array $params, ?string $cls, bool $allPages): \Generator
    {
        $f = Native::ffi();
        try {
            $json = json_encode((object) $params, JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR | JSON_PRESERVE_ZERO_FRACTION);
        } catch (\JsonException $e) {
            throw new \InvalidArgumentException("$endpoint: the parameters do not convert to JSON ({$e->getMessage()})", 0, $e);
        }
        $err = Native::errorSlot();
        $call = $f->new('appstore_api_call *');
        $st = $f->appstore_api_call_new($this->client, $endpoint, $json, FFI::addr($call), FFI::addr($err));
        if ($st !== 0) {
            $i = Native::takeError($err, $st);
            throw $st === K::APPSTORE_INVALID_ARGUMENT ? new \InvalidArgumentException($i->message) : APIException::fromInfo($i);
        }
        $raised = null;
        try {
            $action = $f->new('appstore_api_action');
            $wait = $f->new('int64_t');
            while (true) {
                $st = $f->appstore_api_call_next($call, $this->nowMs(), FFI::addr($action), FFI::addr($wait), FFI::addr($err));
                if ($st !== 0) {
                    throw APIException::fromInfo(Native::takeError($err, $st), $raised);
                }
                if ($action->cdata === K::APPSTORE_API_ACTION_SEND) {
                    $raised = $this->send($call);
                } elseif ($action->cdata === K::APPSTORE_API_ACTION_WAIT) {
                    $this->sleepMs((int) $wait->cdata);
                } else {
                    $out = $f->new('char *');
                    $env = $f->new('appstore_environment');
                    $st = $f->appstore_api_call_answer($call, FFI::addr($out), FFI::addr($env), null, FFI::addr($err));
                    if ($st !== 0) {
                        throw APIException::fromInfo(Native::takeError($err, $st));
                    }
                    $text = Native::takeString($out);
                    $this->lastEnvironment = $env->cdata === K::APPSTORE_ENVIRONMENT_SANDBOX ? Environment::SANDBOX
                        : ($env->cdata === K::APPSTORE_ENVIRONMENT_PRODUCTION ? Environment::PRODUCTION : Environment::LOCAL_TESTING);
                    $more = $allPages && $f->appstore_api_call_has_next_page($call) === 1;
                    yield $cls === null ? null : $cls::fromArray(json_decode($text, true, 512, JSON_THROW_ON_ERROR));
                    if (!$more) {
                        return;
                    }
                }
            }
        } finally {
            $f->appstore_api_call_free($call);
        }
    }

    /** Sends the request the driver built and reports the outcome; returns the transport's exception, if any. */
    private function send(CData $call): ?TransportException
    {
        $f = Native::ffi();
        $err = Native::errorSlot();
        $req = $f->new('appstore_api_request *');
        $st = $f->appstore_api_call_request($call, FFI::addr($req), FFI::addr($err));
        if ($st !== 0) {
            throw APIException::fromInfo(Native::takeError($err, $st));
        }
        try {
            $headers = [];
            for ($i = 0, $n = $f->appstore_api_request_header_count($req); $i < $n; $i++) {
                $headers[] = [$f->appstore_api_request_header_name($req, $i), $f->appstore_api_request_header_value($req, $i)];
            }
            $len = $f->new('size_t');
            $p = $f->appstore_api_request_body($req, FFI::addr($len));
            $body = $len->cdata > 0 ? FFI::string($p, $len->cdata) : '';
            $method = $f->appstore_api_request_method($req);
            $url = $f->appstore_api_request_url($req);
            $timeout = $f->appstore_api_request_timeout_ms($req);
        } finally {
            $f->appstore_api_request_free($req);
        }
        try {
            $r = $this->executeRequest($method, $url, $headers, $body, $timeout);
        } catch (TransportException $e) {
            $st = $f->appstore_api_call_receive_failure($call, $e->failure->value, Native::cleanText($e->getMessage()), FFI::addr($err));
            if ($st !== 0) {
                throw APIException::fromInfo(Native::takeError($err, $st), $e);
            }
            return $e;
        }
        $lines = '';
        foreach ($r->headers as [$n, $v]) {
            $lines .= "$n: $v\r\n";
        }
        $st = $f->appstore_api_call_receive($call, $r->status, $lines, strlen($lines), $r->body, strlen($r->body), $this->nowMs(), FFI::addr($err));
        if ($st !== 0) {
            throw APIException::fromInfo(Native::takeError($err, $st));
        }
        return null;
    }
}
