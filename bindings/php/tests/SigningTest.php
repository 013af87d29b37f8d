<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\AdvancedCommerceAPIInAppSignatureCreator;
use AppStoreServer\FailureReason;
use AppStoreServer\IntroductoryOfferEligibilitySignatureCreator;
use AppStoreServer\Model\AdvancedCommerceOneTimeChargeCreateRequest;
use AppStoreServer\Model\AdvancedCommerceOneTimeChargeItem;
use AppStoreServer\Model\AdvancedCommerceRequestInfo;
use AppStoreServer\PromotionalOfferSignatureCreator;
use AppStoreServer\PromotionalOfferV2SignatureCreator;
use AppStoreServer\SigningException;
use PHPUnit\Framework\TestCase;

/**
 * The signature creators, each signature checked by Tests/support/check_signatures.py (Python cryptography and
 * joserfc, never this library): promotional offers v1 and v2, introductory-offer eligibility, Advanced Commerce.
 */
final class SigningTest extends TestCase
{
    private const KID = 'ABC123DEFG';
    private const ISS = '57246542-96fe-1a63-e053-0824d011072a';
    private const BID = 'com.example.app';

    private static function key(string $name = 'p256.p8'): string
    {
        return (string) file_get_contents(Support::keys() . "/$name");
    }

    public function testEverySignatureVerifiesIndependently(): void
    {
        $items = [];
        $nonce = 'A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D';
        $v1 = new PromotionalOfferSignatureCreator(self::key(), self::KID, self::BID);
        $items[] = ['kind' => 'promo_v1', 'value' => $v1->createSignature('com.example.p', 'offer1', 'User-Token', $nonce, 1698148800000),
            'expect' => ['bundleId' => self::BID, 'keyId' => self::KID, 'productId' => 'com.example.p', 'offerId' => 'offer1',
                'appAccountToken' => 'User-Token', 'nonce' => $nonce, 'timestamp' => 1698148800000]];
        $ids = ['kid' => self::KID, 'iss' => self::ISS, 'bid' => self::BID];
        $v2 = new PromotionalOfferV2SignatureCreator(self::key(), self::KID, self::ISS, self::BID);
        $items[] = ['kind' => 'promo_v2', 'value' => $v2->createSignature('com.example.p', 'offer2', '2000000000000001'),
            'expect' => $ids + ['productId' => 'com.example.p', 'offerIdentifier' => 'offer2', 'transactionId' => '2000000000000001']];
        $items[] = ['kind' => 'promo_v2', 'value' => $v2->createSignature('com.example.p', 'offer2'),
            'expect' => $ids + ['productId' => 'com.example.p', 'offerIdentifier' => 'offer2']];
        $intro = new IntroductoryOfferEligibilitySignatureCreator(self::key(), self::KID, self::ISS, self::BID);
        $items[] = ['kind' => 'intro_eligibility', 'value' => $intro->createSignature('com.example.p', false, '2000000000000002'),
            'expect' => $ids + ['productId' => 'com.example.p', 'allowIntroductoryOffer' => false, 'transactionId' => '2000000000000002']];
        $ac = new AdvancedCommerceAPIInAppSignatureCreator(self::key(), self::KID, self::ISS, self::BID);
        $request = new AdvancedCommerceOneTimeChargeCreateRequest(
            currency: 'USD',
            taxCode: 'C003-00-2',
            item: new AdvancedCommerceOneTimeChargeItem(SKU: 'sku-1', description: 'A thing', displayName: 'Thing', price: 4990),
            requestInfo: new AdvancedCommerceRequestInfo(requestReferenceId: 'b7f4a5f2-9c1e-4d7a-8d2e-3f1a2b3c4d5e'),
        );
        $items[] = ['kind' => 'advanced_commerce', 'value' => $ac->createSignature($request),
            'expect' => $ids + ['request' => ['operation' => 'CREATE_ONE_TIME_CHARGE', 'version' => '1', 'currency' => 'USD', 'taxCode' => 'C003-00-2',
                'item' => ['SKU' => 'sku-1', 'description' => 'A thing', 'displayName' => 'Thing', 'price' => 4990],
                'requestInfo' => ['requestReferenceId' => 'b7f4a5f2-9c1e-4d7a-8d2e-3f1a2b3c4d5e']]]];
        // The createNonce() hook (Apple's Java extension point): what a subclass returns is signed, lowercase.
        $fixed = '0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10';
        $v2n = new class (self::key(), self::KID, self::ISS, self::BID) extends PromotionalOfferV2SignatureCreator {
            protected function createNonce(): ?string
            {
                return '0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10';
            }
        };
        $items[] = ['kind' => 'promo_v2', 'value' => $v2n->createSignature('p', 'o'),
            'expect' => $ids + ['productId' => 'p', 'offerIdentifier' => 'o', 'nonce' => strtolower($fixed)]];
        $introN = new class (self::key(), self::KID, self::ISS, self::BID) extends IntroductoryOfferEligibilitySignatureCreator {
            protected function createNonce(): ?string
            {
                return '0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10';
            }
        };
        $items[] = ['kind' => 'intro_eligibility', 'value' => $introN->createSignature('p', true, '1'),
            'expect' => $ids + ['productId' => 'p', 'allowIntroductoryOffer' => true, 'transactionId' => '1', 'nonce' => strtolower($fixed)]];
        $acN = new class (self::key(), self::KID, self::ISS, self::BID) extends AdvancedCommerceAPIInAppSignatureCreator {
            protected function createNonce(): ?string
            {
                return '0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10';
            }
        };
        $items[] = ['kind' => 'advanced_commerce', 'value' => $acN->createSignature($request),
            'expect' => ['nonce' => strtolower($fixed)] + $items[4]['expect']];
        $file = tempnam(sys_get_temp_dir(), 'sigs');
        file_put_contents($file, json_encode(['public_key' => Support::keys() . '/p256_public.pem', 'items' => $items]));
        exec('python3 ' . escapeshellarg(Support::repo() . '/Tests/support/check_signatures.py') . ' check ' . escapeshellarg($file) . ' 2>&1', $out, $rc);
        unlink($file);
        $this->assertSame(0, $rc, implode("\n", $out));
        $this->assertContains('signatures: 8 passed, 0 failed', $out);
    }

