<?php
/*
 * Receive App Store Server Notifications V2 into a purchase ledger: `appstoreserver serve`'s delivery contract
 * (docs/serve.md) as one PHP front controller, for php-fpm behind your web server or PHP's built-in server:
 *
 *     APPSTORE_BUNDLE_ID=com.example.app APPSTORE_LEDGER=sqlite:/var/lib/app/ledger.db php -S 127.0.0.1:8080 notification-receiver.php
 *
 * Configuration (environment): APPSTORE_BUNDLE_ID, APPSTORE_LEDGER (sqlite:/path or postgresql://...; one ledger per
 * environment), APPSTORE_ENVIRONMENT (Sandbox or Production), APPSTORE_APP_APPLE_ID (Production), APPSTORE_ROOT (a
 * root certificate file instead of Apple's, e.g. a test PKI).
 *
 * POST /notifications  the body Apple posts, {"signedPayload": ...}: 200 only once the ledger has made the
 *                      notification durable (a duplicate is 200 too); 400 / 403 / 422 when it is not a genuine
 *                      notification of this app and environment (nothing stored); 503 when storing failed, so that
 *                      Apple sends it again.
 * GET /customers/ID    the customer's entitlements (an appAccountToken). No authentication here: keep it internal.
 */
declare(strict_types=1);

require file_exists(__DIR__ . '/vendor/autoload.php') ? __DIR__ . '/vendor/autoload.php'  // your project
    : __DIR__ . '/../../bindings/php/vendor/autoload.php';                                  // this repository

use AppStoreServer\AppleRoots;
use AppStoreServer\AppStoreStatus;
use AppStoreServer\Ledger;
use AppStoreServer\LedgerException;
use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;

const MAX_BODY = 65536; // Apple's notifications are 5-20 KB

function answer(int $status, mixed $body): void
{
    http_response_code($status);
    header('Content-Type: application/json');
    echo json_encode($body, JSON_UNESCAPED_SLASHES);
}

/**
 * The ledger of this request. PHP frees every object when a request ends, so under php-fpm each request opens it (and
 * verifies a chain it has not seen: see docs/php.md, "Long-running workers"); a long-running worker (RoadRunner,
 * FrankenPHP's worker mode, Laravel Octane, a queue consumer) keeps it and the verifier's chain cache.
 */
function ledger(): Ledger
{
    static $ledger = null;
    if ($ledger === null) {
        $root = getenv('APPSTORE_ROOT');
        $appId = getenv('APPSTORE_APP_APPLE_ID');
        $verifier = new SignedDataVerifier($root ? [(string) file_get_contents($root)] : [AppleRoots::appleRootCAG3()], false,
            Environment::from(getenv('APPSTORE_ENVIRONMENT') ?: 'Sandbox'), (string) getenv('APPSTORE_BUNDLE_ID'),
            $appId ? (int) $appId : null);
        $ledger = Ledger::open((string) getenv('APPSTORE_LEDGER'), $verifier);
    }
    return $ledger;
}

$method = $_SERVER['REQUEST_METHOD'] ?? 'GET';
$path = parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH) ?: '/';
if ($method === 'POST' && $path === '/notifications') {
    $length = $_SERVER['CONTENT_LENGTH'] ?? '';
    if (!ctype_digit((string) $length) || (int) $length > MAX_BODY) {
        answer(ctype_digit((string) $length) ? 413 : 411, ['error' => 'a body of at most 64 KiB, with its length']);
        return;
    }
    $body = json_decode((string) file_get_contents('php://input', false, null, 0, MAX_BODY), true);
    if (!is_array($body) || !is_string($body['signedPayload'] ?? null)) {
        answer(400, ['error' => 'malformed_body']);
        return;
    }
    try {
        $result = ledger()->ingestNotification($body['signedPayload']); // verifies deeply; returns once durable
    } catch (VerificationException $e) {
        // A refusal's HTTP status by the library's status (docs/serve.md): malformed 400, not genuine 403, another
        // app or environment 422; an OCSP responder that could not be asked is ours to retry (503).
        $status = match ($e->appstoreStatus) {
            AppStoreStatus::INVALID_JWT_FORMAT => 400,
            AppStoreStatus::VERIFICATION_FAILURE, AppStoreStatus::INVALID_CHAIN_LENGTH, AppStoreStatus::INVALID_CERTIFICATE => 403,
            AppStoreStatus::INVALID_APP_IDENTIFIER, AppStoreStatus::INVALID_ENVIRONMENT => 422,
            AppStoreStatus::RETRYABLE_VERIFICATION_FAILURE => 503,
            default => 500,
        };
        $reason = $e->reason instanceof BackedEnum ? strtolower($e->reason->name) : (string) $e->reason;
        error_log("refused: {$e->getMessage()}");
        answer($status, ['error' => $reason, 'message' => $e->detail]);
        return;
    } catch (LedgerException $e) {
        error_log("not stored: {$e->getMessage()}");
        answer(503, ['error' => 'storage', 'message' => $e->detail]);
        return;
    }
    answer(200, $result);
} elseif ($method === 'GET' && str_starts_with($path, '/customers/')) {
    answer(200, ledger()->customer(rawurldecode(substr($path, strlen('/customers/')))));
} else {
    answer(404, ['error' => 'not found']);
}
