package appstoreserver.tests;

import appstoreserver.model.Environment;
import appstoreserver.util.AppleRootCertificates;
import appstoreserver.verification.SignedDataVerifier;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Apple's roots as the library carries them, and roots given as PEM text (one or several certificates). */
class RootsTest {
    @Test
    void theBundledRootsAndApplesFingerprints() throws Exception {
        List<AppleRootCertificates.Root> all = AppleRootCertificates.all();
        assertEquals(List.of("Apple Root CA - G3", "Apple Inc. Root"), all.stream().map(AppleRootCertificates.Root::getName).toList());
        String[] published = {"63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79",
                "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24"};
        for (int i = 0; i < 2; i++) {
            assertEquals(published[i], all.get(i).getSha256Fingerprint());
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(all.get(i).getDer());
            StringBuilder hex = new StringBuilder();
            for (byte b : digest) hex.append(hex.length() == 0 ? "" : ":").append(String.format("%02X", b));
            assertEquals(published[i], hex.toString(), "recomputed by java.security");
        }
    }

    private static String pem(byte[] der, String newline) {
        String b64 = Base64.getMimeEncoder(64, newline.getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
        return "-----BEGIN CERTIFICATE-----" + newline + b64 + newline + "-----END CERTIFICATE-----" + newline;
    }

    @Test
    void pemRootsAloneAndInABundleVerifyLikeDer() throws Exception {
        byte[] der = Support.bytes(Support.testpki().resolve("root.der"));
        byte[] g3 = AppleRootCertificates.all().get(0).getDer();
        for (String root : List.of(pem(der, "\n"), pem(der, "\r\n"), pem(g3, "\n") + pem(der, "\n"))) {
            try (SignedDataVerifier v = new SignedDataVerifier(Set.of(new ByteArrayInputStream(root.getBytes(StandardCharsets.US_ASCII))),
                    Fixtures.BUNDLE, null, Environment.SANDBOX, false)) {
                assertNotNull(v.verifyAndDecodeTransaction(Fixtures.jws("tx-valid")).getTransactionId());
            }
        }
    }

    @Test
    void aRealNotificationWithTheBundledRootAlone() throws Exception {
        if (!Support.conformancePresent()) {
            System.out.println("SKIPPED: ../shared/conformance is absent: no real notification verified with the bundled root");
            return;
        }
        try (SignedDataVerifier v = new SignedDataVerifier(AppleRootCertificates.forSignedData(), "com.Abilities", null,
                Environment.SANDBOX, false)) {
            String jws = Support.text(Support.CONFORMANCE.resolve("real/jws/sandbox-notification-test-2022-09-02.jws"));
            assertNotNull(v.verifyAndDecodeNotification(jws).getNotificationUUID());
        }
    }

    @Test
    void badRootsAreRefusedSayingWhy() {
        Exception e = assertThrows(Exception.class, () -> new SignedDataVerifier(
                Set.of(new ByteArrayInputStream("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n".getBytes(StandardCharsets.US_ASCII))),
                Fixtures.BUNDLE, null, Environment.SANDBOX, false).verifyAndDecodeTransaction(Fixtures.jws("tx-valid")));
        assertTrue(String.valueOf(e.getMessage()).contains("root certificate 0"), e.toString());
    }
}
