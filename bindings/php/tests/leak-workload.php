<?php
// The PHP workload of the leak check (Tests/support/leakcheck.py judges it; scripts/leak-check php runs the long
// form, tests/LeakTest.php the short one).
//
//   php tests/leak-workload.php TESTPKI_DIR CALLS none|handles|malloc
//
// CALLS verifications as a long-running worker makes them: valid transactions, failures (exceptions owning native
// errors), notifications, and every 100th call a verifier made and dropped and an offer signature. At the start and
// after every thirtieth of the calls, after gc_collect_cycles(), it prints "leak-sample CALLS LIVE_OBJECTS
// MALLOC_IN_USE". Self-test modes: `handles` keeps a verifier per call (its handle never freed), `malloc` keeps
// 1,024 bytes of persistent (malloc'd) FFI memory per call.

declare(strict_types=1);

require dirname(__DIR__) . '/vendor/autoload.php';

use AppStoreServer\Internal\Native;
use AppStoreServer\Model\Environment;
use AppStoreServer\PromotionalOfferV2SignatureCreator;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;

[$dir, $calls, $mode] = [$argv[1] ?? '', (int)($argv[2] ?? 0), $argv[3] ?? ''];
if ($calls <= 0 || !in_array($mode, ['none', 'handles', 'malloc'], true)) {
    fwrite(STDERR, "usage: php leak-workload.php TESTPKI_DIR CALLS none|handles|malloc\n");
    exit(2);
}
$bundle = 'com.example.testpki';
$read = static fn(string $name): string => trim(file_get_contents("$dir/$name"));
$root = file_get_contents("$dir/root.der");
$good = $read('jws/tx-valid.jws');
$bad = $read('jws/tx-wrong-bundle.jws');
$notification = $read('jws/notif-valid-did-renew.jws');
$key = file_get_contents("$dir/leaf_key.pem"); // PKCS#8 P-256, as App Store Connect hands out

$sample = static function (int $done): void {
    gc_collect_cycles();
    [$live, $malloc] = Native::debugCounters();
    echo "leak-sample $done $live $malloc\n";
};

$v = new SignedDataVerifier([$root], false, Environment::SANDBOX, $bundle);
$kept = [];
$failures = 0;
$sample(0);
for ($i = 1; $i <= $calls; $i++) {
    $k = $i % 10;
    if ($k === 0) {
        try {
            $v->verifyAndDecodeTransaction($bad);
            fwrite(STDERR, "a wrong-bundle transaction verified\n");
            exit(1);
        } catch (VerificationException) {
            $failures++;
        }
    } elseif ($k === 5) {
        $v->verifyAndDecodeNotification($notification);
    } else {
        $v->verifyAndDecodeTransaction($good);
    }
    if ($i % 100 === 0) {
        new SignedDataVerifier([$root], true, Environment::SANDBOX, 'b');
        (new PromotionalOfferV2SignatureCreator($key, 'KEYID', 'issuer', $bundle))->createSignature('p', 'o', null);
    }
    if ($mode === 'handles') {
        $kept[] = new SignedDataVerifier([$root], false, Environment::SANDBOX, $bundle);
    } elseif ($mode === 'malloc') {
        $block = FFI::new('char[1024]', false, true);
        $block[0] = 'x';
        $kept[] = $block;
    }
    if (intdiv($i * 30, $calls) !== intdiv(($i - 1) * 30, $calls)) {
        $sample($i);
    }
}
if ($failures !== intdiv($calls, 10)) {
    fwrite(STDERR, "$failures failures, " . intdiv($calls, 10) . " expected\n");
    exit(1);
}
