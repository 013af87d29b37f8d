package appstoreserver.tests;

import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.internal.Json;
import appstoreserver.model.AppTransaction;
import appstoreserver.model.DecodedRealtimeRequestBody;
import appstoreserver.model.Environment;
import appstoreserver.model.JWSRenewalInfoDecodedPayload;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.ResponseBodyV2DecodedPayload;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import appstoreserver.verification.VerificationStatus;
import com.fasterxml.jackson.databind.JsonNode;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Runs one verifyAndDecode* case of a manifest (../shared/conformance or Tests/support/testpki.py) through the Java
 * API and checks it as Tests/capi/conformance.c and bindings/python/tests/manifest_runner.py do:
 * <ul>
 * <li>"implementation-defined": the call returns or throws VerificationException, nothing else;</li>
 * <li>"valid": a model of the operation's class; the JSON is the signed payload segment exactly; every scalar of
 * "fields" matches (numbers truncated, null = absent or null), in the JSON and in the model written back;</li>
 * <li>"config_error": the verifier cannot be built, as Apple's Java library refuses it (checkConfig);</li>
 * <li>"error...": VerificationException with "reason" / "status" / "apple_status" / "error_class", Apple's message form,
 * and Apple's Java VerificationStatus for the failure (APPLE_JAVA_STATUS).</li>
 * </ul>
 */
final class ManifestRunner {
    /**
     * What Apple's Java library (5.2.0) reports for each of the library's reasons, written from its source
     * (SignedDataVerifier.decodeSignedObject, ChainVerifier, the JDK's PKIX and OCSP checks): a JWT that does not
     * decode, a missing x5c, a payload Jackson refuses, an alg other than ES256 and a bad signature are
     * VERIFICATION_FAILURE; an x5c entry that does not parse INVALID_CERTIFICATE; a chain of other than three
     * certificates (an empty x5c included) INVALID_CHAIN_LENGTH; every PKIX failure INVALID_CHAIN. Written independently of
     * scripts/specgen/java.py, which generates the binding's table; this one checks it.
     */
    static final Map<String, VerificationStatus> APPLE_JAVA_STATUS = Map.ofEntries(
            Map.entry("malformed", VerificationStatus.VERIFICATION_FAILURE),
            Map.entry("unsupported_alg", VerificationStatus.VERIFICATION_FAILURE),
            Map.entry("missing_x5c", VerificationStatus.VERIFICATION_FAILURE),
            Map.entry("chain_length", VerificationStatus.INVALID_CHAIN_LENGTH),
            Map.entry("empty_x5c", VerificationStatus.INVALID_CHAIN_LENGTH),
            Map.entry("bad_certificate", VerificationStatus.INVALID_CERTIFICATE),
            Map.entry("untrusted_chain", VerificationStatus.INVALID_CHAIN),
            Map.entry("expired", VerificationStatus.INVALID_CHAIN),
            Map.entry("missing_marker_oid", VerificationStatus.INVALID_CHAIN),
            Map.entry("bad_signature", VerificationStatus.VERIFICATION_FAILURE),
            Map.entry("undecodable_payload", VerificationStatus.VERIFICATION_FAILURE),
            Map.entry("input_too_large", VerificationStatus.VERIFICATION_FAILURE),
            Map.entry("wrong_bundle", VerificationStatus.INVALID_APP_IDENTIFIER),
            Map.entry("wrong_app_id", VerificationStatus.INVALID_APP_IDENTIFIER),
            Map.entry("wrong_environment", VerificationStatus.INVALID_ENVIRONMENT),
            Map.entry("revoked", VerificationStatus.INVALID_CHAIN),
            Map.entry("ocsp_no_responder", VerificationStatus.INVALID_CHAIN));

