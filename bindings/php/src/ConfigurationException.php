<?php

declare(strict_types=1);

namespace AppStoreServer;

/** Options that do not make a usable verifier, client or ledger (no roots, online checks without a transport, ...). */
class ConfigurationException extends AppStoreServerException
{
}
