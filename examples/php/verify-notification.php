<?php
/*
 * Verify an App Store Server Notification V2 (the body Apple POSTs to your server) and print what it says.
 *
 *     php verify-notification.php notification.json com.example.app [--environment=Production --app-apple-id=1234]
 *
 * Apple's root certificate comes with the package (AppleRoots::appleRootCAG3(), checked against the fingerprint Apple
 * publishes); --root=FILE trusts another root instead (DER or PEM), e.g. for a test PKI.
 */
declare(strict_types=1);

require file_exists(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php'  // your project
    : __DIR__ . '/../../bindings/php/vendor/autoload.php';                                  // this repository

use AppStoreServer\AppleRoots;
use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;

$opts = $args = []; // --name=value options anywhere, the rest positional
foreach (array_slice($argv, 1) as $a) {
    preg_match('/^--([a-z-]+)=(.*)$/s', $a, $m) ? $opts[$m[1]] = $m[2] : $args[] = $a;
}
[$file, $bundleId] = $args + [null, null];
if ($file === null || $bundleId === null) {
    fwrite(STDERR, "usage: php verify-notification.php notification.json BUNDLE_ID [--environment=Production --app-apple-id=N] [--root=FILE]\n");
    exit(2);
}
$text = trim((string) file_get_contents($file));
$signedPayload = str_starts_with($text, '{') ? json_decode($text, true)['signedPayload'] : $text;
$roots = isset($opts['root']) ? [(string) file_get_contents($opts['root'])] : [AppleRoots::appleRootCAG3()];
$verifier = new SignedDataVerifier($roots, false, Environment::from($opts['environment'] ?? 'Sandbox'), $bundleId,
    isset($opts['app-apple-id']) ? (int) $opts['app-apple-id'] : null);
try {
    $notification = $verifier->verifyAndDecodeNotification($signedPayload);
} catch (VerificationException $e) {
    fwrite(STDERR, "NOT VERIFIED: {$e->getMessage()}\n"); // the status, the reason and what exactly failed
    exit(1);
}
$raw = static fn ($v) => $v instanceof BackedEnum ? $v->value : $v; // an enum case, or the raw value Apple sent
echo rtrim('type: ' . $raw($notification->notificationType) . ' ' . $raw($notification->subtype)), "\n";
if ($notification->data !== null) {
    echo "bundle: {$notification->data->bundleId}, environment: {$raw($notification->data->environment)}\n";
    if ($notification->data->signedTransactionInfo !== null) {
        $transaction = $verifier->verifyAndDecodeTransaction($notification->data->signedTransactionInfo);
        echo "transaction: {$transaction->transactionId} ({$transaction->productId})\n";
    }
}
