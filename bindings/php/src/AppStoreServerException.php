<?php

declare(strict_types=1);

namespace AppStoreServer;

use AppStoreServer\Internal\ErrorInfo;

/**
 * A failure the library reports: its status, its reason, and what failed in words ($detail). The subclasses say
 * which part failed (VerificationException, Api\APIException, ReceiptException, SigningException,
 * LedgerException, ConfigurationException).
 */
class AppStoreServerException extends \RuntimeException
{
    /** The library's status (an unknown code stays an int). */
    public readonly AppStoreStatus|int $appstoreStatus;
    /** Why, finer than the status (an unknown code stays an int). */
    public readonly FailureReason|int $reason;
    /** What failed, in the library's words (getMessage() adds the status and reason in front). */
    public readonly string $detail;

    public function __construct(int $status, int $reason, string $detail, ?string $message = null, ?\Throwable $previous = null)
    {
        $this->appstoreStatus = AppStoreStatus::tryFrom($status) ?? $status;
        $this->reason = FailureReason::tryFrom($reason) ?? $reason;
        $this->detail = $detail;
        parent::__construct($message ?? self::describe($this->appstoreStatus, $this->reason, $detail), $status, $previous);
    }

    /** @internal */
    public static function fromInfo(ErrorInfo $info): static
    {
        return new static($info->status, $info->reason, $info->message);
    }

    protected static function describe(AppStoreStatus|int $status, FailureReason|int $reason, string $detail): string
    {
        $s = $status instanceof AppStoreStatus ? $status->name : "status $status";
        $r = $reason instanceof FailureReason ? $reason->name : "reason $reason";
        return "$s ($r)" . ($detail !== '' ? ": $detail" : '');
    }
}
