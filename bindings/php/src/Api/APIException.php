<?php

declare(strict_types=1);

namespace AppStoreServer\Api;

use AppStoreServer\AppStoreServerException;
use AppStoreServer\Internal\ErrorInfo;

/**
 * An App Store Server API call that failed (Apple's APIException names): Apple's answer (HTTP status, error code,
 * message, Retry-After, headers), or no answer (a transport failure: ->getPrevious() is the transport's exception),
 * or the client's own rate limit (nothing was sent).
 */
class APIException extends AppStoreServerException
{
    /** The HTTP status of Apple's answer (0 when there was none). */
    public readonly int $httpStatusCode;
    /** Apple's errorCode as a known APIError (or AdvancedCommerceAPIError), else null. */
    public readonly APIError|AdvancedCommerceAPIError|null $apiError;
    /** Apple's errorCode as sent (null when there was none). */
    public readonly ?int $rawApiError;
    /** Apple's errorMessage (null when there was none). */
    public readonly ?string $errorMessage;
    /** Retry-After as a UNIX time in milliseconds (Apple's form; any form received is converted), or null. */
    public readonly ?int $retryAfter;
    /** @var list<array{0: string, 1: string}> the answer's headers, names as sent */
    public readonly array $headers;

    /** @internal */
    public static function fromInfo(ErrorInfo $info, ?\Throwable $previous = null): static
    {
        $e = new static($info->status, $info->reason, $info->message, null, $previous);
        $e->httpStatusCode = $info->httpStatus;
        $e->rawApiError = $info->apiErrorCode !== 0 ? $info->apiErrorCode : null;
        $e->apiError = $e->rawApiError === null ? null : (APIError::tryFrom($e->rawApiError) ?? AdvancedCommerceAPIError::tryFrom($e->rawApiError));
        $e->errorMessage = $info->apiErrorMessage !== '' ? $info->apiErrorMessage : null;
        $e->retryAfter = $info->retryAtMs >= 0 ? $info->retryAtMs : null;
        $e->headers = $info->headers;
        return $e;
    }

    /** The value of the answer's header $name (case-insensitive), or null. */
    public function header(string $name): ?string
    {
        foreach ($this->headers as [$n, $v]) {
            if (strcasecmp($n, $name) === 0) {
                return $v;
            }
        }
        return null;
    }
}
