<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\AppStoreStatus;
use AppStoreServer\FailureReason;
use AppStoreServer\Model\AppTransaction;
use AppStoreServer\Model\DecodedRealtimeRequestBody;
use AppStoreServer\Model\Environment;
use AppStoreServer\Model\JWSRenewalInfoDecodedPayload;
use AppStoreServer\Model\JWSTransactionDecodedPayload;
use AppStoreServer\Model\ResponseBodyV2DecodedPayload;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;
use AppStoreServer\VerificationStatus;
use PHPUnit\Framework\Assert as A;

/**
 * Runs one verifyAndDecode* case of a manifest (../shared/conformance or Tests/support/testpki.py) through the PHP
 * API and checks it as Tests/capi/conformance.c and the Python runner (bindings/python/tests/manifest_runner.py) do:
 *
 *   result "implementation-defined"  the call returns or throws VerificationException (nothing else)
 *   result "valid"                   a model of the operation's class; the JSON is the signed payload segment,
 *                                    decoded, exactly; every scalar of "fields" matches (numbers truncated, null =
 *                                    absent or null), in the JSON and in the model's toArray()
 *   result "config_error"            the verifier cannot be built (see checkConfig)
 *   result "error..."                VerificationException with "reason" / "status" / "apple_status" / "error_class"
 *
 * PHP has no Apple library of its own, so there is no Apple PHP status to compare with: ->status is the core's status
 * in Apple's vocabulary (VerificationStatus::fromStatus), checked through "status" / "apple_status".
 */
final class ManifestRunner
{
    public const OPS = [
        'verifyAndDecodeNotification' => ['verifyAndDecodeNotification', 'notification', ResponseBodyV2DecodedPayload::class],
        'verifyAndDecodeTransaction' => ['verifyAndDecodeTransaction', 'transaction', JWSTransactionDecodedPayload::class],
        'verifyAndDecodeRenewalInfo' => ['verifyAndDecodeRenewalInfo', 'renewal_info', JWSRenewalInfoDecodedPayload::class],
        'verifyAndDecodeAppTransaction' => ['verifyAndDecodeAppTransaction', 'app_transaction', AppTransaction::class],
        'verifyAndDecodeRealtimeRequest' => ['verifyAndDecodeRealtimeRequest', 'realtime_request', DecodedRealtimeRequestBody::class],
    ];

    // The shared manifest's semantic error classes and the reasons that satisfy them (Tests/capi/conformance.c).
    private const ERROR_CLASSES = [
        'signature_invalid' => ['bad_signature'], 'unsupported_alg' => ['unsupported_alg'], 'missing_x5c' => ['missing_x5c'],
        'chain_length' => ['chain_length', 'empty_x5c'], 'invalid_certificate' => ['bad_certificate'],
        'chain_untrusted' => ['untrusted_chain'],
        'chain_invalid' => ['untrusted_chain', 'expired', 'missing_marker_oid', 'chain_length'],
        'expired' => ['expired'], 'no_trust_anchor' => ['no_trust_anchor'], 'wrong_bundle' => ['wrong_bundle'],
        'wrong_app_apple_id' => ['wrong_app_id'], 'wrong_environment' => ['wrong_environment'], 'wrong_kind' => ['wrong_kind'],
        'malformed_jws' => ['malformed'],
    ];

    public static function trimmed(string $path): string
    {
        return trim((string) file_get_contents($path));
    }

    public static function signedPayload(string $jws): ?array
    {
        $parts = explode('.', $jws);
        if (count($parts) !== 3) {
            return null;
        }
        $text = base64_decode(strtr($parts[1], '-_', '+/'), true);
        return $text === false ? null : json_decode($text, true, 512, JSON_THROW_ON_ERROR);
    }

    public static function makeVerifier(string $base, array $v): SignedDataVerifier
    {
        $roots = array_map(static fn ($r) => (string) file_get_contents("$base/$r"), $v['rootCertificates']);
        return new SignedDataVerifier($roots, (bool) ($v['enableOnlineChecks'] ?? false), Environment::from($v['environment']),
            $v['bundleId'] ?? '', $v['appAppleId'] ?? null);
    }

    private static function same(mixed $got, mixed $want): bool
    {
        if ((is_int($got) || is_float($got)) && (is_int($want) || is_float($want))) {
            return (int) $got === (int) $want;
        }
        return $got === $want;
    }

