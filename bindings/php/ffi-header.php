<?php

declare(strict_types=1);

/*
 * php ffi-header.php OUTFILE -- writes the C declarations with FFI_SCOPE "APPSTORESERVER" and FFI_LIB the absolute
 * path of the library this package carries, for php.ini's ffi.preload (php-fpm started as root, where
 * opcache.preload_user is set and FFI::load cannot run at preload time):
 *
 *   ffi.enable=preload
 *   ffi.preload=/etc/php/8.2/appstoreserver.h            (this file's output)
 *   opcache.preload=/path/to/app/vendor/appstoreserver/appstoreserver/preload.php
 *   opcache.preload_user=www-data
 *
 * Write it again when the package is updated (composer install), then restart php-fpm.
 */

require __DIR__ . '/src/Internal/Native.php';

if ($argc !== 2) {
    fwrite(STDERR, "usage: php ffi-header.php OUTFILE\n");
    exit(2);
}
file_put_contents($argv[1], AppStoreServer\Internal\Native::scopedHeader());
echo "ffi-header: wrote {$argv[1]} (FFI_LIB " . realpath(AppStoreServer\Internal\Native::libraryPath()) . ")\n";
