<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\Model\Environment;
use AppStoreServer\Model\JWSTransactionDecodedPayload;
use AppStoreServer\Model\NotificationTypeV2;
use AppStoreServer\Model\Order;
use AppStoreServer\Model\ResponseBodyV2DecodedPayload;
use AppStoreServer\Model\TransactionHistoryRequest;
use AppStoreServer\Model\Type;
use AppStoreServer\SignedDataVerifier;
use PHPUnit\Framework\TestCase;

/** The generated models: Apple's JSON keys, enums with raw values kept, truncated dates, round trips. */
final class ModelsTest extends TestCase
{
    private static function verifier(): SignedDataVerifier
    {
        return new SignedDataVerifier([(string) file_get_contents(Support::testpki() . '/root.der')], false,
            Environment::SANDBOX, 'com.example.testpki');
    }

    private static function jws(string $name): string
    {
        return trim((string) file_get_contents(Support::testpki() . "/jws/$name.jws"));
    }

    public function testUnknownEnumValuesAreKeptRaw(): void
    {
        $t = self::verifier()->verifyAndDecodeTransaction(self::jws('tx-valid'));
        $this->assertSame('SOMETHING_NEW', $t->offerDiscountType); // a value this version does not know: raw
        $this->assertSame(Type::AUTO_RENEWABLE_SUBSCRIPTION, $t->type);
        $this->assertSame(Environment::SANDBOX, $t->environment);
        $this->assertSame(9990, $t->price);
        $this->assertSame(['type' => 'Auto-Renewable Subscription', 'offerDiscountType' => 'SOMETHING_NEW'],
            array_intersect_key($t->toArray(), ['offerDiscountType' => 1, 'type' => 1]));
        $u = new JWSTransactionDecodedPayload(type: 'Future Type');
        $this->assertSame(['type' => 'Future Type'], $u->toArray());
    }

    public function testFractionalDatesTruncate(): void
    {
        $t = self::verifier()->verifyAndDecodeTransaction(self::jws('tx-valid-fractional-negative-dates'));
        $this->assertSame(1697679936049, $t->purchaseDate);
        $this->assertSame(-62135769600000, $t->originalPurchaseDate);
    }

    public function testRoundTrips(): void
    {
        $v = self::verifier();
        $n = $v->verifyAndDecodeNotification(self::jws('notif-valid-did-renew'));
        $raw = $v->verifyAndDecodeJson('notification', self::jws('notif-valid-did-renew'));
        $this->assertSame(NotificationTypeV2::DID_RENEW, $n->notificationType);
        $this->assertSame('com.example.testpki', $n->data->bundleId);
        $known = array_intersect_key($raw, array_flip(ResponseBodyV2DecodedPayload::KEYS));
        $this->assertEquals($known, json_decode(json_encode($n), true));
        $this->assertEquals($n, ResponseBodyV2DecodedPayload::fromArray($n->toArray()));
    }

    public function testPropertiesAreReadonly(): void
    {
        $t = new JWSTransactionDecodedPayload(transactionId: '1');
        $this->expectException(\Error::class);
        $t->transactionId = '2';
    }

    public function testRequestModelsTakeNamedArguments(): void
    {
        $r = new TransactionHistoryRequest(sort: Order::DESCENDING, revoked: false, productIds: ['a', 'b']);
        $this->assertSame(['productIds' => ['a', 'b'], 'sort' => 'DESCENDING', 'revoked' => false], $r->toArray());
        $this->assertSame('{}', json_encode(new TransactionHistoryRequest()));
    }

    public function testEveryModelOfTheSpecIsAClassWithItsKeys(): void
    {
        $classNames = Support::json(Support::repo() . '/spec/apple.json')['python']['classNames'];
        foreach (Support::json(Support::repo() . '/spec/models.json')['models'] as $name => $m) {
            $cls = 'AppStoreServer\\Model\\' . ($classNames[$name] ?? $name);
            $this->assertTrue(class_exists($cls), $cls);
            $this->assertSame(array_map(static fn ($f) => $f['key'] ?? $f['name'], $m['fields']), $cls::KEYS, $cls);
        }
    }

    /** A JWS signed with the own PKI's leaf key by PHP's openssl (not by this library). */
    private static function resign(string $headerSegment, array $claims): string
    {
        $b64 = static fn (string $s) => rtrim(strtr(base64_encode($s), '+/', '-_'), '=');
        $input = $headerSegment . '.' . $b64(json_encode($claims, JSON_UNESCAPED_SLASHES));
        $key = openssl_pkey_get_private((string) file_get_contents(Support::testpki() . '/leaf_key.pem'));
        openssl_sign($input, $der, $key, OPENSSL_ALGO_SHA256);
        // DER SEQUENCE { INTEGER r, INTEGER s } -> r || s, 32 bytes each
        $at = 2;
        $raw = '';
        for ($k = 0; $k < 2; $k++) {
            $len = ord($der[$at + 1]);
            $raw .= str_pad(ltrim(substr($der, $at + 2, $len), "\0"), 32, "\0", STR_PAD_LEFT);
            $at += 2 + $len;
        }
        return $input . '.' . $b64($raw);
    }

    public function testDeepNotification(): void
    {
        $v = self::verifier();
        $text = self::jws('notif-valid-did-renew');
        $deep = $v->verifyAndDecodeNotificationDeep($text);
        $n = $v->verifyAndDecodeNotification($text);
        $this->assertEquals($n, $deep->notification);
        $this->assertEquals($v->verifyAndDecodeTransaction($n->data->signedTransactionInfo), $deep->transaction);
        $this->assertEquals($v->verifyAndDecodeRenewalInfo($n->data->signedRenewalInfo), $deep->renewalInfo);
        $this->assertNull($deep->appTransaction);
        // A nested value that does not verify fails the deep call, naming the field; the outer one alone verifies.
        $outer = ManifestRunner::signedPayload($text);
        $nested = $outer['data']['signedTransactionInfo'];
        $outer['data']['signedTransactionInfo'] = substr($nested, 0, -2) . (substr($nested, -2) !== 'AA' ? 'AA' : 'BB');
        $forged = self::resign(explode('.', $text)[0], $outer);
        $this->assertSame('com.example.testpki', $v->verifyAndDecodeNotification($forged)->data->bundleId);
        try {
            $v->verifyAndDecodeNotificationDeep($forged);
            $this->fail('accepted');
        } catch (\AppStoreServer\VerificationException $e) {
            $this->assertStringStartsWith('data.signedTransactionInfo', $e->detail);
            $this->assertSame(\AppStoreServer\FailureReason::BAD_SIGNATURE, $e->reason);
        }
    }
}
