<?php

declare(strict_types=1);

namespace AppStoreServer;

/** A signing key that cannot be used (not PEM, encrypted, not EC P-256, ...) or a signature that could not be made. */
class SigningException extends AppStoreServerException
{
}
