<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

use AppStoreServer\Model\Environment;
use AppStoreServer\SignedDataVerifier;
use AppStoreServer\VerificationException;
use PHPUnit\Framework\TestCase;

/**
 * Apple's verifyNotification extension point: a subclass's override decides on the app a notification names; the
 * default is the library's check.
 */
final class VerifyNotificationTest extends TestCase
{
    /** A LocalTesting notification (signatures are not checked there) naming another app: com.other, 99. */
    private static function otherAppNotification(): string
    {
        $b64 = static fn (string $s): string => rtrim(strtr(base64_encode($s), '+/', '-_'), '=');
        $payload = '{"notificationType":"TEST","notificationUUID":"3f2f3b2c-4a5b-4c6d-8e9f-0a1b2c3d4e5f","version":"2.0",'
            . '"signedDate":1700000000000,"data":{"bundleId":"com.other","appAppleId":99,"environment":"LocalTesting"}}';
        return $b64('{"alg":"ES256"}') . '.' . $b64($payload) . '.c2ln';
    }

    public function testTheDefaultRefusesAnotherApp(): void
    {
        $v = new SignedDataVerifier([], false, Environment::LOCAL_TESTING, 'com.example.testpki');
        try {
            $v->verifyAndDecodeNotification(self::otherAppNotification());
            $this->fail('another app was accepted');
        } catch (VerificationException $e) {
            $this->assertStringContainsString('com.other', $e->getMessage());
        }
    }

    public function testAnOverrideDecides(): void
    {
        $v = new class ([], false, Environment::LOCAL_TESTING, 'com.example.testpki') extends SignedDataVerifier {
            /** @var list<mixed> */
            public array $seen = [];

            protected function verifyNotification(?string $bundleId, ?int $appAppleId, Environment|string|null $environment): void
            {
                $this->seen = [$bundleId, $appAppleId, $environment];
                if ($bundleId !== 'com.other') {
                    parent::verifyNotification($bundleId, $appAppleId, $environment);
                }
            }
        };
        $n = $v->verifyAndDecodeNotification(self::otherAppNotification());
        $this->assertSame(\AppStoreServer\Model\NotificationTypeV2::TEST, $n->notificationType);
        $this->assertSame(['com.other', 99, Environment::LOCAL_TESTING], $v->seen);
    }
}
