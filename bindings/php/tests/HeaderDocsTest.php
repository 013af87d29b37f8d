<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The header is the one place a C function's behaviour is written (CONTRIBUTING, "Documenting a C export"): every PHP
 * method marked `@cfunction appstore_...` must begin its documentation with that function's summary, exactly as the
 * ABI description carries it (include/appstoreserver.abi.json), so the two cannot drift.
 */
final class HeaderDocsTest extends TestCase
{
    public function testMarkedMethodsCarryTheHeadersSummary(): void
    {
        $summaries = [];
        foreach (Support::json(Support::repo() . '/include/appstoreserver.abi.json')['functions'] as $f) {
            $summaries[$f['name']] = $f['summary'] ?? null;
        }
        $src = dirname(__DIR__) . '/src';
        $marked = 0;
        $files = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($src, \FilesystemIterator::SKIP_DOTS));
        foreach ($files as $file) {
            $class = 'AppStoreServer\\' . str_replace('/', '\\', substr($file->getPathname(), strlen("$src/"), -4));
            if (!class_exists($class)) {
                continue;
            }
            foreach ((new \ReflectionClass($class))->getMethods() as $m) {
                $doc = (string) $m->getDocComment();
                if (!preg_match('/@cfunction (\S+)/', $doc, $tag) || $m->getDeclaringClass()->getName() !== $class) {
                    continue;
                }
                $marked++;
                $where = "$class::{$m->getName()}";
                $this->assertArrayHasKey($tag[1], $summaries, "$where names $tag[1], not a function of the header");
                $lines = array_map(static fn ($l) => preg_replace('/^\s*\*\s?/', '', $l), explode("\n", trim(substr($doc, 3, -2))));
                $first = [];
                foreach ($lines as $l) {
                    if (trim($l) === '' || str_starts_with(trim($l), '@')) {
                        break;
                    }
                    $first[] = trim($l);
                }
                $this->assertSame($summaries[$tag[1]], implode(' ', $first), "$where: its first paragraph is not the header's summary of $tag[1]");
            }
        }
        $this->assertGreaterThanOrEqual(22, $marked, 'the methods that wrap one C function are marked');
    }
}
