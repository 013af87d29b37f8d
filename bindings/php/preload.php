<?php

declare(strict_types=1);

/*
 * opcache.preload script for php-fpm (where ffi.enable=preload, PHP's default, allows FFI only in preloaded code):
 *
 *   opcache.preload=/path/to/app/vendor/appstoreserver/appstoreserver/preload.php
 *   opcache.preload_user=www-data
 *   ffi.enable=preload
 *
 * It loads every class of the package (so their code may use FFI) and the C declarations into the FFI scope
 * APPSTORESERVER (FFI::load, once per server start); each request then takes that scope instead of parsing the
 * declarations and opening the library again. An application preload script may `require` this one.
 * APPSTORESERVER_PRELOAD_CACHE names the folder for the header FFI::load reads (default: the system's temp folder).
 */

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'AppStoreServer\\')) {
        $rel = str_replace('\\', '/', substr($class, strlen('AppStoreServer\\'))) . '.php';
        foreach ([__DIR__ . '/src/', __DIR__ . '/generated/'] as $dir) {
            if (is_file($dir . $rel)) {
                require_once $dir . $rel;
                return;
            }
        }
    }
});

foreach (['src', 'generated'] as $root) {
    $files = new RecursiveIteratorIterator(new RecursiveDirectoryIterator(__DIR__ . "/$root", FilesystemIterator::SKIP_DOTS));
    foreach ($files as $file) {
        if ($file->getExtension() !== 'php') {
            continue;
        }
        $class = 'AppStoreServer\\' . str_replace('/', '\\', substr($file->getPathname(), strlen(__DIR__ . "/$root/"), -4));
        class_exists($class) || interface_exists($class) || trait_exists($class) || enum_exists($class);
    }
}

AppStoreServer\Internal\Native::preload(getenv('APPSTORESERVER_PRELOAD_CACHE') ?: null);
