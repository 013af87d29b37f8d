<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

/**
 * The generated PHP method and its arguments for a call given as the C ABI's params_json (api_cases.json, the
 * driver scenarios), read from the method's own parameters: a body model from params.body, a query model from the
 * flattened keys, the image from its base64, enums as their cases.
 */
final class ApiCall
{
    /** @return array{0: string, 1: list<mixed>} */
    public static function of(string $endpoint, array $params, bool $pages = false): array
    {
        $method = $pages ? 'iterate' . substr($endpoint, 3) : $endpoint;
        $spec = self::endpoints()[$endpoint];
        $pageParam = $pages ? $spec['pagination']['parameter'] : null;
        $rm = new \ReflectionMethod(\AppStoreServer\Api\AppStoreServerAPIClient::class, $method);
        $args = [];
        foreach ($rm->getParameters() as $p) {
            $name = $p->getName();
            $sp = null;
            foreach ($spec['parameters'] as $x) {
                if ($x['name'] === $name) {
                    $sp = $x;
                }
            }
            \PHPUnit\Framework\Assert::assertNotNull($sp, "$method: parameter $name is not in the spec");
            \PHPUnit\Framework\Assert::assertNotSame($pageParam, $name);
            $types = self::types($p);
            $class = null;
            foreach ($types as $t) {
                if (str_starts_with($t, 'AppStoreServer\\')) {
                    $class = $t;
                }
            }
            if ($sp['in'] === 'body') {
                $args[] = $sp['type'] === 'Bytes' ? base64_decode($params[$name]) : $class::fromArray($params['body']);
            } elseif ($class !== null && method_exists($class, 'fromArray')) {
                $keys = array_intersect_key($params, array_flip($class::KEYS));
                $args[] = $keys ? $class::fromArray($keys) : null;
            } elseif ($class !== null && enum_exists($class)) {
                $args[] = array_key_exists($name, $params) ? ($class::tryFrom($params[$name]) ?? $params[$name]) : null;
            } else {
                $args[] = $params[$name] ?? null;
            }
        }
        return [$method, $args];
    }

    public static function endpoints(): array
    {
        static $eps = null;
        if ($eps === null) {
            foreach (Support::json(Support::repo() . '/spec/endpoints.json')['endpoints'] as $e) {
                $eps[$e['name']] = $e;
            }
        }
        return $eps;
    }

    /** @return list<string> */
    private static function types(\ReflectionParameter $p): array
    {
        $t = $p->getType();
        if ($t instanceof \ReflectionUnionType) {
            return array_map(static fn ($x) => $x->getName(), $t->getTypes());
        }
        return $t instanceof \ReflectionNamedType ? [$t->getName()] : [];
    }
}