    public static function check(string $base, array $case): void
    {
        [$method, $kind, $cls] = self::OPS[$case['operation']];
        $expect = $case['expect'];
        $result = $expect['result'] ?? '';
        $jws = self::trimmed("$base/{$case['path']}");
        if ($result === 'config_error') {
            self::checkConfig($base, $case, $jws);
            return;
        }
        $verifier = self::makeVerifier($base, $case['verifier']);
        $error = null;
        $model = $raw = null;
        try {
            $model = $verifier->$method($jws);
            $raw = $verifier->verifyAndDecodeJson($kind, $jws);
        } catch (VerificationException $e) {
            $error = $e;
        }
        if ($result === 'implementation-defined') {
            A::assertTrue($error === null || $error instanceof VerificationException);
            return;
        }
        if ($result === 'valid') {
            A::assertNull($error, 'expected valid, got ' . ($error?->getMessage() ?? ''));
            A::assertInstanceOf($cls, $model);
            A::assertSame(self::signedPayload($jws), $raw, 'the JSON is not the signed payload');
            $asArray = $model->toArray();
            foreach (($expect['fields'] ?? $case['fields'] ?? []) as $k => $want) {
                $got = $raw[$k] ?? null;
                if ($want === null) {
                    A::assertNull($got, "field $k: expected null");
                    A::assertTrue(!property_exists($model, $k) || $model->$k === null, "model $k: expected null");
                    continue;
                }
                if (is_array($want)) {
                    continue;
                }
                A::assertArrayHasKey($k, $raw, "field $k: missing in output");
                A::assertTrue(self::same($got, $want), "field $k: expected " . var_export($want, true) . ', got ' . var_export($got, true));
                if (in_array($k, $cls::KEYS, true)) {
                    A::assertTrue(self::same($asArray[$k] ?? null, $want), "model field $k: expected " . var_export($want, true)
                        . ', got ' . var_export($asArray[$k] ?? null, true));
                }
            }
            return;
        }
        A::assertStringStartsWith('error', $result, "unknown expectation $result");
        A::assertNotNull($error, 'expected an error, got a valid result');
        $reason = $error->reason instanceof FailureReason ? strtolower($error->reason->name) : (string) $error->reason;
        $status = $error->appstoreStatus instanceof AppStoreStatus ? $error->appstoreStatus->name : (string) $error->appstoreStatus;
        A::assertInstanceOf(VerificationStatus::class, $error->status);
        A::assertNotSame('', $error->detail, 'empty message');
        A::assertSame("Verification failed with status {$error->status->name} (" . strtoupper($reason) . "): {$error->detail}", $error->getMessage());
        if (isset($expect['reason'])) {
            A::assertSame($expect['reason'], $reason, "reason ({$error->detail})");
        }
        if (isset($expect['status'])) {
            A::assertSame($expect['status'], $status, "status ({$error->detail})");
        }
        if (isset($expect['apple_status'])) {
            A::assertSame($expect['apple_status'], $status, "Apple's status");
        }
        if (!empty($expect['error_class'])) {
            $accepted = [];
            foreach (explode('/', $expect['error_class']) as $alt) {
                $head = explode(' ', trim($alt))[0];
                A::assertArrayHasKey($head, self::ERROR_CLASSES, "unmapped error class $alt");
                $accepted = array_merge($accepted, self::ERROR_CLASSES[$head]);
            }
            A::assertContains($reason, $accepted, "expected {$expect['error_class']}, got $status/$reason: {$error->detail}");
        }
        A::assertSame(VerificationStatus::tryFrom($error->appstoreStatus instanceof AppStoreStatus ? $error->appstoreStatus->value : -1)
            ?? VerificationStatus::VERIFICATION_FAILURE, $error->status, 'the status in Apple\'s vocabulary');
    }

    /** The three configuration failures of the testpki manifest, as the PHP API reports them. */
    private static function checkConfig(string $base, array $case, string $jws): void
    {
        $reason = $case['expect']['reason'] ?? null;
        $method = self::OPS[$case['operation']][0];
        if ($reason === 'invalid_argument') { // Production without app Apple ID: Apple's message
            try {
                self::makeVerifier($base, $case['verifier']);
            } catch (\InvalidArgumentException $e) {
                A::assertSame('appAppleId is required when the environment is Production', $e->getMessage());
                return;
            }
            A::fail('expected InvalidArgumentException for Production without appAppleId');
        }
        if ($reason === 'no_trust_anchor') { // as Apple's libraries: the verifier is made, every verification fails
            $v = self::makeVerifier($base, $case['verifier']);
            try {
                $v->$method($jws);
            } catch (VerificationException $e) {
                A::assertSame(AppStoreStatus::CONFIGURATION_ERROR, $e->appstoreStatus);
                A::assertSame(FailureReason::NO_TRUST_ANCHOR, $e->reason);
                return;
            }
            A::fail('expected VerificationException without trust anchors');
        }
        if ($reason === 'online_checks_unavailable') {
            // PHP has a default transport (curl or streams), so online checks are available; the case's leaf names
            // no OCSP responder, which the online check reports.
            $v = self::makeVerifier($base, $case['verifier']);
            try {
                $v->$method($jws);
            } catch (VerificationException $e) {
                A::assertSame(FailureReason::OCSP_NO_RESPONDER, $e->reason, $e->getMessage());
                A::assertSame(VerificationStatus::VERIFICATION_FAILURE, $e->status);
                return;
            }
            A::fail('expected the online check to fail: the leaf names no OCSP responder');
        }
        A::fail("unknown configuration case $reason");
    }
}