    /** The shared manifest's error classes and the reasons that satisfy them (Tests/capi/conformance.c). */
    static final Map<String, Set<String>> ERROR_CLASSES = Map.ofEntries(
            Map.entry("signature_invalid", Set.of("bad_signature")), Map.entry("unsupported_alg", Set.of("unsupported_alg")),
            Map.entry("missing_x5c", Set.of("missing_x5c")), Map.entry("chain_length", Set.of("chain_length", "empty_x5c")),
            Map.entry("invalid_certificate", Set.of("bad_certificate")),
            Map.entry("chain_untrusted", Set.of("untrusted_chain")),
            Map.entry("chain_invalid", Set.of("untrusted_chain", "expired", "missing_marker_oid", "chain_length")),
            Map.entry("expired", Set.of("expired")), Map.entry("no_trust_anchor", Set.of("no_trust_anchor")),
            Map.entry("wrong_bundle", Set.of("wrong_bundle")), Map.entry("wrong_app_apple_id", Set.of("wrong_app_id")),
            Map.entry("wrong_environment", Set.of("wrong_environment")), Map.entry("wrong_kind", Set.of("wrong_kind")),
            Map.entry("malformed_jws", Set.of("malformed")));

    private ManifestRunner() {
    }

    static SignedDataVerifier.Kind kind(String op) {
        switch (op) {
            case "verifyAndDecodeNotification":
                return SignedDataVerifier.Kind.NOTIFICATION;
            case "verifyAndDecodeTransaction":
                return SignedDataVerifier.Kind.TRANSACTION;
            case "verifyAndDecodeRenewalInfo":
                return SignedDataVerifier.Kind.RENEWAL_INFO;
            case "verifyAndDecodeAppTransaction":
                return SignedDataVerifier.Kind.APP_TRANSACTION;
            case "verifyAndDecodeRealtimeRequest":
                return SignedDataVerifier.Kind.REALTIME_REQUEST;
            default:
                throw new IllegalArgumentException("unknown operation " + op);
        }
    }

    static Object call(SignedDataVerifier v, String op, String jws) throws VerificationException {
        switch (op) {
            case "verifyAndDecodeNotification":
                return v.verifyAndDecodeNotification(jws);
            case "verifyAndDecodeTransaction":
                return v.verifyAndDecodeTransaction(jws);
            case "verifyAndDecodeRenewalInfo":
                return v.verifyAndDecodeRenewalInfo(jws);
            case "verifyAndDecodeAppTransaction":
                return v.verifyAndDecodeAppTransaction(jws);
            default:
                return v.verifyAndDecodeRealtimeRequest(jws);
        }
    }

    static Class<?> modelClass(String op) {
        switch (op) {
            case "verifyAndDecodeNotification":
                return ResponseBodyV2DecodedPayload.class;
            case "verifyAndDecodeTransaction":
                return JWSTransactionDecodedPayload.class;
            case "verifyAndDecodeRenewalInfo":
                return JWSRenewalInfoDecodedPayload.class;
            case "verifyAndDecodeAppTransaction":
                return AppTransaction.class;
            default:
                return DecodedRealtimeRequestBody.class;
        }
    }

    static Set<InputStream> roots(Path base, JsonNode v) {
        Set<InputStream> roots = new HashSet<>();
        for (JsonNode r : v.get("rootCertificates")) {
            roots.add(new ByteArrayInputStream(Support.bytes(base.resolve(r.asText()))));
        }
        return roots;
    }

    static SignedDataVerifier verifier(Path base, JsonNode v) {
        JsonNode app = v.get("appAppleId");
        JsonNode bundle = v.get("bundleId");
        return new SignedDataVerifier(roots(base, v), bundle == null || bundle.isNull() ? "" : bundle.asText(),
                app == null || app.isNull() ? null : app.asLong(), Environment.fromValue(v.get("environment").asText()),
                v.path("enableOnlineChecks").asBoolean(false));
    }

    private static boolean needsRoots(JsonNode v) {
        String env = v.get("environment").asText();
        return !env.equals("Xcode") && !env.equals("LocalTesting");
    }

