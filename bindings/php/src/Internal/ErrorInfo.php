<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

/**
 * What an appstore_error said, copied out before it was freed.
 *
 * @internal
 */
final class ErrorInfo
{
    /** @var list<array{0: string, 1: string}> */
    public array $headers = [];

    public function __construct(
        public readonly int $status,
        public readonly int $reason,
        public readonly string $message,
        public readonly int $httpStatus = 0,
        public readonly int $apiErrorCode = 0,
        public readonly string $apiErrorMessage = '',
        public readonly int $retryAfter = -1,
        public readonly int $retryAtMs = -1,
    ) {
    }
}
