<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\AppStoreStatus;
use AppStoreServer\FailureReason;
use AppStoreServer\ReceiptException;
use AppStoreServer\ReceiptUtility;
use PHPUnit\Framework\TestCase;

/**
 * The 105 cases of ../shared/conformance (85 verifications of real Apple-signed data and derived negatives, 20 receipt
 * extractions) through the PHP API. Without ../shared/conformance every case is reported SKIPPED, loudly.
 */
final class ConformanceTest extends TestCase
{
    private const VERIFY_CASES = 85;
    private const RECEIPT_CASES = 20;

    public static function cases(): iterable
    {
        $path = Support::conformance() . '/manifest.json';
        if (!is_file($path)) {
            for ($i = 1; $i <= self::VERIFY_CASES + self::RECEIPT_CASES; $i++) {
                yield "missing-$i" => [null];
            }
            return;
        }
        foreach (Support::json($path)['cases'] as $c) {
            yield $c['id'] => [$c];
        }
    }

    public function testCaseCounts(): void
    {
        $path = Support::conformance() . '/manifest.json';
        if (!is_file($path)) {
            $this->markTestSkipped('SKIPPED: ' . Support::conformance() . ' not found; real Apple data NOT checked');
        }
        $ops = array_column(Support::json($path)['cases'], 'operation');
        $this->assertCount(self::VERIFY_CASES, array_filter($ops, static fn ($o) => str_starts_with($o, 'verifyAndDecode')));
        $this->assertCount(self::RECEIPT_CASES, array_filter($ops, static fn ($o) => str_starts_with($o, 'extractTransactionId')));
    }

    /** @dataProvider cases */
    public function testCase(?array $case): void
    {
        if ($case === null) {
            $this->markTestSkipped('SKIPPED: ' . Support::conformance() . ' not found; real Apple data NOT checked');
        }
        if (str_starts_with($case['operation'], 'verifyAndDecode')) {
            ManifestRunner::check(Support::conformance(), $case);
        } else {
            $this->checkReceipt($case);
        }
    }

    private static function reference(array $case, string $prefix): ?array
    {
        foreach ($case['reference_results'] ?? [] as $k => $v) {
            if (str_starts_with($k, $prefix)) {
                return $v;
            }
        }
        return null;
    }

    /** As Tests/capi/receipts_conformance.c: value / any_of + python_java_node / error-or-null / null. */
    private function checkReceipt(array $case): void
    {
        $text = ManifestRunner::trimmed(Support::conformance() . '/' . $case['path']);
        $util = new ReceiptUtility();
        $got = $error = null;
        try {
            $got = $case['operation'] === 'extractTransactionIdFromAppReceipt'
                ? $util->extractTransactionIdFromAppReceipt($text)
                : $util->extractTransactionIdFromTransactionReceipt($text);
        } catch (ReceiptException $e) {
            $error = $e;
        }
        $expect = $case['expect'];
        $result = $expect['result'];
        if ($result === 'value') {
            $this->assertNull($error, 'expected a value, got ' . ($error?->getMessage() ?? ''));
            if (array_key_exists('value', $expect)) {
                $this->assertSame($expect['value'], $got);
            } else {
                $this->assertSame($expect['python_java_node'], $got, "Apple's Python, Java and Node result");
                $this->assertTrue($got === null || in_array($got, $expect['any_of'], true));
            }
        } elseif ($result === 'error-or-null') {
            if ($error !== null) {
                $this->assertSame(AppStoreStatus::INVALID_RECEIPT, $error->appstoreStatus);
                $this->assertContains($error->reason, [FailureReason::RECEIPT_MALFORMED, FailureReason::WRONG_KIND]);
            } else {
                $this->assertNull($got);
            }
        } elseif (str_starts_with($result, 'null')) {
            $this->assertNull($error, $error?->getMessage() ?? '');
            $this->assertNull($got);
        } else {
            $this->fail("unknown expectation $result");
        }
        $ref = self::reference($case, 'apple-python');
        if ($ref && ($ref['result'] ?? '') === 'value') {
            $this->assertSame($ref['value'], $got, "Apple's Python returns it");
        } elseif ($ref && ($ref['result'] ?? '') === 'error') {
            $this->assertTrue($error !== null || $got === null, "Apple's Python raises");
        }
    }
}
