<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\FailureReason;
use AppStoreServer\Ledger;
use AppStoreServer\Model\Environment;
use AppStoreServer\Model\LedgerEventKind;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;
use PHPUnit\Framework\TestCase;

/**
 * The purchase ledger from PHP over Tests/support/lifecycles.py's signed lifecycles: every expectation of the
 * hand-written scenarios (written there from Apple's documentation, never from the ledger's output) for each
 * delivery; the oracle (no disagreement over every lifecycle); idempotence; refused input with the verifier's
 * status and reason and the ledger unchanged; a database reopened gives the same answers.
 */
final class LedgerTest extends TestCase
{
    private const DELIVERIES = ['notifications', 'history', 'both'];
    private const SKIP = ['at', 'asOf', 'subscription', 'customer', 'rule', 'deliveries'];
    private static ?array $doc = null;

    private static function doc(): array
    {
        if (self::$doc === null) {
            $out = (getenv('APPSTORESERVER_WORK') ?: sys_get_temp_dir()) . '/lifecycles-' . bin2hex(random_bytes(4));
            exec('python3 ' . escapeshellarg(Support::repo() . '/Tests/support/lifecycles.py') . ' ' . escapeshellarg(Support::testpki())
                . ' ' . escapeshellarg($out) . ' 2>&1', $o, $rc);
            if ($rc !== 0) {
                throw new \RuntimeException('lifecycles.py failed: ' . implode("\n", $o));
            }
            self::$doc = Support::json("$out/lifecycles.json");
        }
        return self::$doc;
    }

    private static function verifier(?string $bundle = null): SignedDataVerifier
    {
        return new SignedDataVerifier([(string) file_get_contents(Support::testpki() . '/root.der')], false,
            Environment::SANDBOX, $bundle ?? self::doc()['bundleId']);
    }

    /** @return list<array{0: string, 1: string}> (kind, jws) */
    private static function signed(array $lc, string $delivery): array
    {
        $out = [];
        if ($delivery !== 'history') {
            foreach ($lc['notifications'] as $n) {
                $out[] = ['NOTIFICATION', $n['signed']];
            }
        }
        if ($delivery !== 'notifications') {
            foreach ($lc['history']['pages'] as $page) {
                foreach ($page['signedTransactions'] as $t) {
                    $out[] = ['TRANSACTION', $t];
                }
            }
            foreach ($lc['history']['signedRenewalInfos'] as $r) {
                $out[] = ['RENEWAL_INFO', $r];
            }
        }
        return $out;
    }

    private static function ingest(Ledger $l, string $kind, string $jws): \AppStoreServer\Model\LedgerIngestResult
    {
        return match ($kind) {
            'TRANSACTION' => $l->ingestTransaction($jws),
            'RENEWAL_INFO' => $l->ingestRenewalInfo($jws),
            default => $l->ingestNotification($jws),
        };
    }

    /** The expectation's fields are a subset of the answer ("absent": missing; lists matched by productId). */
    private static function mismatches(?array $answer, array $want): array
    {
        if ($answer === null) {
            return ['no answer (unknown)'];
        }
        $problems = [];
        foreach ($want as $key => $w) {
            if (in_array($key, self::SKIP, true)) {
                continue;
            }
            $got = $answer[$key] ?? null;
            if ($w === 'absent') {
                if (array_key_exists($key, $answer)) {
                    $problems[] = "$key: expected absent, got " . json_encode($got);
                }
            } elseif (is_array($w) && array_is_list($w)) {
                if (!is_array($got) || count($got) !== count($w)) {
                    $problems[] = "$key: expected " . count($w) . ' entries, got ' . json_encode($got);
                    continue;
                }
                foreach ($w as $x) {
                    $same = array_filter($got, static fn ($g) => ($g['productId'] ?? null) === ($x['productId'] ?? null));
                    if (!$same) {
                        $problems[] = "$key: no entry for " . ($x['productId'] ?? '?');
                    }
                    foreach ($same as $g) {
                        foreach (self::mismatches($g, $x) as $p) {
                            $problems[] = "{$key}[" . ($x['productId'] ?? '?') . "].$p";
                        }
                    }
                }
            } elseif ($got !== $w) {
                $problems[] = "$key: expected " . json_encode($w) . ', got ' . json_encode($got);
            }
        }
        return $problems;
    }

