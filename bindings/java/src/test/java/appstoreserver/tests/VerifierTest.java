package appstoreserver.tests;

import appstoreserver.model.Environment;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.NotificationTypeV2;
import appstoreserver.model.VerifiedNotification;
import appstoreserver.verification.SignedDataVerifier;
import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

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
}
