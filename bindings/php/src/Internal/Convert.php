<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

/**
 * Conversions the generated models use: JSON values (already checked by the core to decode into the model) into
 * property values, and back. Never throws on a decoded payload: a value of an unexpected JSON type is left out.
 *
 * @internal
 */
final class Convert
{
    /** @var array<class-string, bool> enum class => is string-backed */
    private static array $stringBacked = [];

    public static function str(mixed $v): ?string
    {
        return is_string($v) ? $v : (is_int($v) ? (string) $v : null);
    }

    /** Integers and dates (milliseconds since 1970): a fractional number is truncated, as every binding does. */
    public static function int(mixed $v): ?int
    {
        if (is_int($v)) {
            return $v;
        }
        if (is_float($v) && is_finite($v) && abs($v) < 9.2e18) {
            return (int) $v;
        }
        return null;
    }

    public static function bool(mixed $v): ?bool
    {
        return is_bool($v) ? $v : null;
    }

    /**
     * A known value as the enum's case, an unknown one kept raw (the enum's backing type).
     *
     * @param class-string<\BackedEnum> $cls
     */
    public static function enum(mixed $v, string $cls): \BackedEnum|string|int|null
    {
        $string = self::$stringBacked[$cls] ??= (string) (new \ReflectionEnum($cls))->getBackingType() === 'string';
        if ($string) {
            if (is_int($v)) {
                $v = (string) $v;
            }
            return is_string($v) ? ($cls::tryFrom($v) ?? $v) : null;
        }
        if (is_float($v) && floor($v) === $v && abs($v) < 9.2e18) {
            $v = (int) $v;
        }
        return is_int($v) ? ($cls::tryFrom($v) ?? $v) : null;
    }

    /** @param class-string $cls */
    public static function model(mixed $v, string $cls): ?object
    {
        return is_array($v) ? $cls::fromArray($v) : null;
    }

    public static function strList(mixed $v): ?array
    {
        return is_array($v) ? array_map(self::str(...), $v) : null;
    }

    public static function intList(mixed $v): ?array
    {
        return is_array($v) ? array_map(self::int(...), $v) : null;
    }

    public static function boolList(mixed $v): ?array
    {
        return is_array($v) ? array_map(self::bool(...), $v) : null;
    }

    /** @param class-string<\BackedEnum> $cls */
    public static function enumList(mixed $v, string $cls): ?array
    {
        return is_array($v) ? array_map(static fn ($x) => self::enum($x, $cls), $v) : null;
    }

    /** @param class-string $cls */
    public static function modelList(mixed $v, string $cls): ?array
    {
        return is_array($v) ? array_map(static fn ($x) => self::model($x, $cls), $v) : null;
    }

    /** A property value as toArray() gives it: enums as their raw values, models as arrays, lists element by element. */
    public static function out(mixed $v): mixed
    {
        if ($v instanceof \BackedEnum) {
            return $v->value;
        }
        if (is_object($v) && method_exists($v, 'toArray')) {
            return $v->toArray();
        }
        if (is_array($v)) {
            return array_map(self::out(...), $v);
        }
        return $v;
    }

    /** A property value for json_encode(): as out(), but models as objects (an empty one is {} too). */
    public static function json(mixed $v): mixed
    {
        if ($v instanceof \BackedEnum) {
            return $v->value;
        }
        if ($v instanceof \JsonSerializable) {
            return $v->jsonSerialize();
        }
        if (is_array($v)) {
            return array_map(self::json(...), $v);
        }
        return $v;
    }
}