    /** Its "asOf": absent = the default (now), "now" = the current time given explicitly, a number = that time. */
    private static function answer(Ledger $l, array $e): ?array
    {
        $asOf = match (true) {
            !isset($e['asOf']) => null,
            $e['asOf'] === 'now' => (int) floor(microtime(true) * 1000),
            default => $e['asOf'],
        };
        if (isset($e['subscription'])) {
            $s = $l->subscription($e['subscription'], $e['at'], asOfMs: $asOf);
            return $s === null ? null : json_decode(json_encode($s), true);
        }
        return json_decode(json_encode($l->customer($e['customer'], $e['at'], asOfMs: $asOf)), true);
    }

    public static function bitemporal(): iterable
    {
        foreach (self::doc()['bitemporal'] as $s) {
            foreach (self::DELIVERIES as $d) {
                yield "{$s['name']} ($d)" => [$s, $d];
            }
        }
    }

    /**
     * docs/ledger.md, "Bitemporal queries": a refund signed three days after its revocationDate, a backfill signed
     * months after the purchases, a billing failure signed after the period ended; asked now (the default, and the
     * current time given) and as known then (asOfMs = atMs).
     *
     * @dataProvider bitemporal
     */
    public function testBitemporal(array $lifecycle, string $delivery): void
    {
        $l = Ledger::open('sqlite::memory:', self::verifier());
        try {
            foreach (self::signed($lifecycle, $delivery) as [$kind, $jws]) {
                self::ingest($l, $kind, $jws);
            }
            $failures = [];
            $checked = 0;
            foreach ($lifecycle['expect'] as $e) {
                if (!in_array($delivery, $e['deliveries'], true)) {
                    continue;
                }
                $checked++;
                foreach (self::mismatches(self::answer($l, $e), $e) as $p) {
                    $failures[] = "at {$e['at']} as of " . json_encode($e['asOf'] ?? 'default') . " ({$e['rule']}): $p";
                }
            }
            $this->assertSame([], $failures);
            $this->assertGreaterThan(0, $checked);
            $this->assertSame([], $l->summary()->disagreements);
        } finally {
            $l->close();
        }
    }

    public function testBitemporalArguments(): void
    {
        $lc = self::doc()['bitemporal'][0];
        $e = $lc['expect'][0];
        $l = Ledger::open('sqlite::memory:', self::verifier());
        foreach (self::signed($lc, 'notifications') as [$kind, $jws]) {
            self::ingest($l, $kind, $jws);
        }
        foreach ([-5, 0] as $bad) {
            try {
                $l->subscription($e['subscription'], $e['at'], $bad);
                $this->fail("asOfMs $bad accepted");
            } catch (\InvalidArgumentException $x) {
                $this->assertStringContainsString('asOfMs', $x->getMessage());
            }
        }
        try {
            $l->customer('x', asOfMs: 'yesterday');
            $this->fail('a string asOfMs accepted');
        } catch (\TypeError) {
            $this->addToAssertionCount(1);
        }
        // asOfMs before atMs (what was believed then about a later instant): the REFUND signed later is unknown (S2).
        $s = $l->subscription($e['subscription'], $e['at'], $e['at'] - 2 * 86_400_000);
        $this->assertSame(1, json_decode(json_encode($s), true)['status']);
        $this->assertNull($s->revocationDate);
        $l->close();
    }

    public static function scenarios(): iterable
    {
        foreach (self::doc()['scenarios'] as $s) {
            foreach (self::DELIVERIES as $d) {
                yield "{$s['name']} ($d)" => [$s, $d];
            }
        }
    }

    /** @dataProvider scenarios */
    public function testScenarioMatchesApplesDocumentation(array $scenario, string $delivery): void
    {
        $path = tempnam(sys_get_temp_dir(), 'ledger');
        unlink($path);
        $l = Ledger::open("sqlite:$path", self::verifier());
        try {
            foreach (self::signed($scenario, $delivery) as [$kind, $jws]) {
                $r = self::ingest($l, $kind, $jws);
                $this->assertTrue($r->stored);
                $this->assertSame(LedgerEventKind::from($kind), $r->kind);
                if ($r->appleStatus !== null) {
                    $this->assertTrue($r->agrees, json_encode($r));
                }
            }
            $checked = 0;
            $failures = [];
            foreach ($scenario['expect'] as $e) {
                $ds = $e['deliveries'] ?? ($e['at'] >= $scenario['historyDate'] ? self::DELIVERIES : ['notifications', 'both']);
                if (!in_array($delivery, $ds, true)) {
                    continue;
                }
                $checked++;
                foreach (self::mismatches(self::answer($l, $e), $e) as $p) {
                    $failures[] = "at {$e['at']} ({$e['rule']}): $p";
                }
            }
            $this->assertSame([], $failures);
            if ($delivery !== 'history') {
                $this->assertGreaterThan(0, $checked);
                $this->assertSame([], $l->summary()->disagreements);
            }
            // The same answers from the database reopened.
            $answers = array_map(static fn ($e) => self::answer($l, $e), $scenario['expect']);
            $l->close();
            $l = Ledger::open("sqlite:$path", self::verifier());
            $this->assertSame($answers, array_map(static fn ($e) => self::answer($l, $e), $scenario['expect']));
        } finally {
            $l->close();
            @unlink($path);
            foreach (glob("$path-*") ?: [] as $x) {
                @unlink($x);
            }
        }
    }

