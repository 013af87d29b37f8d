<?php

declare(strict_types=1);

namespace AppStoreServer;

/**
 * Signed data that did not verify. getMessage() is "Verification failed with status <STATUS> (<REASON>): <detail>".
 *
 *   ->status          Apple's vocabulary (VerificationStatus::INVALID_APP_IDENTIFIER, ...)
 *   ->appstoreStatus  the library's precise status (AppStoreStatus)
 *   ->reason          why (FailureReason::WRONG_BUNDLE, ...)
 *   ->detail          what failed, in words
 */
class VerificationException extends AppStoreServerException
{
    public readonly VerificationStatus $status;

    public function __construct(int $status, int $reason, string $detail, ?\Throwable $previous = null)
    {
        $this->status = VerificationStatus::fromStatus($status);
        $r = FailureReason::tryFrom($reason);
        $text = 'Verification failed with status ' . $this->status->name . ' (' . ($r ? $r->name : "reason $reason") . ')'
            . ($detail !== '' ? ": $detail" : '');
        parent::__construct($status, $reason, $detail, $text, $previous);
    }

    /** Whether verifying again later may succeed (online checks could not reach a responder). */
    public function isRetryable(): bool
    {
        return $this->appstoreStatus === AppStoreStatus::RETRYABLE_VERIFICATION_FAILURE;
    }
}