    public function testACreateNonceThatIsNoUuidIsRefused(): void
    {
        $bad = new class (self::key(), self::KID, self::ISS, self::BID) extends PromotionalOfferV2SignatureCreator {
            protected function createNonce(): ?string
            {
                return 'not-a-uuid';
            }
        };
        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('nonce must be a UUID');
        $bad->createSignature('p', 'o');
    }

    public static function badKeys(): iterable
    {
        yield 'not PEM' => ['not_pem.txt', FailureReason::KEY_NOT_PEM];
        yield 'encrypted' => ['encrypted.p8', FailureReason::KEY_ENCRYPTED];
        yield 'truncated' => ['truncated.p8', FailureReason::KEY_MALFORMED];
        yield 'RSA' => ['rsa.p8', FailureReason::KEY_NOT_EC];
        yield 'P-384' => ['p384.p8', FailureReason::KEY_WRONG_CURVE];
    }

    /** @dataProvider badKeys */
    public function testUnusableKeysAreSigningExceptions(string $file, FailureReason $reason): void
    {
        try {
            new PromotionalOfferV2SignatureCreator(self::key($file), self::KID, self::ISS, self::BID);
            $this->fail('no exception');
        } catch (SigningException $e) {
            $this->assertSame($reason, $e->reason, $e->getMessage());
        }
    }

    public function testARequestBeyondApplesLimitsNamesTheField(): void
    {
        $ac = new AdvancedCommerceAPIInAppSignatureCreator(self::key(), self::KID, self::ISS, self::BID);
        try {
            $ac->createSignature(['operation' => 'CREATE_ONE_TIME_CHARGE', 'currency' => 'USD', 'taxCode' => 'C003-00-2', 'descripton' => 'typo',
                'item' => ['SKU' => 's', 'description' => 'd', 'displayName' => 'n', 'price' => 1],
                'requestInfo' => ['requestReferenceId' => 'b7f4a5f2-9c1e-4d7a-8d2e-3f1a2b3c4d5e']]);
            $this->fail('no exception');
        } catch (\InvalidArgumentException $e) {
            $this->assertStringContainsString('descripton', $e->getMessage());
        }
    }

    public function testANulInATextArgumentIsRefused(): void
    {
        $v2 = new PromotionalOfferV2SignatureCreator(self::key(), self::KID, self::ISS, self::BID);
        $this->expectException(\InvalidArgumentException::class);
        $v2->createSignature("com.example\0p", 'o');
    }

    /** A PHP signer over PHP's openssl, the way a KMS client would be plugged in. */
    private static function opensslSigner(string $p8): \Closure
    {
        $key = openssl_pkey_get_private($p8);
        return static function (string $message, string $digest) use ($key): string {
            if (hash('sha256', $message, true) !== $digest) {
                throw new \LogicException('the digest is not SHA-256 of the message');
            }
            openssl_sign($message, $der, $key, OPENSSL_ALGO_SHA256);
            return $der;
        };
    }

    public function testAnExternalKeySignsEverything(): void
    {
        $ext = new \AppStoreServer\ExternalKey(self::opensslSigner(self::key()), self::key('p256_public.pem'));
        $ids = ['kid' => self::KID, 'iss' => self::ISS, 'bid' => self::BID];
        $v2 = new PromotionalOfferV2SignatureCreator($ext, self::KID, self::ISS, self::BID);
        $intro = new IntroductoryOfferEligibilitySignatureCreator($ext, self::KID, self::ISS, self::BID);
        $items = [
            ['kind' => 'promo_v2', 'value' => $v2->createSignature('p', 'o', '7'), 'expect' => $ids + ['productId' => 'p', 'offerIdentifier' => 'o', 'transactionId' => '7']],
            ['kind' => 'intro_eligibility', 'value' => $intro->createSignature('p', true, '8'), 'expect' => $ids + ['productId' => 'p', 'allowIntroductoryOffer' => true, 'transactionId' => '8']],
        ];
        $file = tempnam(sys_get_temp_dir(), 'sigs');
        file_put_contents($file, json_encode(['public_key' => Support::keys() . '/p256_public.pem', 'items' => $items]));
        exec('python3 ' . escapeshellarg(Support::repo() . '/Tests/support/check_signatures.py') . ' check ' . escapeshellarg($file) . ' 2>&1', $out, $rc);
        unlink($file);
        $this->assertSame(0, $rc, implode("\n", $out));
    }

    public function testAnExternalSignerThatFailsIsASigningException(): void
    {
        $signers = [
            'throws' => static fn (string $m, string $d): string => throw new \RuntimeException('KMS unavailable'),
            'another key' => self::opensslSigner(self::key('other_p256.p8')),
            'garbage' => static fn (string $m, string $d): string => random_bytes(64),
        ];
        foreach ($signers as $what => $signer) {
            $v2 = new PromotionalOfferV2SignatureCreator(new \AppStoreServer\ExternalKey($signer, self::key('p256_public.pem')), self::KID, self::ISS, self::BID);
            try {
                $v2->createSignature('p', 'o');
                $this->fail("$what: signed");
            } catch (SigningException $e) {
                $this->assertSame(FailureReason::SIGNER_FAILED, $e->reason, "$what: {$e->getMessage()}");
            }
        }
    }
}