    public function testOracleAgreesWithAppleOnEveryLifecycleAndIngestIsIdempotent(): void
    {
        $doc = self::doc();
        $all = array_merge($doc['scenarios'], $doc['random']);
        $l = Ledger::open('sqlite::memory:', self::verifier());
        $stored = 0;
        $values = [];
        foreach ($all as $lc) {
            foreach (self::signed($lc, 'both') as $v) {
                $values[] = $v;
                $stored += self::ingest($l, ...$v)->stored ? 1 : 0;
            }
        }
        $summary = $l->summary();
        $this->assertSame([], $summary->disagreements);
        $this->assertGreaterThan(300, $summary->checkedNotifications);
        $this->assertSame($stored, $summary->events);
        $this->assertSame(array_sum(array_map(static fn ($lc) => count($lc['notifications']), $all)), $summary->notifications);
        foreach (array_slice($values, 0, 200) as $v) {
            $this->assertFalse(self::ingest($l, ...$v)->stored);
        }
        $this->assertEquals($summary, $l->summary());
    }

    public function testBadInputIsRefusedWithTheVerifiersReason(): void
    {
        $doc = self::doc();
        $first = $doc['scenarios'][0];
        $customer = null;
        foreach ($first['expect'] as $e) {
            $customer ??= $e['customer'] ?? null;
        }
        $l = Ledger::open('sqlite::memory:', self::verifier());
        foreach (self::signed($first, 'both') as $v) {
            self::ingest($l, ...$v);
        }
        $before = [json_encode($l->summary()), json_encode($l->customer($customer, 1_900_000_000_000))];
        $this->assertGreaterThanOrEqual(9, count($doc['bad']));
        foreach ($doc['bad'] as $bad) {
            $jws = !empty($bad['oversizedBytes']) ? str_repeat('a', $bad['oversizedBytes']) : $bad['signed'];
            try {
                self::ingest($l, $bad['kind'], $jws);
                $this->fail("{$bad['name']}: accepted");
            } catch (VerificationException $x) {
                $this->assertSame($bad['status'], $x->appstoreStatus->name, "{$bad['name']}: {$x->getMessage()}");
                $this->assertSame(strtoupper($bad['reason']), $x->reason->name, $bad['name']);
            }
        }
        $this->assertSame($before, [json_encode($l->summary()), json_encode($l->customer($customer, 1_900_000_000_000))]);
    }

    public function testTheVerifiersIdentityDecides(): void
    {
        $jws = self::doc()['scenarios'][0]['notifications'][0]['signed'];
        $l = Ledger::open('sqlite::memory:', self::verifier('com.example.other'));
        try {
            $l->ingestNotification($jws);
            $this->fail('accepted');
        } catch (VerificationException $e) {
            $this->assertSame(FailureReason::WRONG_BUNDLE, $e->reason);
        }
        $this->assertSame(0, $l->summary()->events);
    }

    public function testArguments(): void
    {
        try {
            Ledger::open('mysql://nope', self::verifier());
            $this->fail('accepted');
        } catch (\InvalidArgumentException $e) {
            $this->assertNotSame('', $e->getMessage());
        }
        $l = Ledger::open('sqlite::memory:', self::verifier());
        $this->assertNull($l->subscription('unknown'));
        $this->assertSame([], $l->customer('unknown')->entitlements);
        $l->close();
        $this->expectException(\LogicException::class);
        $l->summary();
    }

