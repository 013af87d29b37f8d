<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/** An HTTP exchange that got no answer; a transport throws it, the client reports it to the core as $failure. */
class TransportException extends \RuntimeException
{
    public function __construct(public readonly TransportFailure $failure, string $message, ?\Throwable $previous = null)
    {
        parent::__construct($message, 0, $previous);
    }
}