    /** Throws AssertionError describing the first mismatch. */
    static void check(Path base, JsonNode c) {
        String op = c.get("operation").asText();
        JsonNode expect = c.get("expect");
        String result = expect.path("result").asText();
        String jws = Support.text(base.resolve(c.get("path").asText()));
        JsonNode v = c.get("verifier");
        if (result.equals("config_error")) {
            checkConfig(base, c, jws);
            return;
        }
        if (v.get("rootCertificates").size() == 0 && needsRoots(v)) {
            // Apple's Java library refuses a verifier without roots when it is made (ChainVerifier).
            IllegalArgumentException e = expectThrows(() -> verifier(base, v));
            assertEquals("At least one root certificate is required", e.getMessage());
            assertTrue(result.startsWith("error") && expect.path("error_class").asText().startsWith("no_trust_anchor"),
                    "a case without roots that does not expect no_trust_anchor: " + expect);
            return;
        }
        Object model = null;
        String raw = null;
        VerificationException error = null;
        try (SignedDataVerifier verifier = verifier(base, v)) {
            try {
                model = call(verifier, op, jws);
                raw = verifier.verifyAndDecodeToJson(kind(op), jws);
            } catch (VerificationException e) {
                error = e;
            }
        }
        if (result.equals("implementation-defined")) {
            return;
        }
        if (result.equals("valid")) {
            if (error != null) {
                fail("expected valid, got " + error.getMessage());
            }
            assertInstanceOf(modelClass(op), model);
            JsonNode json = parse(raw);
            assertEquals(parse(payload(jws)), json, "the JSON is not the signed payload");
            JsonNode written = Json.MAPPER.valueToTree(model);
            JsonNode fields = expect.has("fields") ? expect.get("fields") : c.path("fields");
            for (Iterator<Map.Entry<String, JsonNode>> it = fields.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                String k = f.getKey();
                JsonNode want = f.getValue();
                JsonNode got = json.get(k);
                if (want.isNull()) {
                    assertTrue(got == null || got.isNull(), "field " + k + ": expected null, got " + got);
                    JsonNode w = written.get(k);
                    assertTrue(w == null || w.isNull(), "model field " + k + ": expected null, got " + w);
                    continue;
                }
                if (want.isContainerNode()) {
                    continue;
                }
                assertNotNull(got, "field " + k + ": missing in the output");
                assertSame(want, got, "field " + k);
                JsonNode w = written.get(k);
                assertNotNull(w, "model field " + k + ": missing when the model is written back");
                if (want.isTextual() && want.asText().matches("(?i)[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")) {
                    // java.util.UUID (Apple's Java type) writes UUIDs in lower case; the JSON above keeps the signed text.
                    assertEquals(want.asText().toLowerCase(java.util.Locale.ROOT), w.asText(), "model field " + k);
                } else {
                    assertSame(want, w, "model field " + k);
                }
            }
            return;
        }
        assertTrue(result.startsWith("error"), "unknown expectation " + result);
        if (error == null) {
            fail("expected an error, got a valid result");
        }
        FailureReason r = error.getReason();
        assertNotNull(r, "no reason");
        String reason = r.getReasonName();
        AppStoreStatus st = error.getAppStoreStatus();
        assertNotNull(st, "no library status");
        String status = st.name();
        assertNotNull(error.getDetail());
        assertTrue(!error.getDetail().isEmpty(), "empty message");
        assertEquals("Verification failed with status " + error.getStatus() + " (" + r.name() + "): " + error.getDetail(),
                error.getMessage());
        if (expect.has("reason")) {
            assertEquals(expect.get("reason").asText(), reason, "reason (" + error.getDetail() + ")");
        }
        if (expect.has("status")) {
            assertEquals(expect.get("status").asText(), status, "status (" + error.getDetail() + ")");
        }
        if (expect.has("apple_status")) {
            assertEquals(expect.get("apple_status").asText(), status, "Apple's (Swift) status");
        }
        if (expect.has("error_class")) {
            Set<String> accepted = new HashSet<>();
            for (String alt : expect.get("error_class").asText().split("/")) {
                String head = alt.trim().split(" ")[0];
                assertTrue(ERROR_CLASSES.containsKey(head), "unmapped error class " + alt);
                accepted.addAll(ERROR_CLASSES.get(head));
            }
            assertTrue(accepted.contains(reason), "expected " + expect.get("error_class").asText() + ", got " + status
                    + "/" + reason + ": " + error.getDetail());
        }
        VerificationStatus want = reason.equals("wrong_kind") ? byStatus(st) : APPLE_JAVA_STATUS.get(reason);
        assertNotNull(want, "no Apple Java status for reason " + reason + " in the test's table");
        assertEquals(want, error.getStatus(), "Apple's Java status for " + reason);
    }

