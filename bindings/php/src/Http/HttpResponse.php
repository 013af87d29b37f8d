<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/** One HTTP answer: status, headers in the order received (names as sent), body. */
final class HttpResponse
{
    /** @param list<array{0: string, 1: string}> $headers */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly string $body,
    ) {
    }
}
