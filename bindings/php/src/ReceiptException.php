<?php

declare(strict_types=1);

namespace AppStoreServer;

/** A receipt that is not one of the expected kind, or (verification) not genuine. */
class ReceiptException extends AppStoreServerException
{
}