    /** A ledger is bound to its app and environment (docs/ledger.md, "Identity"): opened with a Production verifier,
     *  or one for another app, a Sandbox ledger's file is refused (ConfigurationException, LEDGER_IDENTITY_MISMATCH,
     *  naming the identity) and its bytes are untouched. */
    public function testAnotherIdentityIsRefusedAndNothingWritten(): void
    {
        $dir = sys_get_temp_dir() . '/identity-' . bin2hex(random_bytes(4));
        mkdir($dir);
        $l = Ledger::open("sqlite:$dir/ledger.db", self::verifier());
        foreach (self::signed(self::doc()['scenarios'][0], 'notifications') as [$kind, $jws]) {
            self::ingest($l, $kind, $jws);
        }
        $l->close();
        $before = file_get_contents("$dir/ledger.db");
        $root = (string) file_get_contents(Support::testpki() . '/root.der');
        foreach ([[Environment::PRODUCTION, self::doc()['bundleId'], 'Production'],
                  [Environment::SANDBOX, 'com.example.other', 'com.example.other']] as [$env, $bundle, $mentions]) {
            try {
                Ledger::open("sqlite:$dir/ledger.db", new SignedDataVerifier([$root], false, $env, $bundle, 1234));
                $this->fail("opened with $bundle");
            } catch (\AppStoreServer\ConfigurationException $e) {
                $this->assertSame(FailureReason::LEDGER_IDENTITY_MISMATCH, $e->reason);
                $this->assertStringContainsString($mentions, $e->getMessage());
            }
            $this->assertSame($before, file_get_contents("$dir/ledger.db"), $bundle);
            $this->assertTrue(!file_exists("$dir/ledger.db-wal") || filesize("$dir/ledger.db-wal") === 0, $bundle);
        }
        array_map('unlink', glob("$dir/*"));
        rmdir($dir);
    }

    /** subscriptionIds / customerIds (C: appstore_ledger_query_subscription_ids, _customer_ids): pages of any size hold
     *  every id once, in byte order, only the last without `next`. Expected from the transactions' own payloads: a
     *  subscription is an auto-renewable originalTransactionId; a customer is the appAccountToken in lowercase, else
     *  the originalTransactionId. */
    public function testIdPages(): void
    {
        $l = Ledger::open('sqlite::memory:', self::verifier());
        $this->assertSame([], $l->subscriptionIds()->ids);
        $this->assertNull($l->subscriptionIds()->next);
        $subscriptions = $customers = [];
        foreach (self::doc()['scenarios'] as $s) {
            foreach (self::signed($s, 'history') as [$kind, $jws]) {
                if ($kind !== 'TRANSACTION') {
                    continue;
                }
                $l->ingestTransaction($jws);
                $p = json_decode(base64_decode(strtr(explode('.', $jws)[1], '-_', '+/')), true);
                if ($p['type'] === 'Auto-Renewable Subscription') {
                    $subscriptions[$p['originalTransactionId']] = true;
                }
                $customers[strtolower($p['appAccountToken'] ?? '') ?: $p['originalTransactionId']] = true;
            }
        }
        foreach (['subscriptionIds' => $subscriptions, 'customerIds' => $customers] as $method => $set) {
            $want = array_map('strval', array_keys($set));
            sort($want, SORT_STRING);  // byte order
            $this->assertGreaterThan(5, count($want));
            foreach ([1, 4, count($want), 10000] as $limit) {
                $got = [];
                $after = null;
                do {
                    $page = $l->$method($after, $limit);
                    $this->assertTrue(count($page->ids) === $limit || $page->next === null, "$method $limit");
                    array_push($got, ...$page->ids);
                    $after = $page->next;
                } while ($after !== null);
                $this->assertSame($want, $got, "$method $limit");
            }
            foreach ([0, 10001] as $limit) {
                try {
                    $l->$method(null, $limit);
                    $this->fail("accepted $limit");
                } catch (\InvalidArgumentException $e) {
                    $this->assertStringContainsString('limit must be', $e->getMessage());
                }
            }
        }
        $l->close();
    }

    /** disagreements($after, $limit): an empty ledger's one page; the cursors and limits refused (the pages
     *  themselves: Swift's LedgerOracleVerdictTests, the tool's tests on SQLite and PostgreSQL). */
    public function testDisagreementsArguments(): void
    {
        $l = Ledger::open('sqlite::memory:', self::verifier());
        $page = $l->disagreements();
        $this->assertSame([], $page->disagreements);
        $this->assertNull($page->next);
        $this->assertSame([], $l->disagreements('', 10000)->disagreements);
        foreach ([[null, 0, 'limit must be'], [null, 10001, 'limit must be'], ['CONTRADICTION:soon:x', 10, 'not a cursor'],
                  ["a\0b", 10, 'after']] as [$after, $limit, $why]) {
            try {
                $l->disagreements($after, $limit);
                $this->fail("accepted $limit");
            } catch (\InvalidArgumentException $e) {
                $this->assertStringContainsString($why, $e->getMessage());
            }
        }
        $l->close();
    }

