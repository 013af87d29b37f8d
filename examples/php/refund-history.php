<?php
/*
 * Every page of a customer's refund history through the App Store Server API (Get Refund History), with retries and
 * the Sandbox fallback that App Review's purchases need.
 *
 *     APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" php refund-history.php \
 *         --key-id=ABC123DEFG --issuer-id=57246542-... --bundle-id=com.example.app 2000000000000001
 *
 * --base-url points the client at another server (a test server); without it, Apple's.
 */
declare(strict_types=1);

require file_exists(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php'  // your project
    : __DIR__ . '/../../bindings/php/vendor/autoload.php';                                  // this repository

use AppStoreServer\Api\APIException;
use AppStoreServer\Api\AppStoreServerAPIClient;
use AppStoreServer\Model\Environment;

$opts = $args = []; // --name=value options anywhere, the rest positional
foreach (array_slice($argv, 1) as $a) {
    preg_match('/^--([a-z-]+)=(.*)$/s', $a, $m) ? $opts[$m[1]] = $m[2] : $args[] = $a;
}
$transactionId = $args[0] ?? null;
if ($transactionId === null || !isset($opts['key-id'], $opts['issuer-id'], $opts['bundle-id'])) {
    fwrite(STDERR, "usage: php refund-history.php --key-id=K --issuer-id=I --bundle-id=B [--environment=Sandbox] [--base-url=URL] TRANSACTION_ID\n");
    exit(2);
}
$key = (string) getenv('APPSTORE_PRIVATE_KEY'); // the .p8 text; never put a key on a command line
$environment = Environment::from($opts['environment'] ?? 'Production');
$client = new AppStoreServerAPIClient($key, $opts['key-id'], $opts['issuer-id'], $opts['bundle-id'], $environment,
    baseUrl: $opts['base-url'] ?? null, maxRetries: 3, sandboxFallback: $environment === Environment::PRODUCTION);
try {
    $number = 0;
    foreach ($client->iterateRefundHistory($transactionId) as $page) {
        $number++;
        echo "page $number: " . count($page->signedTransactions ?? []) . ' refunded transactions, more: '
            . ($page->hasMore ? 'true' : 'false') . "\n";
    }
} catch (APIException $e) {
    fwrite(STDERR, "failed: {$e->getMessage()}\n"); // HTTP status, Apple's error code and message, Retry-After
    exit(1);
}
