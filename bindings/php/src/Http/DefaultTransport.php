<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/** The transport used when none is given: curl when ext-curl is loaded, else PHP's own streams. */
final class DefaultTransport
{
    public static function create(): HttpTransport
    {
        return extension_loaded('curl') ? new CurlTransport() : new StreamTransport();
    }
}