    /** Bulk import (docs/ledger.md, "Bulk import"): every line format, bad lines by number, nothing stored twice. */
    /** exportJsonl (C: appstore_ledger_export_jsonl): every stored value once, byte for byte as ingested, in
     *  importJsonl's format and the order stored (expected from the values this test gave); imported into a new
     *  ledger, the same summary. */
    public function testExportJsonl(): void
    {
        $member = ['NOTIFICATION' => 'notification', 'TRANSACTION' => 'transaction', 'RENEWAL_INFO' => 'renewalInfo'];
        $values = [];
        foreach (array_slice(self::doc()['scenarios'], 0, 6) as $lc) {
            array_push($values, ...self::signed($lc, 'both'));
        }
        $dir = sys_get_temp_dir() . '/export-' . bin2hex(random_bytes(4));
        mkdir($dir);
        $a = Ledger::open("sqlite:$dir/a.db", self::verifier());
        $want = [];
        foreach (array_merge($values, array_slice($values, 0, 4)) as [$kind, $jws]) {
            if (self::ingest($a, $kind, $jws)->stored) {
                $want[] = json_encode([$member[$kind] => $jws], JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
            }
        }
        $r = $a->exportJsonl("$dir/export.jsonl");
        $this->assertSame(implode("\n", $want) . "\n", file_get_contents("$dir/export.jsonl"));
        $this->assertSame(count($want), $r->exported);
        $this->assertSame(0o600, fileperms("$dir/export.jsonl") & 0o777);
        $rv = $a->reverify();  // every stored value verified again: none refused
        $this->assertSame([count($want), []], [$rv->checked, $rv->refused]);
        $b = Ledger::open("sqlite:$dir/b.db", self::verifier());
        $i = $b->importJsonl("$dir/export.jsonl");
        $this->assertSame([count($want), 0], [$i->stored, $i->refusedCount]);
        $this->assertEquals($a->summary(), $b->summary());
        try {
            $a->exportJsonl("$dir/missing-dir/x.jsonl");
            $this->fail('exported into a missing directory');
        } catch (\InvalidArgumentException $e) {
            $this->assertStringContainsString('cannot create the export file', $e->getMessage());
        }
        $a->close();
        $b->close();
        array_map('unlink', glob("$dir/*"));
        rmdir($dir);
    }

    public function testImportJsonl(): void
    {
        $member = ['NOTIFICATION' => 'notification', 'TRANSACTION' => 'transaction', 'RENEWAL_INFO' => 'renewalInfo'];
        $values = [];
        foreach (self::doc()['scenarios'] as $lc) {
            array_push($values, ...self::signed($lc, 'both'));
        }
        $lines = array_map(fn ($v) => json_encode([$member[$v[0]] => $v[1]], JSON_THROW_ON_ERROR), $values);
        array_splice($lines, 1, 0, ['[1, 2]']);  // line 2: not an object
        $file = tempnam(sys_get_temp_dir(), 'import');
        file_put_contents($file, implode("\n", $lines) . "\n");
        $distinct = count(array_unique(array_column($values, 1)));
        $l = Ledger::open('sqlite::memory:', self::verifier());
        try {
            $r = $l->importJsonl($file, 9);
            $this->assertSame(count($lines), $r->read);
            $this->assertSame($distinct, $r->stored);
            $this->assertSame(count($values) - $distinct, $r->alreadyPresent);
            $this->assertSame(1, $r->refusedCount);
            $this->assertSame([2, 'malformed'], [$r->refused[0]->line, $r->refused[0]->reason]);
            $again = $l->importJsonl($file);
            $this->assertSame([0, count($values), 1], [$again->stored, $again->alreadyPresent, $again->refusedCount]);
            try {
                $l->importJsonl($file . '.missing');
                $this->fail('a missing file was imported');
            } catch (\InvalidArgumentException $e) {
                $this->assertStringContainsString('cannot open', $e->getMessage());
            }
        } finally {
            $l->close();
            unlink($file);
        }
    }
}
