<?php

declare(strict_types=1);

// The tests load the package through Composer's autoloader (bindings/php/run-tests runs `composer dump-autoload`),
// so they see the package as users do; the library is the one the package carries (lib/), unless APPSTORESERVER_LIB.
require dirname(__DIR__) . '/vendor/autoload.php';

// The tests' own classes (not part of the package's autoloader).
spl_autoload_register(static function (string $class): void {
    $prefix = 'AppStoreServer\\Tests\\';
    if (str_starts_with($class, $prefix)) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
