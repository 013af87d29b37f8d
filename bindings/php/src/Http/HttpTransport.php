<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/**
 * One HTTP exchange, as the library needs it: never follow redirects (a 3xx is an answer), enforce $timeoutMs for
 * the whole exchange, stop reading once the body passes $bodyLimit bytes (then fail with TransportFailure::FAILED).
 * Throws TransportException when no answer was obtained.
 */
interface HttpTransport
{
    /** @param list<array{0: string, 1: string}> $headers */
    public function send(string $method, string $url, array $headers, string $body, int $timeoutMs, int $bodyLimit): HttpResponse;
}
