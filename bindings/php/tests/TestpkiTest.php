<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/** The project's own PKI cases (Tests/support/testpki.py: every verify operation, valid and each failure). */
final class TestpkiTest extends TestCase
{
    public static function cases(): iterable
    {
        foreach (Support::json(Support::testpki() . '/manifest.json')['cases'] as $c) {
            yield $c['id'] => [$c];
        }
    }

    public function testCaseCount(): void
    {
        $this->assertGreaterThanOrEqual(146, count(Support::json(Support::testpki() . '/manifest.json')['cases']));
    }

    /** @dataProvider cases */
    public function testCase(array $case): void
    {
        ManifestRunner::check(Support::testpki(), $case);
    }
}
