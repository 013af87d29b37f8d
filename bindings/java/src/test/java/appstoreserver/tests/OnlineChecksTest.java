package appstoreserver.tests;

import appstoreserver.FailureReason;
import appstoreserver.model.Environment;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import appstoreserver.verification.VerificationStatus;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Online (OCSP) checks with the default transport (java.net.http.HttpClient behind the library's transport callback)
 * against the real `openssl ocsp` responders of Tests/support/ocsp_harness.py, as the C, Python and Node suites do:
 * every case's status, reason, message and Apple's Java status, the requests the responders received, the offline
 * outcome, the cache, and the deadline of a slow responder.
 */
class OnlineChecksTest {
    /** Apple's Java status for the OCSP reasons (the JDK's PKIX revocation checker; see ManifestRunner). */
    static final Map<String, VerificationStatus> APPLE_JAVA_OCSP = Map.ofEntries(
            Map.entry("revoked", VerificationStatus.INVALID_CHAIN),
            Map.entry("ocsp_unknown", VerificationStatus.RETRYABLE_VERIFICATION_FAILURE),
            Map.entry("ocsp_unreachable", VerificationStatus.RETRYABLE_VERIFICATION_FAILURE),
            Map.entry("ocsp_timeout", VerificationStatus.RETRYABLE_VERIFICATION_FAILURE),
            Map.entry("ocsp_bad_signature", VerificationStatus.INVALID_CHAIN),
            Map.entry("ocsp_stale", VerificationStatus.INVALID_CHAIN),
            Map.entry("ocsp_no_responder", VerificationStatus.INVALID_CHAIN),
            Map.entry("expired", VerificationStatus.INVALID_CHAIN));

    static Support.Served harness;
    static JsonNode setup;
    static final HttpClient CONTROL = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Support.onPath("openssl") && Support.onPath("faketime"),
                "SKIPPED: the openssl and faketime commands run the OCSP responders");
        Path out = Files.createTempDirectory("appstoreserver-java-ocsp-");
        harness = new Support.Served("READY", "ocsp_harness.py", "serve", out.toString(), "--lifetime", "900");
        setup = Support.json(Paths.get(harness.words[0]));
    }

    @AfterAll
    static void stop() {
        if (harness != null) {
            harness.close();
        }
    }

    static long requests() throws Exception {
        HttpResponse<String> r = CONTROL.send(HttpRequest.newBuilder(URI.create(setup.get("controlUrl").asText())).build(),
                HttpResponse.BodyHandlers.ofString());
        return Support.JSON.readTree(r.body()).get("total").asLong();
    }

    static SignedDataVerifier verifier(boolean online, SignedDataVerifier.Options options) {
        return new SignedDataVerifier(Set.of(new ByteArrayInputStream(Support.bytes(Paths.get(setup.get("root").asText())))),
                setup.get("bundleId").asText(), null, Environment.SANDBOX, online, options);
    }

    static String jws(String name, int i) {
        return Support.text(Paths.get(setup.get("cases").get(name).get("jws").get(i).asText()));
    }

    static Map<String, Object> outcome(SignedDataVerifier v, String jws) {
        Map<String, Object> m = new LinkedHashMap<>();
        try {
            v.verifyAndDecodeTransaction(jws);
            m.put("status", "OK");
        } catch (VerificationException e) {
            m.put("status", e.getAppStoreStatus().name());
            m.put("reason", e.getReason().getReasonName());
            m.put("message", e.getDetail());
            m.put("apple", e.getStatus());
        }
        return m;
    }

    @Test
    void everyCase() throws Exception {
        List<String> problems = new ArrayList<>();
        int n = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = setup.get("cases").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            String name = c.getKey();
            JsonNode expect = c.getValue().get("expect");
            boolean slow = name.equals("responder_slow");
            Map<String, Object> got;
            long received;
            long elapsed;
            try (SignedDataVerifier v = verifier(true, new SignedDataVerifier.Options()
                    .onlineTimeout(Duration.ofMillis(slow ? 2500 : 10000)))) {
                long before = requests();
                long t0 = System.nanoTime();
                got = outcome(v, jws(name, 0));
                elapsed = (System.nanoTime() - t0) / 1_000_000;
                received = requests() - before;
            }
            n++;
            if (!expect.get("status").asText().equals(got.get("status"))
                    || (expect.has("reason") && !expect.get("reason").asText().equals(got.get("reason")))) {
                problems.add(name + ": expected " + expect + ", got " + got);
                continue;
            }
            for (JsonNode piece : expect.path("messageContains")) {
                if (!String.valueOf(got.get("message")).contains(piece.asText())) {
                    problems.add(name + ": message " + got.get("message") + " lacks " + piece.asText());
                }
            }
            if (received != expect.get("responderRequests").asLong()) {
                problems.add(name + ": the responders received " + received + " requests, expected "
                        + expect.get("responderRequests"));
            }
            // The reason (ocsp_timeout, checked above) shows the deadline fired; the bound is 12x the 2.5 s timeout
            // (>= 4x the slowest loaded run) and far below the relay's 600 s wait.
            if (slow && elapsed > 30000) {
                problems.add(name + ": took " + elapsed + " ms with a 2.5 s timeout (the relay waits 600 s)");
            }
            if (got.containsKey("reason")) {
                VerificationStatus want = APPLE_JAVA_OCSP.get(got.get("reason"));
                if (want != got.get("apple")) {
                    problems.add(name + ": Apple's Java status " + got.get("apple") + ", expected " + want);
                }
            }
            try (SignedDataVerifier off = verifier(false, new SignedDataVerifier.Options())) {
                Map<String, Object> o = outcome(off, jws(name, 0));
                JsonNode want = expect.get("offline");
                if (!want.get("status").asText().equals(o.get("status"))
                        || (want.has("reason") && !want.get("reason").asText().equals(o.get("reason")))) {
                    problems.add(name + " offline: expected " + want + ", got " + o);
                }
            }
        }
        assertTrue(n >= 20, "only " + n + " cases");
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    @Test
    void cacheAsksOncePerCertificate() throws Exception {
        try (SignedDataVerifier v = verifier(true, new SignedDataVerifier.Options())) {
            long before = requests();
            int count = setup.get("cases").get("good").get("jws").size();
            for (int i = 0; i < count; i++) {
                assertEquals(setup.get("bundleId").asText(), v.verifyAndDecodeTransaction(jws("good", i)).getBundleId());
            }
            assertEquals(2, requests() - before, "the chain's two certificates are checked once, then cached");
            assertArrayEquals(new long[] {count - 1, 1, 1}, v.cacheStats());
        }
        try (SignedDataVerifier off = verifier(true, new SignedDataVerifier.Options().chainCache(0, Duration.ZERO))) {
            long before = requests();
            off.verifyAndDecodeTransaction(jws("good", 0));
            off.verifyAndDecodeTransaction(jws("good", 1));
            assertEquals(4, requests() - before, "without the cache every call asks");
        }
    }

    @Test
    void revokedIsAppleInvalidChain() throws Exception {
        try (SignedDataVerifier v = verifier(true, new SignedDataVerifier.Options())) {
            VerificationException e = org.junit.jupiter.api.Assertions.assertThrows(VerificationException.class,
                    () -> v.verifyAndDecodeTransaction(jws("leaf_revoked", 0)));
            assertEquals(VerificationStatus.INVALID_CHAIN, e.getStatus());
            assertEquals(FailureReason.REVOKED, e.getReason());
        }
    }
}
