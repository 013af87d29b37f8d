package appstoreserver.tests;

import appstoreserver.AppStoreServerException;
import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.client.APIError;
import appstoreserver.client.APIException;
import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.client.BaseAppStoreServerAPIClient;
import appstoreserver.client.BearerTokenAuthenticator;
import appstoreserver.client.BearerTokenAuthenticatorInterface;
import appstoreserver.internal.Json;
import appstoreserver.model.Environment;
import appstoreserver.signature.SigningKey;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Apple's extension point, makeRequest, as Apple's users override it: for every endpoint it receives what Apple's
 * library (5.2.0, BaseAppStoreServerAPIClient.makeHttpCall and the endpoint methods) passes, apart from the listed
 * deliberate differences; its answers, its failures and its headers go back through the core; a subclass may change
 * the request and call the default; custom token providers and external signers.
 */
class MakeRequestTest {
    /** One makeRequest call, as received. */
    static final class Seen {
        final String path;
        final String method;
        final Map<String, List<String>> query;
        final Map<String, String> headers;
        final String contentType;
        final byte[] body;
        final String base;

        Seen(String path, String method, Map<String, List<String>> query, Map<String, String> headers, String contentType,
             byte[] body, String base) {
            this.path = path;
            this.method = method;
            this.query = query;
            this.headers = headers;
            this.contentType = contentType;
            this.body = body;
            this.base = base;
        }
    }

    interface Hook {
        Recording.Fake answer(Seen seen) throws IOException;
    }

    /** A client whose makeRequest records its arguments and answers with hook. */
    static class Recording extends AppStoreServerAPIClient {
        final List<Seen> seen = new ArrayList<>();
        Hook hook;

        Recording(BaseAppStoreServerAPIClient.Options options) {
            super(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE, Environment.SANDBOX, options);
        }

        Recording(Environment environment, BaseAppStoreServerAPIClient.Options options) {
            super(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE, environment, options);
        }

        /** A response as an override of makeRequest returns it (Apple's interface; headers beyond Apple). */
        static class Fake implements HttpResponseInterface {
            final int status;
            final String body;
            final Map<String, List<String>> headers;
            boolean closed;

            Fake(int status, String body, Map<String, List<String>> headers) {
                this.status = status;
                this.body = body;
                this.headers = headers;
            }

            @Override
            public int statusCode() {
                return status;
            }

            @Override
            public Reader body() {
                return body == null ? null : new StringReader(body);
            }

            @Override
            public Map<String, List<String>> headers() {
                return headers;
            }

            @Override
            public void close() {
                closed = true;
            }
        }

