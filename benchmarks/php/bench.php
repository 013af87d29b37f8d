<?php

/*
 * benchmarks/php/bench.php VECTORS --c-verify PROGRAM [--seconds S] [--runs N] [--only a,b]
 *
 * The PHP binding (bindings/php, through Composer's autoloader, the library it carries) in one PHP process, on the
 * core the process is pinned to, against two references measured in the same run:
 *   c    the C ABI: benchmarks/c/verify_capi, linked against the same self-contained library, started from this
 *        process between its own runs (it inherits the CPU pinning);
 *   php  PHP's own openssl_verify of the same JWS signature (r||s converted to DER) with the leaf's public key parsed
 *        once from the first vector's x5c: what any pure-PHP verifier must at least do (no chain, no payload).
 *
 * Cases (each call returns what users get: the model):
 *   transaction_cached       SignedDataVerifier::verifyAndDecodeTransaction, the chain seen before
 *   transaction_first_sight  the same with the chain cache off (every call parses and validates the chain)
 *   notification             verifyAndDecodeNotification
 * Every result is checked (bundle id; transaction id / notification type present).
 *
 * Scheduling: a warm-up (every vector once through each implementation), then RUNS rounds; in each, every case runs
 * once per implementation (php binding, openssl, c) for SECONDS, the order rotating between rounds; the best run of
 * each counts. One line per case:
 *   php <case>  binding N/s  c N/s  openssl N/s  target  ratio_to_c=X ratio_to_php=Y
 * Target: the binding >= 0.5 x c for transaction_cached (FFI's per-call cost over a C call of the same work).
 */

declare(strict_types=1);

require dirname(__DIR__, 2) . '/bindings/php/vendor/autoload.php';

use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;

const CASES = ['transaction_cached', 'transaction_first_sight', 'notification'];
const C_TARGET = ['transaction_cached' => 0.5];

function fail(string $what): never
{
    fwrite(STDERR, "FAILED: $what\n");
    exit(1);
}

function b64url(string $s): string
{
    return (string) base64_decode(strtr($s, '-_', '+/'), true);
}

/** r||s (64 bytes) as the DER ECDSA signature openssl_verify takes. */
function der(string $rs): string
{
    $int = static function (string $x): string {
        $x = ltrim($x, "\0");
        if ($x === '' || ord($x[0]) & 0x80) {
            $x = "\0" . $x;
        }
        return "\x02" . chr(strlen($x)) . $x;
    };
    $body = $int(substr($rs, 0, 32)) . $int(substr($rs, 32, 32));
    return "\x30" . chr(strlen($body)) . $body;
}

/** Calls per second of $op cycling over $n inputs for $seconds. */
function measure(callable $op, int $n, float $seconds): float
{
    $start = hrtime(true);
    $end = $start + (int) ($seconds * 1e9);
    $calls = 0;
    do {
        for ($k = 0; $k < 64; $k++) {
            $op($calls % $n);
            $calls++;
        }
        $now = hrtime(true);
    } while ($now < $end);
    return $calls / (($now - $start) / 1e9);
}

function runC(array $cmd): float
{
    $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => STDERR], $pipes);
    $rate = -1.0;
    while (($line = fgets($pipes[1])) !== false) {
        $w = preg_split('/\s+/', trim($line));
        if (count($w) >= 4 && $w[0] === 'RESULT') {
            $rate = (float) $w[3];
        }
    }
    if (proc_close($p) !== 0 || $rate < 0) {
        fail(implode(' ', $cmd) . ' gave no RESULT line');
    }
    return $rate;
}

$vectors = $argv[1] ?? fail('usage: bench.php VECTORS --c-verify PROGRAM [--seconds S] [--runs N] [--only a,b]');
$cVerify = null;
$seconds = 1.5;
$runs = 3;
$only = CASES;
for ($i = 2; $i < $argc; $i += 2) {
    match ($argv[$i]) {
        '--c-verify' => $cVerify = $argv[$i + 1],
        '--seconds' => $seconds = (float) $argv[$i + 1],
        '--runs' => $runs = (int) $argv[$i + 1],
        '--only' => $only = explode(',', $argv[$i + 1]),
        default => fail("unknown option {$argv[$i]}"),
    };
}
$cVerify ?? fail('--c-verify PROGRAM is required');
$manifest = json_decode((string) file_get_contents("$vectors/manifest.json"), true);
$bundle = $manifest['bundle_id'];
$appId = (int) $manifest['app_apple_id'];
$root = (string) file_get_contents("$vectors/root.der");
$lines = static fn (string $f) => array_values(array_filter(array_map('trim', file("$vectors/$f"))));
$txs = $lines('transactions.jws');
$notes = $lines('notifications.jws');

