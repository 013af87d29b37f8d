<?php
/*
 * A promotional offer signature (V2, a JWS) for the app to pass to StoreKit's purchase(options: .promotionalOffer).
 *
 *     APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" php offer-signature.php \
 *         --key-id=ABC123DEFG --issuer-id=57246542-... --bundle-id=com.example.app com.example.monthly WINBACK [TRANSACTION_ID]
 */
declare(strict_types=1);

require file_exists(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php'  // your project
    : __DIR__ . '/../../bindings/php/vendor/autoload.php';                                  // this repository

use AppStoreServer\PromotionalOfferV2SignatureCreator;
use AppStoreServer\SigningException;

$opts = $args = []; // --name=value options anywhere, the rest positional
foreach (array_slice($argv, 1) as $a) {
    preg_match('/^--([a-z-]+)=(.*)$/s', $a, $m) ? $opts[$m[1]] = $m[2] : $args[] = $a;
}
[$productId, $offerId, $transactionId] = $args + [null, null, null];
if ($productId === null || $offerId === null || !isset($opts['key-id'], $opts['issuer-id'], $opts['bundle-id'])) {
    fwrite(STDERR, "usage: php offer-signature.php --key-id=K --issuer-id=I --bundle-id=B PRODUCT_ID OFFER_ID [TRANSACTION_ID]\n");
    exit(2);
}
try {
    $creator = new PromotionalOfferV2SignatureCreator((string) getenv('APPSTORE_PRIVATE_KEY'), $opts['key-id'],
        $opts['issuer-id'], $opts['bundle-id']);
} catch (SigningException $e) {
    fwrite(STDERR, "unusable key: {$e->getMessage()}\n"); // not PEM, encrypted, not EC P-256, ...
    exit(1);
}
echo $creator->createSignature($productId, $offerId, $transactionId), "\n";
