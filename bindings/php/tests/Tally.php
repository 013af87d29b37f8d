<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Runner\AfterIncompleteTestHook;
use PHPUnit\Runner\AfterLastTestHook;
use PHPUnit\Runner\AfterRiskyTestHook;
use PHPUnit\Runner\AfterSkippedTestHook;
use PHPUnit\Runner\AfterSuccessfulTestHook;
use PHPUnit\Runner\AfterTestErrorHook;
use PHPUnit\Runner\AfterTestFailureHook;

/**
 * Counts the manifest cases (ConformanceTest::testCase, TestpkiTest::testCase) and prints the closing lines
 * "php conformance: N passed, M failed, K skipped" and "php testpki: ..." after the last test, and every test's
 * outcome for run-tests' own closing line (APPSTORESERVER_TALLY.all: "passed failed skipped").
 */
final class Tally implements AfterSuccessfulTestHook, AfterTestFailureHook, AfterTestErrorHook, AfterSkippedTestHook,
    AfterIncompleteTestHook, AfterRiskyTestHook, AfterLastTestHook
{
    private const SUITES = ['ConformanceTest::testCase with' => 'conformance', 'TestpkiTest::testCase with' => 'testpki'];
    private array $t = ['conformance' => [0, 0, 0], 'testpki' => [0, 0, 0]];
    private array $all = [0, 0, 0];

    private function add(string $test, int $slot): void
    {
        $this->all[$slot]++;
        foreach (self::SUITES as $needle => $suite) {
            if (str_contains($test, $needle)) {
                $this->t[$suite][$slot]++;
            }
        }
    }

    public function executeAfterSuccessfulTest(string $test, float $time): void
    {
        $this->add($test, 0);
    }

    public function executeAfterTestFailure(string $test, string $message, float $time): void
    {
        $this->add($test, 1);
    }

    public function executeAfterTestError(string $test, string $message, float $time): void
    {
        $this->add($test, 1);
    }

    public function executeAfterRiskyTest(string $test, string $message, float $time): void
    {
        $this->add($test, 1);
    }

    public function executeAfterSkippedTest(string $test, string $message, float $time): void
    {
        $this->add($test, 2);
    }

    public function executeAfterIncompleteTest(string $test, string $message, float $time): void
    {
        $this->add($test, 2);
    }

    public function executeAfterLastTest(): void
    {
        $lines = '';
        if (!is_file(Support::conformance() . '/manifest.json')) {
            $lines .= 'php conformance: SKIPPED - ' . Support::conformance() . " not found; real Apple data NOT checked\n";
        }
        foreach ($this->t as $suite => [$p, $f, $s]) {
            $lines .= "php $suite: $p passed, $f failed, $s skipped\n";
        }
        $file = getenv('APPSTORESERVER_TALLY');
        if ($file) {
            file_put_contents($file, $lines);
            file_put_contents("$file.all", implode(" ", $this->all) . "\n");
        } else {
            fwrite(STDERR, "\n" . $lines);
        }
    }
}
