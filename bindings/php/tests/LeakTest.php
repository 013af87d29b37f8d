<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The short form of `scripts/leak-check php`: 30,000 calls of tests/leak-workload.php in a process of its own (a
 * long-running worker), judged by Tests/support/leakcheck.py on the library's live objects and malloc's in-use bytes
 * (never the resident size). scripts/test-all runs its self-test (a leaking workload must be caught).
 */
final class LeakTest extends TestCase
{
    public function testCallsLeakNothing(): void
    {
        $cmd = ['python3', Support::repo() . '/Tests/support/leakcheck.py', '--lang', 'php', '--calls', '30000', '--',
            PHP_BINARY, __DIR__ . '/leak-workload.php', Support::testpki()];
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        $out = (string) stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        $rc = proc_close($p);
        $this->assertSame(0, $rc, $out);
        $this->assertMatchesRegularExpression('/: flat$/m', $out);
    }
}
