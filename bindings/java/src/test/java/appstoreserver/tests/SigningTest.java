package appstoreserver.tests;

import appstoreserver.AppStoreServerException;
import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.InvalidArgumentException;
import appstoreserver.advancedcommerce.AdvancedCommerceInAppSignatureCreator;
import appstoreserver.model.AdvancedCommerceOneTimeChargeCreateRequest;
import appstoreserver.model.AdvancedCommerceOneTimeChargeItem;
import appstoreserver.model.AdvancedCommerceRequestInfo;
import appstoreserver.offers.IntroductoryOfferEligibilitySignatureCreator;
import appstoreserver.offers.PromotionalOfferSignatureCreator;
import appstoreserver.offers.PromotionalOfferV2SignatureCreator;
import appstoreserver.signature.ExternalSigner;
import appstoreserver.signature.SigningKey;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every signature the binding makes, checked independently with java.security and the key's public key (never with
 * the library): the JWS creators (header, claims, ES256 over the signing input), promotional offer v1 (DER ECDSA over
 * Apple's U+2063-joined payload), API tokens, the same through an external signer (a KMS stand-in signing with
 * java.security), and the failures: unusable keys, failing or lying signers, Apple's limits.
 */
class SigningTest {
    static String p8() {
        return Support.text(Support.keys().resolve("p256.p8"));
    }

    static PublicKey publicKey() throws Exception {
        return KeyFactory.getInstance("EC").generatePublic(new X509EncodedKeySpec(
                Support.bytes(Support.keys().resolve("p256_public.der"))));
    }

