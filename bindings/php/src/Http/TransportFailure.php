<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/** Why an exchange got no answer (the C ABI's APPSTORE_TRANSPORT_RESULT_*). */
enum TransportFailure: int
{
    case TIMEOUT = 1;
    case UNREACHABLE = 2;
    case FAILED = 3;
}
