<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\AppStoreStatus;
use AppStoreServer\FailureReason;
use AppStoreServer\ReceiptException;
use AppStoreServer\ReceiptUtility;
use AppStoreServer\ReceiptVerifier;
use AppStoreServer\VerificationException;
use AppStoreServer\VerificationStatus;
use PHPUnit\Framework\TestCase;

/**
 * Receipts through the PHP API: own-CA app receipts (Tests/support/receipts.py: exact fields, statuses, reasons,
 * every transaction id) and the real sandbox receipts against Apple Inc. Root.
 */
final class ReceiptsTest extends TestCase
{
    private static ?string $dir = null;

    private static function fixtures(): string
    {
        if (self::$dir === null) {
            self::$dir = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/receipts-' . bin2hex(random_bytes(4));
            exec('python3 ' . escapeshellarg(Support::repo() . '/Tests/support/receipts.py') . ' ' . escapeshellarg(self::$dir) . ' 2>&1', $out, $rc);
            if ($rc !== 0) {
                throw new \RuntimeException('receipts.py failed: ' . implode("\n", $out));
            }
        }
        return self::$dir;
    }

    public static function cases(): iterable
    {
        foreach (Support::json(self::fixtures() . '/manifest.json')['cases'] as $c) {
            yield $c['id'] => [$c];
        }
    }

    /** @dataProvider cases */
    public function testOwnReceipt(array $case): void
    {
        $base = self::fixtures();
        $v = $case['verifier'];
        $verifier = new ReceiptVerifier(array_map(static fn ($r) => (string) file_get_contents("$base/$r"), $v['roots']), $v['bundleId']);
        $text = trim((string) file_get_contents("$base/{$case['path']}"));
        $expect = $case['expect'];
        if ($expect['result'] === 'valid') {
            $got = json_decode(json_encode($verifier->verify($text)), true);
            $verification = $got['verification'];
            unset($got['verification']);
            $this->assertEquals($expect['json'], $got);
            $this->assertSame($expect['effectiveDateSource'], $verification['effectiveDateSource']);
            if (isset($expect['effectiveDate'])) {
                $this->assertSame($expect['effectiveDate'], $verification['effectiveDate']);
            }
        } else {
            try {
                $verifier->verify($text);
                $this->fail('no exception');
            } catch (VerificationException $e) {
                $this->assertSame($expect['status'], $e->appstoreStatus->name, $e->getMessage());
                $this->assertSame($expect['reason'], strtolower($e->reason->name), $e->getMessage());
            }
        }
        $x = $case['extract'];
        $util = new ReceiptUtility();
        $ids = $util->extractTransactionIds($text);
        $this->assertSame($x['first'], $ids->firstTransactionId);
        $this->assertSame($x['transactionIds'], $ids->transactionIds);
        $this->assertSame($x['originalTransactionIds'], $ids->originalTransactionIds);
        if (isset($x['cIdError'])) {
            try {
                $util->extractTransactionIdFromAppReceipt($text);
                $this->fail('no exception');
            } catch (ReceiptException $e) {
                $this->assertSame($x['cIdError']['status'], $e->appstoreStatus->name);
            }
        } else {
            $this->assertSame($x['first'], $util->extractTransactionIdFromAppReceipt($text));
        }
    }

    public function testRealReceipts(): void
    {
        $c = Support::conformance();
        if (!is_file("$c/manifest.json")) {
            $this->markTestSkipped("SKIPPED: $c not found; real Apple data NOT checked");
        }
        $text = trim((string) file_get_contents("$c/real/receipts/app/sandbox-app-receipt-2020-07-22.b64"));
        $fields = (new ReceiptVerifier([(string) file_get_contents("$c/certs/apple-inc-root-ca.der")]))->verify($text);
        $this->assertSame('com.revenuecat.sampleapp', $fields->bundleId);
        $this->assertCount(9, $fields->inApp);
        $this->assertSame('1000000692879214', $fields->inApp[0]->transactionId);
        $this->assertSame(1595439548000, $fields->receiptCreationDate);
        try {
            (new ReceiptVerifier([(string) file_get_contents("$c/certs/apple-inc-root-ca.der")], 'com.example.other'))->verify($text);
            $this->fail('no exception');
        } catch (VerificationException $e) {
            $this->assertSame(FailureReason::WRONG_BUNDLE, $e->reason);
            $this->assertSame(VerificationStatus::INVALID_APP_IDENTIFIER, $e->status);
        }
    }

    public function testGarbageIsAReceiptException(): void
    {
        foreach (['not base64 !!', 'QUJD', str_repeat('A', 4000)] as $bad) {
            try {
                (new ReceiptUtility())->extractTransactionIdFromAppReceipt($bad);
                $this->fail('no exception');
            } catch (ReceiptException $e) {
                $this->assertSame(AppStoreStatus::INVALID_RECEIPT, $e->appstoreStatus);
            }
        }
    }

    public function testNoRootsIsAConfigurationError(): void
    {
        $this->expectException(\AppStoreServer\ConfigurationException::class);
        new ReceiptVerifier([]);
    }
}