$cached = new SignedDataVerifier([$root], false, Environment::PRODUCTION, $bundle, $appId);
$uncached = new SignedDataVerifier([$root], false, Environment::PRODUCTION, $bundle, $appId, chainCacheSize: 0);

// PHP's openssl: the leaf key from the first vector's x5c, parsed once.
$header = json_decode(b64url(explode('.', $txs[0])[0]), true);
$pem = "-----BEGIN CERTIFICATE-----\n" . chunk_split($header['x5c'][0], 64, "\n") . "-----END CERTIFICATE-----\n";
$leafKey = openssl_pkey_get_public(openssl_x509_read($pem)) ?: fail('openssl cannot read the leaf');
$opensslVerify = static function (string $jws) use ($leafKey): bool {
    $b = strrpos($jws, '.');
    return openssl_verify(substr($jws, 0, $b), der(b64url(substr($jws, $b + 1))), $leafKey, OPENSSL_ALGO_SHA256) === 1;
};

$binding = [
    'transaction_cached' => static function (int $i) use ($cached, $txs, $bundle): void {
        $t = $cached->verifyAndDecodeTransaction($txs[$i]);
        if ($t->bundleId !== $bundle || $t->transactionId === null) {
            fail("transaction #$i: unexpected content");
        }
    },
    'transaction_first_sight' => static function (int $i) use ($uncached, $txs, $bundle): void {
        if ($uncached->verifyAndDecodeTransaction($txs[$i])->bundleId !== $bundle) {
            fail("transaction #$i: unexpected content");
        }
    },
    'notification' => static function (int $i) use ($cached, $notes): void {
        if ($cached->verifyAndDecodeNotification($notes[$i])->notificationType === null) {
            fail("notification #$i: no notificationType");
        }
    },
];
$openssl = [
    'transaction_cached' => static fn (int $i) => $opensslVerify($txs[$i]) || fail("openssl: transaction #$i does not verify"),
    'notification' => static fn (int $i) => $opensslVerify($notes[$i]) || fail("openssl: notification #$i does not verify"),
];
$openssl['transaction_first_sight'] = $openssl['transaction_cached'];
$sizes = ['transaction_cached' => count($txs), 'transaction_first_sight' => count($txs), 'notification' => count($notes)];

// Warm-up: every vector once through the binding and openssl (checking each).
foreach (CASES as $k) {
    for ($i = 0; $i < $sizes[$k]; $i++) {
        $binding[$k]($i);
        $openssl[$k]($i);
    }
}
$best = [];
$impls = ['binding', 'openssl', 'c'];
for ($r = 0; $r < $runs; $r++) {
    foreach (CASES as $k) {
        if (!in_array($k, $only, true)) {
            continue;
        }
        for ($j = 0; $j < 3; $j++) {
            $impl = $impls[($j + $r) % 3];
            $rate = match ($impl) {
                'binding' => measure($binding[$k], $sizes[$k], $seconds),
                'openssl' => measure($openssl[$k], $sizes[$k], $seconds),
                'c' => runC([$cVerify, $vectors, '--only', $k, '--seconds', (string) $seconds, '--runs', '1']),
            };
            $best[$k][$impl] = max($best[$k][$impl] ?? 0, $rate);
        }
    }
}
$ok = true;
foreach (CASES as $k) {
    if (!isset($best[$k])) {
        continue;
    }
    $b = $best[$k];
    $rc = $b['binding'] / $b['c'];
    $rp = $b['binding'] / $b['openssl'];
    $target = isset(C_TARGET[$k]) ? sprintf('target ratio_to_c >= %.1f %s', C_TARGET[$k], $rc >= C_TARGET[$k] ? 'ok' : 'MISSED') : 'no target';
    $ok = $ok && (!isset(C_TARGET[$k]) || $rc >= C_TARGET[$k]);
    printf("php %-24s binding %9.0f/s  c %9.0f/s  openssl %9.0f/s  %s  ratio_to_c=%.2f ratio_to_php=%.2f\n",
        $k, $b['binding'], $b['c'], $b['openssl'], $target, $rc, $rp);
}
echo $ok ? "php: every target met\n" : "php: a target was MISSED\n";
