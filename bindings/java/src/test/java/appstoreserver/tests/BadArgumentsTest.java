package appstoreserver.tests;

import appstoreserver.FailureReason;
import appstoreserver.migration.ReceiptUtility;
import appstoreserver.migration.ReceiptVerifier;
import appstoreserver.model.Environment;
import appstoreserver.offers.PromotionalOfferSignatureCreator;
import appstoreserver.offers.PromotionalOfferV2SignatureCreator;
import appstoreserver.signature.SigningKey;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Wrong arguments are the usual Java exceptions with a message naming the parameter, never a JVM crash: null is a
 * NullPointerException, an empty, NUL-bearing, huge or wrongly typed value (through a raw collection) an
 * IllegalArgumentException, signed data that is not a JWS a VerificationException.
 */
class BadArgumentsTest {
    static void npe(String contains, Executable e) {
        NullPointerException x = assertThrows(NullPointerException.class, e);
        assertTrue(x.getMessage() != null && x.getMessage().contains(contains), "message: " + x.getMessage());
    }

    static void iae(String contains, Executable e) {
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, e);
        assertTrue(x.getMessage() != null && x.getMessage().contains(contains), "message: " + x.getMessage());
    }

    static FailureReason verificationReason(Executable e) {
        return assertThrows(VerificationException.class, e).getReason();
    }

    @Test
    @SuppressWarnings({"rawtypes", "unchecked"})
    void verifierConstructor() {
        npe("rootCertificates must not be null", () -> new SignedDataVerifier(null, "b", null, Environment.SANDBOX, false));
        Set<InputStream> withNull = new HashSet<>();
        withNull.add(null);
        npe("rootCertificates must not contain null", () -> new SignedDataVerifier(withNull, "b", null, Environment.SANDBOX, false));
        Set raw = new HashSet();
        raw.add("not a stream");
        iae("rootCertificates must hold InputStreams, got java.lang.String",
                () -> new SignedDataVerifier(raw, "b", null, Environment.SANDBOX, false));
        npe("bundleId must not be null", () -> new SignedDataVerifier(Fixtures.roots(), null, null, Environment.SANDBOX, false));
        iae("bundleId must not contain a NUL character",
                () -> new SignedDataVerifier(Fixtures.roots(), "a\0b", null, Environment.SANDBOX, false));
        npe("environment must not be null", () -> new SignedDataVerifier(Fixtures.roots(), "b", null, null, false));
        iae("appAppleId is required when the environment is Production",
                () -> new SignedDataVerifier(Fixtures.roots(), "b", null, Environment.PRODUCTION, false));
        iae("At least one root certificate is required",
                () -> new SignedDataVerifier(Set.of(), "b", null, Environment.SANDBOX, false));
        iae("rootCertificates", () -> new SignedDataVerifier(Set.of(new ByteArrayInputStream(new byte[] {1, 2, 3})), "b",
                null, Environment.SANDBOX, false));
        iae("rootCertificates", () -> new SignedDataVerifier(Set.of(new ByteArrayInputStream(new byte[0])), "b",
                null, Environment.SANDBOX, false));
        iae("maxEntries", () -> new SignedDataVerifier.Options().chainCache(-1, Duration.ZERO));
        iae("timeout", () -> new SignedDataVerifier.Options().onlineTimeout(Duration.ZERO));
        iae("maxBytes", () -> new SignedDataVerifier.Options().maxJwsBytes(0));
        // Xcode and LocalTesting check no signatures and need no roots.
        new SignedDataVerifier(Set.of(), "b", null, Environment.XCODE, false).close();
    }

    @Test
    void verifyCalls() {
        try (SignedDataVerifier v = Fixtures.verifier()) {
            npe("signedTransaction must not be null", () -> v.verifyAndDecodeTransaction(null));
            npe("signedPayload must not be null", () -> v.verifyAndDecodeNotification(null));
            npe("signedRenewalInfo must not be null", () -> v.verifyAndDecodeRenewalInfo(null));
            npe("signedAppTransaction must not be null", () -> v.verifyAndDecodeAppTransaction(null));
            npe("signedPayload must not be null", () -> v.verifyAndDecodeRealtimeRequest(null));
            npe("signedPayload must not be null", () -> v.verifyAndDecodeNotificationDeep(null));
            npe("kind must not be null", () -> v.verifyAndDecodeToJson(null, "x"));
            assertEquals(FailureReason.MALFORMED, verificationReason(() -> v.verifyAndDecodeTransaction("")));
            assertEquals(FailureReason.MALFORMED, verificationReason(() -> v.verifyAndDecodeTransaction("a\0.b.c")));
            assertEquals(FailureReason.MALFORMED, verificationReason(() -> v.verifyAndDecodeTransaction("\uD800.x.y")));
            assertEquals(FailureReason.INPUT_TOO_LARGE,
                    verificationReason(() -> v.verifyAndDecodeTransaction("a".repeat(2 << 20))));
            String big = "eyJ" + "A".repeat(900_000) + ".e30.AAAA";
            FailureReason r = verificationReason(() -> v.verifyAndDecodeTransaction(big));
            assertTrue(r == FailureReason.MALFORMED || r == FailureReason.BAD_SIGNATURE || r == FailureReason.MISSING_X5C, r.name());
        }
        try (SignedDataVerifier small = new SignedDataVerifier(Fixtures.roots(), Fixtures.BUNDLE, null, Environment.SANDBOX,
                false, new SignedDataVerifier.Options().maxJwsBytes(100))) {
            assertEquals(FailureReason.INPUT_TOO_LARGE,
                    verificationReason(() -> small.verifyAndDecodeTransaction(Fixtures.jws("tx-valid"))));
        }
    }

    @Test
    void signing() {
        String p8 = SigningTest.p8();
        npe("signingKey must not be null", () -> new SigningKey(null, "k", "i", "b"));
        npe("keyId must not be null", () -> new SigningKey(p8, null, "i", "b"));
        npe("bundleId must not be null", () -> new SigningKey(p8, "k", "i", null));
        iae("keyId must not contain a NUL character", () -> new SigningKey(p8, "k\0", "i", "b"));
        iae("", () -> new SigningKey("x".repeat(2 << 20), "k", "i", "b")); // over the library's 1 MiB: before any read
        npe("issuerId must not be null", () -> new PromotionalOfferV2SignatureCreator(p8, "k", null, "b"));
        npe("signingKey must not be null", () -> new PromotionalOfferV2SignatureCreator((SigningKey) null));
        npe("signer must not be null", () -> SigningKey.withSigner(null, new byte[0], "k", "i", "b"));
        npe("publicKey must not be null", () -> SigningKey.withSigner((m, d) -> null, null, "k", "i", "b"));
        iae("timeout", () -> SigningKey.withSigner((m, d) -> null, new byte[1], "k", "i", "b", Duration.ZERO));
        try (PromotionalOfferSignatureCreator c = new PromotionalOfferSignatureCreator(p8, "k", "b")) {
            npe("nonce must not be null", () -> c.createSignature("p", "o", "", null, 1));
            npe("productIdentifier must not be null", () -> c.createSignature(null, "o", "", UUID.randomUUID(), 1));
            iae("timestamp", () -> c.createSignature("p", "o", "", UUID.randomUUID(), 0));
            iae("NUL", () -> c.createSignature("p\0", "o", "", UUID.randomUUID(), 1));
        }
    }

    @Test
    @SuppressWarnings({"rawtypes", "unchecked"})
    void receipts() throws Exception {
        ReceiptUtility u = new ReceiptUtility();
        npe("appReceipt must not be null", () -> u.extractTransactionIdFromAppReceipt(null));
        npe("transactionReceipt must not be null", () -> u.extractTransactionIdFromTransactionReceipt(null));
        assertThrows(IllegalArgumentException.class, () -> u.extractTransactionIdFromAppReceipt(""));
        assertThrows(IllegalArgumentException.class, () -> u.extractTransactionIdFromAppReceipt("not base64 !!!"));
        assertThrows(IllegalArgumentException.class, () -> u.extractTransactionIdFromAppReceipt("QUFB".repeat(5 << 20)));
        assertThrows(IllegalArgumentException.class, () -> u.extractTransactionIdsFromAppReceipt("%%%"));
        Set raw = new HashSet();
        raw.add(new byte[] {1});
        iae("rootCertificates must hold InputStreams, got [B", () -> new ReceiptVerifier(raw, null));
        iae("", () -> new ReceiptVerifier(Set.of(), null));
        iae("", () -> new ReceiptVerifier(Set.of(new ByteArrayInputStream(new byte[] {1})), null));
    }
}