        @Override
        protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> queryParameters,
                                                    Map<String, String> headers, String contentType, byte[] body)
                throws IOException {
            Seen s = new Seen(path, method, queryParameters, headers, contentType, body, getRequestBaseUrl());
            seen.add(s);
            return hook.answer(s);
        }
    }

    static final String BASE = "https://api.example.test";

    // What Apple's library (5.2.0) hands makeRequest for each api_cases.json call, written from its source: the path as
    // its string concatenation makes it (a UUID as UUID.toString() formats it), the query parameters as lists of
    // strings (Long.toString of dates, enum name(), Boolean.toString, Status values' toString; Map.of() without any),
    // the content type ("application/json; charset=utf-8" for a JSON body, "image/png" for the image, else null),
    // and the body: the JSON of the request model, the image bytes, an empty array for a POST without a body, else
    // null. Advanced Commerce endpoints (not in Apple's 5.2.0 client) follow the same rules. "J": a JSON body, compared
    // with the case's body as JSON; "P": the PNG; "E": empty; "-": null.
    static final String HISTORY = "startDate=1698148800000&endDate=1698148900000&productId=com.example.a"
            + "&productId=com.example.b&productType=AUTO_RENEWABLE&productType=CONSUMABLE&sort=DESCENDING"
            + "&subscriptionGroupIdentifier=sub_group_1&subscriptionGroupIdentifier=sub_group_2"
            + "&inAppOwnershipType=FAMILY_SHARED&revoked=false";
    static final Map<String, String[]> APPLE = new LinkedHashMap<>();

    static {
        a("getTransactionInfo", "GET", "/inApps/v1/transactions/2000000000000001", "", "-");
        a("getTransactionHistory", "GET", "/inApps/v2/history/2000000000000001", HISTORY, "-");
        a("getTransactionHistoryV1", "GET", "/inApps/v1/history/2000000000000001", HISTORY, "-");
        a("getAllSubscriptionStatuses", "GET", "/inApps/v1/subscriptions/2000000000000001", "status=2&status=1", "-");
        a("getRefundHistory", "GET", "/inApps/v2/refund/lookup/2000000000000001", "", "-");
        a("lookUpOrderId", "GET", "/inApps/v1/lookup/MQ12/ab cd?#%", "", "-");
        a("getAppTransactionInfo", "GET", "/inApps/v1/transactions/appTransactions/2000000000000001", "", "-");
        a("finishTransaction", "POST", "/inApps/v1/transactions/2000000000000001/finish", "", "E");
        a("sendConsumptionData", "PUT", "/inApps/v1/transactions/consumption/2000000000000001", "", "J");
        a("sendConsumptionInformation", "PUT", "/inApps/v2/transactions/consumption/2000000000000001", "", "J");
        a("setAppAccountToken", "PUT", "/inApps/v1/transactions/1000000000000001/appAccountToken", "", "J");
        a("extendSubscriptionRenewalDate", "PUT", "/inApps/v1/subscriptions/extend/1000000000000001", "", "J");
        a("extendRenewalDateForAllActiveSubscribers", "POST", "/inApps/v1/subscriptions/extend/mass", "", "J");
        a("getStatusOfSubscriptionRenewalDateExtensions", "GET",
                "/inApps/v1/subscriptions/extend/mass/com.example.product/20fba8a0-2b80-4a7d-a17f-85c1854727f8", "", "-");
        a("requestTestNotification", "POST", "/inApps/v1/notifications/test", "", "E");
        a("getTestNotificationStatus", "GET",
                "/inApps/v1/notifications/test/8cd2974c-f905-492a-bf9a-b2f47c791d19_1700000000000", "", "-");
        a("getNotificationHistory", "POST", "/inApps/v1/notifications/history", "", "J");
        a("uploadImage", "PUT", "/inApps/v1/messaging/image/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "imageSize=FULL_SIZE", "P");
        a("deleteImage", "DELETE", "/inApps/v1/messaging/image/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "", "-");
        a("getImageList", "GET", "/inApps/v1/messaging/image/list", "", "-");
        a("uploadMessage", "PUT", "/inApps/v1/messaging/message/b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", "", "J");
        a("deleteMessage", "DELETE", "/inApps/v1/messaging/message/b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", "", "-");
        a("getMessageList", "GET", "/inApps/v1/messaging/message/list", "", "-");
        a("configureDefaultMessage", "PUT", "/inApps/v1/messaging/default/com.example.product/en-US", "", "J");
        a("deleteDefaultMessage", "DELETE", "/inApps/v1/messaging/default/com.example.product/en-US", "", "-");
        a("getDefaultMessage", "GET", "/inApps/v1/messaging/default/com.example.product/en-US", "", "-");
        a("configureRealtimeURL", "PUT", "/inApps/v1/messaging/realtime/url", "", "J");
        a("deleteRealtimeURL", "DELETE", "/inApps/v1/messaging/realtime/url", "", "-");
        a("getRealtimeURL", "GET", "/inApps/v1/messaging/realtime/url", "", "-");
        a("initiatePerformanceTest", "POST", "/inApps/v1/messaging/performanceTest", "", "J");
        a("getPerformanceTestResults", "GET", "/inApps/v1/messaging/performanceTest/result/perf-test-1", "", "-");
        a("cancelSubscription", "POST", "/advancedCommerce/v1/subscription/cancel/2000000000000001", "", "J");
        a("changeSubscriptionMetadata", "POST", "/advancedCommerce/v1/subscription/changeMetadata/2000000000000001", "", "J");
        a("changeSubscriptionPrice", "POST", "/advancedCommerce/v1/subscription/changePrice/2000000000000001", "", "J");
        a("migrateSubscription", "POST", "/advancedCommerce/v1/subscription/migrate/2000000000000001", "", "J");
        a("revokeSubscription", "POST", "/advancedCommerce/v1/subscription/revoke/2000000000000001", "", "J");
        a("requestTransactionRefund", "POST", "/advancedCommerce/v1/transaction/requestRefund/2000000000000001", "", "J");
    }

    private static void a(String endpoint, String method, String path, String query, String body) {
        APPLE.put(endpoint, new String[] {method, path, query, body});
    }

    static Map<String, List<String>> query(String q) {
        Map<String, List<String>> out = new HashMap<>();
        if (!q.isEmpty()) {
            for (String kv : q.split("&")) {
                String[] p = kv.split("=", 2);
                out.computeIfAbsent(p[0], k -> new ArrayList<>()).add(p[1]);
            }
        }
        return out;
    }

    /** The deliberate differences from Apple's arguments: path parameters are percent-encoded (Apple's inserts them
     *  as they are, so an id holding "/" or "?" changes the request). */
    static String oursWhereWeDiffer(String endpoint, String path) {
        return endpoint.equals("lookUpOrderId") ? "/inApps/v1/lookup/MQ12%2Fab%20cd%3F%23%25" : path;
    }

    static Recording.Fake ok(JsonNode c) {
        JsonNode want = ApiSupport.expected(c);
        return new Recording.Fake(200, want == null || want.isNull() ? "" : want.toString(), Map.of());
    }

    @Test
    void makeRequestGetsWhatApplesLibraryPasses() throws Exception {
        assertEquals(ApiSupport.ENDPOINTS.keySet(), APPLE.keySet());
        try (Recording c = new Recording(ApiSupport.options(BASE))) {
            for (JsonNode k : ApiSupport.CASES) {
                String name = k.get("endpoint").asText();
                c.seen.clear();
                List<Recording.Fake> answers = new ArrayList<>();
                c.hook = s -> {
                    Recording.Fake f = ok(k);
                    answers.add(f);
                    return f;
                };
                ApiSupport.javaCall(k).invoke(c);
                assertEquals(1, c.seen.size(), name);
                assertTrue(answers.get(0).closed, name + ": the response is closed");
                Seen s = c.seen.get(0);
                String[] want = APPLE.get(name);
                assertEquals(want[0], s.method, name);
                assertEquals(oursWhereWeDiffer(name, want[1]), s.path, name);
                assertEquals(BASE, s.base, name + ": the base URL option replaces Advanced Commerce's too");
                assertEquals(query(want[2]), s.query, name);
                assertEquals(List.of("User-Agent", "Authorization", "Accept"), new ArrayList<>(s.headers.keySet()), name);
                assertTrue(s.headers.get("User-Agent").startsWith("appstoreserver/"), name);
                assertTrue(s.headers.get("Authorization").startsWith("Bearer ey"), name);
                assertEquals("application/json", s.headers.get("Accept"), name);
                switch (want[3]) {
                    case "J":
                        assertEquals("application/json; charset=utf-8", s.contentType, name);
                        assertEquals(k.get("body"), Json.MAPPER.readTree(s.body), name);
                        break;
                    case "P":
                        assertEquals("image/png", s.contentType, name);
                        assertArrayEquals(Base64.getDecoder().decode(ApiClientTest.PNG), s.body, name);
                        break;
                    case "E":
                        assertNull(s.contentType, name);
                        assertArrayEquals(new byte[0], s.body, name);
                        break;
                    default:
                        assertNull(s.contentType, name);
                        assertNull(s.body, name);
                }
            }
        }
    }

    @Test
    void answersFailuresAndHeadersOfAnOverride() throws Exception {
        try (Recording c = new Recording(ApiSupport.options(BASE).retries(3, Duration.ofMillis(1), Duration.ofMillis(10)))) {
            // Apple's error payload.
            c.hook = s -> new Recording.Fake(400, "{\"errorCode\": 4000006, \"errorMessage\": \"Invalid transaction id.\"}",
                    Map.of("Content-Type", List.of("application/json"), "X-Apple-Request-Id", List.of("req-1")));
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
            assertEquals(APIError.INVALID_TRANSACTION_ID, e.getApiError());
            assertEquals("Invalid transaction id.", e.getApiErrorMessage());
            assertEquals("req-1", e.getHeader("x-apple-request-id"));
            // A body makeRequest gives as null: no body (an error without payload).
            c.hook = s -> new Recording.Fake(401, null, Map.of());
            e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
            assertEquals(401, e.getHttpStatusCode());
            assertEquals(FailureReason.HTTP_ERROR, e.getReason());
            // makeRequest's IOException is thrown as it is (never retried), with the core's account suppressed.
            c.seen.clear();
            IOException boom = new ConnectException("connection refused (test)");
            c.hook = s -> {
                throw boom;
            };
            IOException thrown = assertThrows(IOException.class, () -> c.getTransactionInfo("1"));
            assertSame(boom, thrown);
            assertEquals(1, c.seen.size(), "a request that got no answer is never retried");
            AppStoreServerException account = (AppStoreServerException) thrown.getSuppressed()[0];
            assertEquals(AppStoreStatus.TRANSPORT_ERROR, account.getStatus());
            assertEquals(FailureReason.TRANSPORT_UNREACHABLE, account.getReason());
            assertTrue(account.getMessage().contains("getTransactionInfo"), account.getMessage());
            // So is a RuntimeException.
            c.hook = s -> {
                throw new IllegalStateException("bug in the override");
            };
            assertEquals("bug in the override", assertThrows(IllegalStateException.class,
                    () -> c.getTransactionInfo("1")).getMessage());
            // An answer the library refuses (no HTTP status), and no answer at all.
            c.hook = s -> new Recording.Fake(0, "", Map.of());
            assertTrue(assertThrows(IOException.class, () -> c.getTransactionInfo("1")).getMessage()
                    .contains("refuses"));
            c.hook = s -> null;
            assertThrows(IOException.class, () -> c.getTransactionInfo("1"));
            // Retried answers: each attempt's APIException suppressed, oldest first.
            List<Recording.Fake> answers = new ArrayList<>(List.of(
                    new Recording.Fake(500, "{\"errorCode\": 5000001, \"errorMessage\": \"first\"}", Map.of()),
                    new Recording.Fake(429, "{\"errorCode\": 4290000, \"errorMessage\": \"second\"}", Map.of()),
                    new Recording.Fake(500, "{\"errorCode\": 5000001, \"errorMessage\": \"third\"}", Map.of()),
                    new Recording.Fake(500, "{\"errorCode\": 5000001, \"errorMessage\": \"fourth\"}", Map.of())));
            c.hook = s -> answers.remove(0);
            e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
            assertEquals("fourth", e.getApiErrorMessage());
            List<String> before = new ArrayList<>();
            for (Throwable t : e.getSuppressed()) {
                before.add(((APIException) t).getApiErrorMessage());
            }
            assertEquals(List.of("first", "second", "third"), before);
            // A body beyond the library's limit, given as a Reader: refused while it is read.
            c.hook = s -> new Recording.Fake(200, null, Map.of()) {
                @Override
                public Reader body() {
                    return new Reader() {
                        long left = appstoreserver.internal.AbiConstants.LIMIT_API_RESPONSE_BYTES + 10;

                        @Override
                        public int read(char[] buf, int off, int len) {
                            if (left <= 0) {
                                return -1;
                            }
                            int n = (int) Math.min(len, left);
                            java.util.Arrays.fill(buf, off, off + n, ' ');
                            left -= n;
                            return n;
                        }

                        @Override
                        public void close() {
                        }
                    };
                }
            };
            assertTrue(assertThrows(IOException.class, () -> c.getTransactionInfo("1")).getMessage().contains("larger"));
        }
    }

    /** A subclass changes the request and sends it with the default makeRequest (java.net.http). */
    @Test
    void overrideThatDelegatesToTheDefault() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER,
                Support.BUNDLE, Environment.SANDBOX, ApiSupport.options(ApiSupport.mockUrl())) {
            @Override
            protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> query,
                                                        Map<String, String> headers, String contentType, byte[] body)
                    throws IOException {
                calls.incrementAndGet();
                Map<String, String> more = new LinkedHashMap<>(headers);
                more.put("X-Trace", "t-1");
                return super.makeRequest(path, method, query, more, contentType, body);
            }
        }) {
            JsonNode k = ApiSupport.byEndpoint("getTransactionInfo");
            assertEquals(ApiSupport.expected(k), ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
            k = ApiSupport.byEndpoint("getAllSubscriptionStatuses");
            assertEquals(ApiSupport.expected(k), ApiSupport.tree(ApiSupport.javaCall(k).invoke(c)));
            assertEquals(2, calls.get());
        }
    }

    /** In the Sandbox fallback, the request's base URL (getRequestBaseUrl) is Sandbox's. */
    @Test
    void requestBaseUrlOfTheFallback() throws Exception {
        try (Recording c = new Recording(Environment.PRODUCTION, ApiSupport.options(BASE)
                .sandboxFallback("https://sandbox.example.test/"))) {
            JsonNode k = ApiSupport.byEndpoint("getTransactionInfo");
            c.hook = s -> s.base.equals(BASE)
                    ? new Recording.Fake(404, "{\"errorCode\": 4040010, \"errorMessage\": \"Transaction id not found.\"}", Map.of())
                    : ok(k);
            assertEquals(Environment.SANDBOX, c.withEnvironment().getTransactionInfo("2000000000000001").getEnvironment());
            assertEquals(List.of(BASE, "https://sandbox.example.test"),
                    List.of(c.seen.get(0).base, c.seen.get(1).base));
            assertEquals(c.seen.get(0).path, c.seen.get(1).path);
        }
        // Advanced Commerce's host, for its endpoints of a client on Apple's base URLs.
        try (Recording c = new Recording(Environment.SANDBOX, new BaseAppStoreServerAPIClient.Options())) {
            JsonNode ac = ApiSupport.byEndpoint("cancelSubscription");
            c.hook = s -> ok(ac);
            ApiSupport.javaCall(ac).invoke(c);
            assertEquals("https://api.storekit-sandbox.itunes.apple.com", c.seen.get(0).base);
            JsonNode k = ApiSupport.byEndpoint("getTransactionInfo");
            c.hook = s -> ok(k);
            ApiSupport.javaCall(k).invoke(c);
            assertEquals("https://api.storekit-sandbox.apple.com", c.seen.get(1).base);
        }
    }

    @Test
    void bearerTokenProviders() throws Exception {
        JsonNode k = ApiSupport.byEndpoint("getTransactionInfo");
        // Apple's BearerTokenAuthenticator: the core signs the tokens with its key.
        try (BearerTokenAuthenticator auth = new BearerTokenAuthenticator(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER,
                Support.BUNDLE)) {
            SigningTest.verifyJws(auth.generateToken(), "appstoreconnect-v1");
            try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(auth, Environment.SANDBOX,
                    ApiSupport.options(ApiSupport.mockUrl()))) {
                assertEquals(ApiSupport.expected(k), ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
            }
            // Any other provider: its token is sent, asked for once per attempt.
            AtomicInteger asked = new AtomicInteger();
            BearerTokenAuthenticatorInterface custom = () -> {
                asked.incrementAndGet();
                return auth.generateToken();
            };
            try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(custom, Environment.SANDBOX,
                    ApiSupport.options(ApiSupport.mockUrl()).retries(2, Duration.ofMillis(1), Duration.ofMillis(5)))) {
                assertEquals(ApiSupport.expected(k), ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
                assertEquals(1, asked.get());
                assertEquals("attempt-2", c.getTransactionInfo("flaky429-1-javatokens").getSignedTransactionInfo());
                assertEquals(3, asked.get());
            }
        }
        AtomicInteger n = new AtomicInteger();
        BearerTokenAuthenticatorInterface fixed = () -> "token-" + n.incrementAndGet();
        List<String> sent = new ArrayList<>();
        try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(fixed, Environment.SANDBOX, ApiSupport.options(BASE)) {
            @Override
            protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> query,
                                                        Map<String, String> headers, String contentType, byte[] body) {
                sent.add(headers.get("Authorization"));
                return ok(k);
            }
        }) {
            c.getTransactionInfo("1");
            c.getTransactionInfo("2");
        }
        assertEquals(List.of("Bearer token-1", "Bearer token-2"), sent);
    }

    @Test
    void externalSigner() throws Exception {
        SigningTest.JavaSigner signer = new SigningTest.JavaSigner(SigningTest.privateKey("p256.p8"));
        byte[] pub = Support.bytes(Support.keys().resolve("p256_public.pem"));
        JsonNode k = ApiSupport.byEndpoint("getTransactionInfo");
        try (SigningKey key = SigningKey.withSigner(signer, pub, Support.KEY_ID, Support.ISSUER, Support.BUNDLE);
             AppStoreServerAPIClient c = new AppStoreServerAPIClient(key, Environment.SANDBOX,
                     ApiSupport.options(ApiSupport.mockUrl()))) {
            assertEquals(ApiSupport.expected(k), ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
            assertEquals(1, signer.calls.get());
            key.close(); // the client keeps what it needs
            assertEquals(ApiSupport.expected(k), ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
            assertEquals(2, signer.calls.get());
        }
        // A failing signer: the call fails before anything is sent, with the signer's exception as the cause.
        IllegalStateException kms = new IllegalStateException("KMS unavailable");
        AtomicInteger sent = new AtomicInteger();
        try (SigningKey key = SigningKey.withSigner((m, d) -> {
            throw kms;
        }, pub, Support.KEY_ID, Support.ISSUER, Support.BUNDLE);
             AppStoreServerAPIClient c = new AppStoreServerAPIClient(key, Environment.SANDBOX, ApiSupport.options(BASE)) {
                 @Override
                 protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> query,
                                                             Map<String, String> headers, String contentType, byte[] body) {
                     sent.incrementAndGet();
                     return ok(k);
                 }
             }) {
            AppStoreServerException e = assertThrows(AppStoreServerException.class, () -> c.getTransactionInfo("1"));
            assertEquals(FailureReason.SIGNER_FAILED, e.getReason());
            assertSame(kms, e.getCause());
            assertEquals(0, sent.get());
        }
    }
}
