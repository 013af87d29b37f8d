<?php

declare(strict_types=1);

namespace AppStoreServer;

/** The ledger's database failed (STORAGE_ERROR): nothing was acknowledged, so the value may be given again later. */
class LedgerException extends AppStoreServerException
{
}
