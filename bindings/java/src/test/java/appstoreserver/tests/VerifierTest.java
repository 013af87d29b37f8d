package appstoreserver.tests;

import appstoreserver.model.Environment;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.NotificationTypeV2;
import appstoreserver.model.VerifiedNotification;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import appstoreserver.verification.VerificationStatus;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Beyond Apple: deep notifications, the JSON as signed, the chain cache; Apple's LocalTesting environment. */
class VerifierTest {
    @Test
    void deepNotification() throws Exception {
        try (SignedDataVerifier v = Fixtures.verifier()) {
            VerifiedNotification n = v.verifyAndDecodeNotificationDeep(Fixtures.jws("notif-valid-did-renew"));
            assertEquals(NotificationTypeV2.DID_RENEW, n.getNotification().getNotificationType());
            assertNotNull(n.getTransaction(), "the nested transaction, verified");
            assertNotNull(n.getRenewalInfo(), "the nested renewal info, verified");
            assertEquals(n.getNotification().getData().getBundleId(), n.getTransaction().getBundleId());
        }
    }

    @Test
    void jsonAsSignedAndTheCache() throws Exception {
        String jws = Fixtures.jws("tx-valid");
        try (SignedDataVerifier v = Fixtures.verifier()) {
            assertEquals(ManifestRunner.payload(jws), v.verifyAndDecodeToJson(SignedDataVerifier.Kind.TRANSACTION, jws));
            v.verifyAndDecodeTransaction(jws);
            assertArrayEquals(new long[] {1, 1, 1}, v.cacheStats(), "one miss, then one hit, one chain cached");
        }
    }

    @Test
    void localTestingNeedsNoSignature() throws Exception {
        try (SignedDataVerifier v = new SignedDataVerifier(Set.of(), Fixtures.BUNDLE, null, Environment.LOCAL_TESTING,
                false)) {
            JWSTransactionDecodedPayload t = v.verifyAndDecodeTransaction(Fixtures.jws("localtesting-tx-valid-no-x5c"));
            assertEquals("2000000912345678", t.getTransactionId());
            assertEquals(Environment.LOCAL_TESTING, v.getEnvironment());
        }
    }

    /** A LocalTesting notification (signatures are not checked there) naming another app: com.other, 99. */
    static String otherAppNotification() {
        Base64.Encoder b = Base64.getUrlEncoder().withoutPadding();
        String payload = "{\"notificationType\":\"TEST\",\"notificationUUID\":\"3f2f3b2c-4a5b-4c6d-8e9f-0a1b2c3d4e5f\","
                + "\"version\":\"2.0\",\"signedDate\":1700000000000,\"data\":{\"bundleId\":\"com.other\",\"appAppleId\":99,"
                + "\"environment\":\"LocalTesting\"}}";
        return b.encodeToString("{\"alg\":\"ES256\"}".getBytes(StandardCharsets.UTF_8)) + "."
                + b.encodeToString(payload.getBytes(StandardCharsets.UTF_8)) + ".c2ln";
    }

    /** Apple's verifyNotification extension point: an override sees the app the notification names and decides. */
    @Test
    void verifyNotificationOverride() throws Exception {
        String jws = otherAppNotification();
        try (SignedDataVerifier plain = new SignedDataVerifier(Set.of(), Fixtures.BUNDLE, null, Environment.LOCAL_TESTING,
                false)) {
            VerificationException e = assertThrows(VerificationException.class, () -> plain.verifyAndDecodeNotification(jws));
            assertEquals(VerificationStatus.INVALID_APP_IDENTIFIER, e.getStatus());
        }
        List<Object> seen = new ArrayList<>();
        try (SignedDataVerifier multiApp = new SignedDataVerifier(Set.of(), Fixtures.BUNDLE, null,
                Environment.LOCAL_TESTING, false) {
            @Override
            protected void verifyNotification(String bundleId, Long appAppleId, Environment env) throws VerificationException {
                seen.add(bundleId);
                seen.add(appAppleId);
                seen.add(env);
                if (!bundleId.equals("com.other")) {
                    super.verifyNotification(bundleId, appAppleId, env);
                }
            }
        }) {
            assertEquals(NotificationTypeV2.TEST, multiApp.verifyAndDecodeNotification(jws).getNotificationType());
            assertEquals(List.of("com.other", 99L, Environment.LOCAL_TESTING), seen);
        }
        // An override that defers to the default: the library's check, as without an override.
        try (SignedDataVerifier deferring = new SignedDataVerifier(Set.of(), Fixtures.BUNDLE, null,
                Environment.LOCAL_TESTING, false) {
            @Override
            protected void verifyNotification(String bundleId, Long appAppleId, Environment env) throws VerificationException {
                super.verifyNotification(bundleId, appAppleId, env);
            }
        }) {
            VerificationException e = assertThrows(VerificationException.class, () -> deferring.verifyAndDecodeNotification(jws));
            assertEquals(VerificationStatus.INVALID_APP_IDENTIFIER, e.getStatus());
            assertTrue(e.getMessage().contains("com.other"), e.getMessage());
        }
    }
}
