<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

/**
 * Checks of the API methods' arguments that PHP's types cannot express; the core checks the rest (Apple's limits,
 * UUIDs, unknown keys) when the call is created.
 *
 * @internal
 */
final class Params
{
    public static function text(string $value, string $name): string
    {
        if (str_contains($value, "\0")) {
            throw new \InvalidArgumentException("$name must not contain a NUL character");
        }
        return $value;
    }

    /** A list of query values (enum cases or their raw values). */
    public static function list(array $values, string $name): array
    {
        $out = [];
        foreach (array_values($values) as $i => $v) {
            if ($v instanceof \BackedEnum) {
                $v = $v->value;
            }
            if (!is_string($v) && !is_int($v)) {
                throw new \TypeError("{$name}[$i] must be an enum case, a string or an int, not " . get_debug_type($v));
            }
            $out[] = $v;
        }
        return $out;
    }
}