    static PrivateKey privateKey(String file) throws Exception {
        String pem = Support.text(Support.keys().resolve(file)).replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(pem)));
    }

    /** Checks the ES256 signature with java.security and returns the claims; asserts Apple's header and base claims. */
    static JsonNode verifyJws(String jws, String audience) throws Exception {
        String[] parts = jws.split("\\.");
        assertEquals(3, parts.length);
        Signature s = Signature.getInstance("SHA256withECDSAinP1363Format");
        s.initVerify(publicKey());
        s.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
        assertTrue(s.verify(Base64.getUrlDecoder().decode(parts[2])), "the ES256 signature does not verify");
        JsonNode header = Support.JSON.readTree(Base64.getUrlDecoder().decode(parts[0]));
        assertEquals("ES256", header.get("alg").asText());
        assertEquals(Support.KEY_ID, header.get("kid").asText());
        JsonNode claims = Support.JSON.readTree(Base64.getUrlDecoder().decode(parts[1]));
        assertEquals(Support.ISSUER, claims.get("iss").asText());
        assertEquals(Support.BUNDLE, claims.get("bid").asText());
        assertEquals(audience, claims.get("aud").asText());
        assertTrue(Math.abs(claims.get("iat").asLong() - System.currentTimeMillis() / 1000) < 300, "iat is not now");
        if (!audience.equals("appstoreconnect-v1")) {
            String nonce = claims.get("nonce").asText();
            assertEquals(nonce.toLowerCase(), nonce);
            UUID.fromString(nonce);
        }
        return claims;
    }

    @Test
    void promotionalOfferV2() throws Exception {
        try (PromotionalOfferV2SignatureCreator c = new PromotionalOfferV2SignatureCreator(p8(), Support.KEY_ID,
                Support.ISSUER, Support.BUNDLE)) {
            JsonNode claims = verifyJws(c.createSignature("com.example.product", "offer1", "2000000000000001"),
                    "promotional-offer");
            assertEquals("com.example.product", claims.get("productId").asText());
            assertEquals("offer1", claims.get("offerIdentifier").asText());
            assertEquals("2000000000000001", claims.get("transactionId").asText());
            assertFalse(verifyJws(c.createSignature("p", "o", null), "promotional-offer").has("transactionId"));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.createSignature(null, "o", null));
            assertEquals("productId cannot be null", e.getMessage());
        }
    }

    @Test
    void introductoryOfferEligibility() throws Exception {
        try (IntroductoryOfferEligibilitySignatureCreator c = new IntroductoryOfferEligibilitySignatureCreator(p8(),
                Support.KEY_ID, Support.ISSUER, Support.BUNDLE)) {
            JsonNode claims = verifyJws(c.createSignature("com.example.product", true, "2000000000000001"),
                    "introductory-offer-eligibility");
            assertTrue(claims.get("allowIntroductoryOffer").isBoolean());
            assertTrue(claims.get("allowIntroductoryOffer").asBoolean());
            assertEquals("2000000000000001", claims.get("transactionId").asText());
            assertFalse(verifyJws(c.createSignature("p", false, "t"), "introductory-offer-eligibility")
                    .get("allowIntroductoryOffer").asBoolean());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.createSignature("p", true, null));
            assertEquals("transactionId cannot be null", e.getMessage());
        }
    }

    /** Apple's extension point: a subclass's createNonce() is what is signed, once per signature, for all three. */
    @Test
    void createNonceOverride() throws Exception {
        UUID fixed = UUID.fromString("0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10");
        AtomicInteger asked = new AtomicInteger();
        try (PromotionalOfferV2SignatureCreator v2 = new PromotionalOfferV2SignatureCreator(p8(), Support.KEY_ID,
                Support.ISSUER, Support.BUNDLE) {
            @Override
            protected UUID createNonce() {
                asked.incrementAndGet();
                return fixed;
            }
        }; IntroductoryOfferEligibilitySignatureCreator intro = new IntroductoryOfferEligibilitySignatureCreator(p8(),
                Support.KEY_ID, Support.ISSUER, Support.BUNDLE) {
            @Override
            protected UUID createNonce() {
                asked.incrementAndGet();
                return fixed;
            }
        }; AdvancedCommerceInAppSignatureCreator ac = new AdvancedCommerceInAppSignatureCreator(p8(), Support.KEY_ID,
                Support.ISSUER, Support.BUNDLE) {
            @Override
            protected UUID createNonce() {
                asked.incrementAndGet();
                return fixed;
            }
        }) {
            String want = "0b7d5b44-2d8a-4c4e-9b7e-5a1a3c2f9e10";
            assertEquals(want, verifyJws(v2.createSignature("p", "o", null), "promotional-offer").get("nonce").asText());
            assertEquals(want, verifyJws(intro.createSignature("p", true, "1"), "introductory-offer-eligibility")
                    .get("nonce").asText());
            assertEquals(want, verifyJws(ac.createSignature(oneTimeCharge("SKU-1")), "advanced-commerce-api")
                    .get("nonce").asText());
            assertEquals(3, asked.get());
        }
        // The default: a fresh UUID each time.
        try (PromotionalOfferV2SignatureCreator c = new PromotionalOfferV2SignatureCreator(p8(), Support.KEY_ID,
                Support.ISSUER, Support.BUNDLE)) {
            assertFalse(verifyJws(c.createSignature("p", "o", null), "promotional-offer").get("nonce").asText()
                    .equals(verifyJws(c.createSignature("p", "o", null), "promotional-offer").get("nonce").asText()));
        }
    }

    static AdvancedCommerceOneTimeChargeCreateRequest oneTimeCharge(String sku) {
        return new AdvancedCommerceOneTimeChargeCreateRequest("USD",
                new AdvancedCommerceOneTimeChargeItem("A thing", "Thing", sku, 9990L),
                new AdvancedCommerceRequestInfo(UUID.fromString("3DB2ADB1-BB2A-4E72-8B94-92B4C2D26B66")), "C003-00-2");
    }

    @Test
    void advancedCommerceInApp() throws Exception {
        try (AdvancedCommerceInAppSignatureCreator c = new AdvancedCommerceInAppSignatureCreator(p8(), Support.KEY_ID,
                Support.ISSUER, Support.BUNDLE)) {
            JsonNode claims = verifyJws(c.createSignature(oneTimeCharge("SKU-1")), "advanced-commerce-api");
            JsonNode request = Support.JSON.readTree(Base64.getDecoder().decode(claims.get("request").asText()));
            assertEquals("CREATE_ONE_TIME_CHARGE", request.get("operation").asText());
            assertEquals("1", request.get("version").asText());
            assertEquals("USD", request.get("currency").asText());
            assertEquals("SKU-1", request.get("item").get("SKU").asText());
            assertEquals(9990, request.get("item").get("price").asLong());
            assertEquals("3db2adb1-bb2a-4e72-8b94-92b4c2d26b66", request.get("requestInfo").get("requestReferenceId").asText());
            // Apple's limits, checked by the core: an IllegalArgumentException naming the field.
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> c.createSignature(oneTimeCharge("S".repeat(129))));
            assertTrue(e.getMessage().contains("item.SKU"), e.getMessage());
            assertEquals(FailureReason.INVALID_REQUEST, e.getReason());
            assertThrows(IllegalArgumentException.class, () -> c.createSignature(null));
        }
    }

    @Test
    void promotionalOfferV1() throws Exception {
        UUID nonce = UUID.fromString("5E8B1A52-8E02-4D4B-9FB2-7E4D3B1BC0A3");
        long ts = 1_700_000_000_123L;
        try (PromotionalOfferSignatureCreator c = new PromotionalOfferSignatureCreator(p8(), Support.KEY_ID, Support.BUNDLE)) {
            String sig = c.createSignature("com.example.product", "offer1", "ABCD-token", nonce, ts);
            String payload = Support.BUNDLE + '\u2063' + Support.KEY_ID + '\u2063' + "com.example.product" + '\u2063'
                    + "offer1" + '\u2063' + "abcd-token" + '\u2063' + nonce.toString().toLowerCase() + '\u2063' + ts;
            Signature s = Signature.getInstance("SHA256withECDSA");
            s.initVerify(publicKey());
            s.update(payload.getBytes(StandardCharsets.UTF_8));
            assertTrue(s.verify(Base64.getDecoder().decode(sig)), "the v1 signature does not verify over Apple's payload");
            assertThrows(NullPointerException.class, () -> c.createSignature("p", "o", null, nonce, ts));
        }
    }

    @Test
    void apiToken() throws Exception {
        try (SigningKey key = new SigningKey(p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE)) {
            JsonNode claims = verifyJws(key.createApiToken(), "appstoreconnect-v1");
            assertEquals(300, claims.get("exp").asLong() - claims.get("iat").asLong());
            assertThrows(IllegalArgumentException.class, () -> key.createApiToken(0, 3601));
        }
    }

    /** A KMS stand-in: signs with java.security (DER, as KMS returns), counting its calls. */
    static final class JavaSigner implements ExternalSigner {
        final AtomicInteger calls = new AtomicInteger();
        final PrivateKey key;

        JavaSigner(PrivateKey key) {
            this.key = key;
        }

        @Override
        public byte[] sign(byte[] message, byte[] digest) throws Exception {
            calls.incrementAndGet();
            assertEquals(32, digest.length);
            Signature s = Signature.getInstance("SHA256withECDSA");
            s.initSign(key);
            s.update(message);
            return s.sign();
        }
    }

    @Test
    void externalSignerEverywhere() throws Exception {
        JavaSigner signer = new JavaSigner(privateKey("p256.p8"));
        byte[] pub = Support.bytes(Support.keys().resolve("p256_public.pem"));
        try (SigningKey key = SigningKey.withSigner(signer, pub, Support.KEY_ID, Support.ISSUER, Support.BUNDLE)) {
            verifyJws(key.createApiToken(), "appstoreconnect-v1");
            try (PromotionalOfferV2SignatureCreator c = new PromotionalOfferV2SignatureCreator(key)) {
                verifyJws(c.createSignature("p", "o", "t"), "promotional-offer");
            }
            try (IntroductoryOfferEligibilitySignatureCreator c = new IntroductoryOfferEligibilitySignatureCreator(key)) {
                verifyJws(c.createSignature("p", true, "t"), "introductory-offer-eligibility");
            }
            try (AdvancedCommerceInAppSignatureCreator c = new AdvancedCommerceInAppSignatureCreator(key)) {
                verifyJws(c.createSignature(oneTimeCharge("SKU-2")), "advanced-commerce-api");
            }
            try (PromotionalOfferSignatureCreator c = new PromotionalOfferSignatureCreator(key)) {
                assertTrue(c.createSignature("p", "o", "", UUID.randomUUID(), 1L).length() > 60);
            }
            assertEquals(5, signer.calls.get());
            // The creators made from the key leave it open.
            verifyJws(key.createApiToken(), "appstoreconnect-v1");
        }
    }

    @Test
    void externalSignerFailures() throws Exception {
        byte[] pub = Support.bytes(Support.keys().resolve("p256_public.der"));
        IllegalStateException kms = new IllegalStateException("KMS unavailable");
        try (SigningKey key = SigningKey.withSigner((m, d) -> {
            throw kms;
        }, pub, Support.KEY_ID, Support.ISSUER, Support.BUNDLE)) {
            AppStoreServerException e = assertThrows(AppStoreServerException.class, key::createApiToken);
            assertEquals(AppStoreStatus.INVALID_KEY, e.getStatus());
            assertEquals(FailureReason.SIGNER_FAILED, e.getReason());
            assertSame(kms, e.getCause(), "what the signer threw is the cause");
        }
        // Another key's signatures, random bytes, null: refused (checked with the public key before use).
        JavaSigner other = new JavaSigner(privateKey("other_p256.p8"));
        for (ExternalSigner bad : new ExternalSigner[] {other, (m, d) -> new byte[64], (m, d) -> null,
                (m, d) -> new byte[200]}) {
            try (SigningKey key = SigningKey.withSigner(bad, pub, Support.KEY_ID, Support.ISSUER, Support.BUNDLE)) {
                AppStoreServerException e = assertThrows(AppStoreServerException.class, key::createApiToken);
                assertEquals(FailureReason.SIGNER_FAILED, e.getReason(), e.getMessage());
            }
        }
        // A public key that is not one.
        AppStoreServerException e = assertThrows(AppStoreServerException.class,
                () -> SigningKey.withSigner(other, new byte[] {1, 2, 3}, Support.KEY_ID, Support.ISSUER, Support.BUNDLE));
        assertEquals(AppStoreStatus.INVALID_KEY, e.getStatus());
    }

    @Test
    void unusableKeys() {
        String[][] cases = {{"p384.p8", "KEY_WRONG_CURVE"}, {"rsa.p8", "KEY_NOT_EC"}, {"encrypted.p8", "KEY_ENCRYPTED"},
                {"truncated.p8", "KEY_MALFORMED"}, {"not_pem.txt", "KEY_NOT_PEM"}, {"corrupt.p8", "KEY_MALFORMED"}};
        for (String[] c : cases) {
            String text = Support.text(Support.keys().resolve(c[0]));
            AppStoreServerException e = assertThrows(AppStoreServerException.class,
                    () -> new PromotionalOfferV2SignatureCreator(text, Support.KEY_ID, Support.ISSUER, Support.BUNDLE), c[0]);
            assertEquals(AppStoreStatus.INVALID_KEY, e.getStatus(), c[0]);
            assertEquals(FailureReason.valueOf(c[1]), e.getReason(), c[0] + ": " + e.getMessage());
            assertFalse(e.getMessage().contains("PRIVATE KEY-----\nMI"), "key material in the message");
            assertInstanceOf(RuntimeException.class, e); // Apple's Java throws RuntimeException for unusable keys
        }
    }
}