    static VerificationStatus byStatus(AppStoreStatus st) {
        switch (st) {
            case INVALID_APP_IDENTIFIER:
                return VerificationStatus.INVALID_APP_IDENTIFIER;
            case INVALID_ENVIRONMENT:
                return VerificationStatus.INVALID_ENVIRONMENT;
            default:
                return VerificationStatus.VERIFICATION_FAILURE;
        }
    }

    /** The configuration failures of the testpki manifest, as Apple's Java library reports them. */
    static void checkConfig(Path base, JsonNode c, String jws) {
        String reason = c.get("expect").path("reason").asText();
        JsonNode v = c.get("verifier");
        switch (reason) {
            case "invalid_argument": {
                IllegalArgumentException e = expectThrows(() -> verifier(base, v));
                assertEquals("appAppleId is required when the environment is Production", e.getMessage());
                return;
            }
            case "no_trust_anchor": {
                IllegalArgumentException e = expectThrows(() -> verifier(base, v));
                assertEquals("At least one root certificate is required", e.getMessage());
                return;
            }
            case "online_checks_unavailable": {
                // The JDK transport makes online checks available; the case's leaf names no OCSP responder.
                try (SignedDataVerifier verifier = verifier(base, v)) {
                    call(verifier, c.get("operation").asText(), jws);
                    fail("expected the online check to fail: the leaf names no OCSP responder");
                } catch (VerificationException e) {
                    assertEquals(FailureReason.OCSP_NO_RESPONDER, e.getReason(), e.getMessage());
                    assertEquals(VerificationStatus.INVALID_CHAIN, e.getStatus(), e.getMessage());
                }
                return;
            }
            default:
                fail("unknown configuration case " + reason);
        }
    }

    interface Body {
        void run() throws Exception;
    }

    static IllegalArgumentException expectThrows(Body b) {
        try {
            b.run();
        } catch (IllegalArgumentException e) {
            return e;
        } catch (Exception e) {
            fail("expected IllegalArgumentException, got " + e);
        }
        fail("expected IllegalArgumentException, nothing was thrown");
        return null;
    }

    static void assertSame(JsonNode want, JsonNode got, String what) {
        if (want.isNumber() && got.isNumber()) {
            assertEquals(want.asDouble() < 0 ? Math.ceil(want.asDouble()) : Math.floor(want.asDouble()),
                    got.asDouble() < 0 ? Math.ceil(got.asDouble()) : Math.floor(got.asDouble()), what);
            if (want.isIntegralNumber() && got.isIntegralNumber()) {
                assertEquals(want.asLong(), got.asLong(), what);
            }
            return;
        }
        assertEquals(want, got, what);
    }

    static JsonNode parse(String json) {
        try {
            return Support.JSON.readTree(json);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + e.getMessage(), e);
        }
    }

    static String payload(String jws) {
        String[] parts = jws.split("\\.");
        assertEquals(3, parts.length, "not a compact JWS");
        return new String(Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8);
    }

}
