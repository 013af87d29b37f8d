<?php

declare(strict_types=1);

namespace AppStoreServer\Tests\Canary;

use PHPUnit\Framework\TestCase;

/**
 * A test that must fail: run-tests runs it alone first and requires it to be counted as failed (and PHPUnit to exit
 * non-zero), so that the counts of the real run can be trusted. Not part of the suite (phpunit.xml excludes it).
 */
final class CanaryTest extends TestCase
{
    public function testThatMustFail(): void
    {
        $this->assertSame(1, 2, 'the canary fails, as it must');
    }
}
