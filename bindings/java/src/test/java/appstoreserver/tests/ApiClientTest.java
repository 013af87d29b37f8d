package appstoreserver.tests;

import appstoreserver.AppStoreServerException;
import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.client.APIError;
import appstoreserver.client.APIException;
import appstoreserver.client.Answered;
import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.client.BaseAppStoreServerAPIClient;
import appstoreserver.client.GetTransactionHistoryVersion;
import appstoreserver.client.Pages;
import appstoreserver.model.ConsumptionRequest;
import appstoreserver.model.DeliveryStatus;
import appstoreserver.model.Environment;
import appstoreserver.model.ExtendReasonCode;
import appstoreserver.model.ExtendRenewalDateRequest;
import appstoreserver.model.ExtendRenewalDateResponse;
import appstoreserver.model.HistoryResponse;
import appstoreserver.model.ImageSize;
import appstoreserver.model.InAppOwnershipType;
import appstoreserver.model.LastTransactionsItem;
import appstoreserver.model.NotificationHistoryResponse;
import appstoreserver.model.RefundHistoryResponse;
import appstoreserver.model.RefundPreference;
import appstoreserver.model.Status;
import appstoreserver.model.StatusResponse;
import appstoreserver.model.TransactionHistoryRequest;
import appstoreserver.model.TransactionInfoResponse;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The API client against the mock App Store server (Tests/support/mock_app_store.py, which verifies every bearer token
 * with the public key and checks every request against api_cases.json): every endpoint through its Java method, Apple's
 * error payloads, 429 with Retry-After in its three forms, retries (the core decides, Java sleeps), the Sandbox
 * fallback, the client's rate limit, and pagination.
 */
class ApiClientTest {
    static final String PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg==";

    @Test
    void everyEndpointIsAMethodWithAppleName() {
        Set<String> cases = new TreeSet<>();
        for (JsonNode c : ApiSupport.CASES) {
            cases.add(c.get("endpoint").asText());
        }
        assertEquals(new TreeSet<>(ApiSupport.ENDPOINTS.keySet()), cases, "api_cases.json and spec/endpoints.json disagree");
        for (JsonNode c : ApiSupport.CASES) {
            ApiSupport.Call call = ApiSupport.javaCall(c); // throws when the method is missing
            assertTrue(call.method.getExceptionTypes().length == 2, call.endpoint + " throws APIException, IOException");
        }
    }

    @Test
    void everyEndpointAgainstTheMock() throws Exception {
        try (AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl())) {
            for (JsonNode k : ApiSupport.CASES) {
                ApiSupport.Call call = ApiSupport.javaCall(k);
                Object got = call.invoke(c);
                JsonNode want = ApiSupport.expected(k);
                if (want == null || want.isNull()) {
                    assertNull(got, call.endpoint);
                } else {
                    assertEquals(want, ApiSupport.tree(got), call.endpoint);
                }
                // The same call through withEnvironment(): the answer and the environment that gave it.
                Answered<?> a = (Answered<?>) call.invoke(c.withEnvironment());
                assertEquals(Environment.SANDBOX, a.getEnvironment(), call.endpoint);
                if (want != null && !want.isNull()) {
                    assertEquals(want, ApiSupport.tree(a.getValue()), call.endpoint);
                }
            }
        }
    }

    @Test
    @SuppressWarnings("deprecation")
    void appleStyleModels() throws Exception {
        try (AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl())) {
            TransactionHistoryRequest r = new TransactionHistoryRequest()
                    .startDate(1698148800000L).endDate(1698148900000L)
                    .productIds(List.of("com.example.a", "com.example.b"))
                    .productTypes(List.of(TransactionHistoryRequest.ProductType.AUTO_RENEWABLE,
                            TransactionHistoryRequest.ProductType.CONSUMABLE))
                    .sort(TransactionHistoryRequest.Order.DESCENDING)
                    .subscriptionGroupIdentifiers(List.of("sub_group_1", "sub_group_2"))
                    .inAppOwnershipType(InAppOwnershipType.FAMILY_SHARED).revoked(false);
            HistoryResponse page = c.getTransactionHistory("2000000000000001", null, r, GetTransactionHistoryVersion.V2);
            assertEquals(List.of("v2-1", "v2-2"), page.getSignedTransactions());
            assertTrue(page.getHasMore());
            assertEquals("revision-page-2", page.getRevision());
            assertNull(page.getEnvironment());
            assertEquals("LocalTestingxxx", page.getRawEnvironment()); // unknown value kept raw
            // Apple's deprecated overload: version 1.
            HistoryResponse v1 = c.getTransactionHistory("2000000000000001", null, r);
            assertEquals(ApiSupport.expected(ApiSupport.byEndpoint("getTransactionHistoryV1")), ApiSupport.tree(v1));
            c.sendConsumptionInformation("2000000000000001", new ConsumptionRequest(true, DeliveryStatus.DELIVERED, true)
                    .consumptionPercentage(50000).refundPreference(RefundPreference.GRANT_PRORATED));
            ExtendRenewalDateResponse resp = c.extendSubscriptionRenewalDate("1000000000000001",
                    new ExtendRenewalDateRequest().extendByDays(45).extendReasonCode(ExtendReasonCode.CUSTOMER_SATISFACTION)
                            .requestIdentifier("fdf964a4-233b-486c-aac1-97d8d52688ac"));
            assertTrue(resp.getSuccess());
            assertEquals(1698148900000L, resp.getEffectiveDate());
            StatusResponse statuses = c.getAllSubscriptionStatuses("2000000000000001", new Status[] {Status.EXPIRED, Status.ACTIVE});
            List<LastTransactionsItem> last = statuses.getData().get(0).getLastTransactions();
            assertEquals(Status.ACTIVE, last.get(0).getStatus());
            assertNull(last.get(1).getStatus());
            assertEquals(99, last.get(1).getRawStatus());
            UUID image = UUID.fromString("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d");
            c.uploadImage(image, Base64.getDecoder().decode(PNG), ImageSize.FULL_SIZE);
        }
    }

    // ---- errors ----------------------------------------------------------------------------------------------------

    @Test
    void errorPayloads() throws Exception {
        try (AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl())) {
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("error-404-4040010"));
            assertEquals(404, e.getHttpStatusCode());
            assertEquals(4040010L, e.getRawApiError());
            assertEquals(APIError.TRANSACTION_ID_NOT_FOUND, e.getApiError());
            assertEquals("mock error 4040010", e.getApiErrorMessage());
            assertEquals(AppStoreStatus.API_ERROR, e.getAppStoreStatus());
            assertEquals(FailureReason.API_ERROR, e.getReason());
            assertEquals("transactionIdNotFound", e.getApiErrorName());
            assertNull(e.getRetryAfter());
            assertNull(e.getRetryAfterSeconds());
            assertTrue(e.getMessage().contains("getTransactionInfo") && e.getMessage().contains("4040010"), e.getMessage());
            assertTrue(e.toString().startsWith("APIException{httpStatusCode=404, apiError=4040010, apiErrorMessage='mock "
                    + "error 4040010'}"), e.toString());
            // The answer's headers, looked up in any case, every one kept.
            assertEquals(List.of("application/json"), e.getHeaders().get("content-type"));
            assertEquals("application/json", e.getHeader("Content-Type"));
            assertTrue(e.getHeaders().containsKey("Content-Length"));
            // An error code this version does not know: kept raw.
            e = assertThrows(APIException.class, () -> c.getTransactionInfo("error-400-4009999"));
            assertEquals(4009999L, e.getRawApiError());
            assertNull(e.getApiError());
            // No App Store error payload.
            e = assertThrows(APIException.class, () -> c.getTransactionInfo("plain500"));
            assertEquals(500, e.getHttpStatusCode());
            assertNull(e.getRawApiError());
            assertNull(e.getApiErrorMessage());
            assertEquals(FailureReason.HTTP_ERROR, e.getReason());
            assertTrue(e.getHeaders().containsKey("content-length"));
            // A 2xx answer that does not decode.
            for (String tid : List.of("malformed", "badtype")) {
                e = assertThrows(APIException.class, () -> c.getTransactionInfo(tid));
                assertEquals(AppStoreStatus.INVALID_RESPONSE, e.getAppStoreStatus(), tid);
                assertEquals(200, e.getHttpStatusCode(), tid);
                assertEquals(FailureReason.UNDECODABLE_RESPONSE, e.getReason(), tid);
                // As Apple's: the decoding failure is the cause (here the core's account of it).
                AppStoreServerException cause = assertInstanceOf(AppStoreServerException.class, e.getCause(), tid);
                assertEquals(FailureReason.UNDECODABLE_RESPONSE, cause.getReason(), tid);
                assertFalse(cause.getMessage().isEmpty(), tid);
            }
            assertNull(assertThrows(APIException.class, () -> c.getTransactionInfo("plain500")).getCause());
            // Built by hand, as Apple's tests do: Apple's text, no answer.
            APIException hand = new APIException(400, APIError.INVALID_TRANSACTION_ID, "Invalid transaction id.");
            assertEquals(4000006L, hand.getRawApiError());
            assertEquals("Failed to call API with error=\"Invalid transaction id.\"", hand.getMessage());
            assertTrue(hand.getHeaders().isEmpty());
            assertNull(hand.getReason());
            assertEquals("APIException{httpStatusCode=400, apiError=4000006, apiErrorMessage='Invalid transaction id.'}",
                    hand.toString());
            assertEquals("Failed to call API with httpStatusCode=503", new APIException(503).getMessage());
        }
    }

    @Test
    void rateLimitedWithRetryAfterInItsThreeForms() throws Exception {
        try (AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl())) { // no retries by default
            Object[][] cases = {{"ratelimit", 7L, 7L}, {"ratelimit-ms-5000", 4L, 5L}, {"ratelimit-date-9", 7L, 10L}};
            for (Object[] k : cases) {
                String tid = (String) k[0];
                long t0 = System.currentTimeMillis();
                APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo(tid));
                long t1 = System.currentTimeMillis();
                assertEquals(429, e.getHttpStatusCode(), tid);
                assertEquals(APIError.RATE_LIMIT_EXCEEDED, e.getApiError(), tid);
                assertEquals(FailureReason.RATE_LIMITED, e.getReason(), tid);
                long s = e.getRetryAfterSeconds();
                assertTrue(s >= (Long) k[1] && s <= (Long) k[2], tid + ": " + s);
                // The answer came between t0 and t1 (measured here: load cannot break it); 1 s for whole seconds.
                assertTrue(e.getRetryAfter() >= t0 + (s - 1) * 1000 && e.getRetryAfter() <= t1 + (s + 1) * 1000,
                        tid + ": " + e.getRetryAfter() + " not in [" + t0 + ", " + t1 + "] + " + s + " s");
                if (tid.startsWith("ratelimit-ms-")) { // Apple's form: the header's value as it is
                    assertEquals(String.valueOf(e.getRetryAfter()), e.getHeader("retry-after"));
                }
                assertEquals(0, e.getSuppressed().length, "no retries are configured: nothing retried");
            }
        }
    }

    @Test
    void retries() throws Exception {
        try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER,
                Support.BUNDLE, Environment.SANDBOX, ApiSupport.options(ApiSupport.mockUrl())
                .retries(3, Duration.ofMillis(10), Duration.ofSeconds(2)))) {
            assertEquals("attempt-3", c.getTransactionInfo("flaky429-2-java").getSignedTransactionInfo());
            assertEquals("attempt-2", c.getTransactionInfo("flaky4040002-1-java").getSignedTransactionInfo());
            assertEquals("attempt-4", c.getTransactionInfo("flaky5000001-3-java").getSignedTransactionInfo());
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("flaky429-4-java"));
            assertEquals(429, e.getHttpStatusCode());
            assertEquals(3, e.getSuppressed().length, "the three answers retried before the last");
            // Retry-After as Apple sends it (UNIX ms) and as an HTTP-date: the retry waits until that time.
            String got = c.getTransactionInfo("flakyms700-1-java").getSignedTransactionInfo();
            Matcher m = Pattern.compile("attempt-2 after (\\d+)").matcher(got);
            assertTrue(m.matches() && Long.parseLong(m.group(1)) >= 650, got);
            got = c.getTransactionInfo("flakydate1-1-java").getSignedTransactionInfo();
            assertTrue(Long.parseLong(got.substring(got.lastIndexOf(' ') + 1)) >= 400, got);
            // A Retry-After further away than maxBackoff is not waited for.
            e = assertThrows(APIException.class, () -> c.getTransactionInfo("ratelimit-long"));
            assertEquals(0, e.getSuppressed().length, "the answer was retried"); // the mechanism, not the clock
            assertEquals(3600L, e.getRetryAfterSeconds());
            // Not retryable: raised at once.
            e = assertThrows(APIException.class, () -> c.getTransactionInfo("error-400-4000006"));
            assertEquals(0, e.getSuppressed().length);
        }
    }

    /** Java sleeps (the client's sleep) exactly the waits the core's driver answers: the backoff doubles from 250 ms. */
    @Test
    void retryWaitsComeFromTheCore() throws Exception {
        List<Long> slept = new ArrayList<>();
        BaseAppStoreServerAPIClient.Options o = ApiSupport.options(ApiSupport.mockUrl())
                .retries(2, Duration.ofMillis(250), Duration.ofSeconds(10));
        try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER,
                Support.BUNDLE, Environment.SANDBOX, o) {
            @Override
            protected void sleep(long millis) {
                slept.add(millis);
            }
        }) {
            assertEquals("attempt-3", c.getTransactionInfo("flaky5000001-2-javaspy").getSignedTransactionInfo());
            assertEquals(List.of(250L, 500L), slept);
        }
    }

    // ---- the Sandbox fallback ----------------------------------------------------------------------------------------

    static AppStoreServerAPIClient production(String url, BaseAppStoreServerAPIClient.Options o) {
        return new AppStoreServerAPIClient(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE,
                Environment.PRODUCTION, o.baseUrl(url));
    }

    @Test
    void sandboxFallback() throws Exception {
        String sandbox = ApiSupport.mockUrl();
        for (String production : List.of(ApiSupport.notFoundUrl(), ApiSupport.unauthorizedUrl())) {
            try (AppStoreServerAPIClient c = production(production, new BaseAppStoreServerAPIClient.Options()
                    .sandboxFallback(sandbox))) {
                JsonNode info = ApiSupport.byEndpoint("getTransactionInfo");
                Answered<TransactionInfoResponse> a = c.withEnvironment().getTransactionInfo("2000000000000001");
                assertEquals(Environment.SANDBOX, a.getEnvironment());
                assertEquals(ApiSupport.expected(info), ApiSupport.tree(a.getValue()));
                assertEquals(ApiSupport.expected(info), ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
                // Not a lookup: Production's answer stands (the mock answers it normally).
                assertEquals(Environment.PRODUCTION, c.withEnvironment().lookUpOrderId("MQ12/ab cd?#%").getEnvironment());
                // The pages of a lookup that fell back stay in Sandbox.
                List<Answered<RefundHistoryResponse>> pages = new ArrayList<>();
                c.withEnvironment().getRefundHistoryPages("2000000000000001").forEach(pages::add);
                assertEquals(ApiSupport.byEndpoint("getRefundHistory").get("pages").size(), pages.size());
                for (Answered<RefundHistoryResponse> p : pages) {
                    assertEquals(Environment.SANDBOX, p.getEnvironment());
                }
            }
        }
        // Neither environment knows the id: Sandbox's error says what Production answered; Production's is suppressed.
        try (AppStoreServerAPIClient c = production(ApiSupport.notFoundUrl(), new BaseAppStoreServerAPIClient.Options()
                .sandboxFallback(ApiSupport.notFoundUrl()))) {
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("2000000000000001"));
            assertEquals(404, e.getHttpStatusCode());
            assertEquals(APIError.TRANSACTION_ID_NOT_FOUND, e.getApiError());
            assertTrue(e.getMessage().contains("Production answered"), e.getMessage());
            assertEquals(1, e.getSuppressed().length);
            assertEquals(4040010L, ((APIException) e.getSuppressed()[0]).getRawApiError());
        }
        // Without the option, Production's answer is final.
        try (AppStoreServerAPIClient c = production(ApiSupport.notFoundUrl(), new BaseAppStoreServerAPIClient.Options())) {
            assertEquals(404, assertThrows(APIException.class, () -> c.getTransactionInfo("2000000000000001"))
                    .getHttpStatusCode());
        }
    }

    // ---- the client's rate limit -------------------------------------------------------------------------------------

    @Test
    void rateLimitRefusesWithoutSending() throws Exception {
        // Request a Test Notification: 1/s in Production, a tenth in Sandbox; never wait.
        try (AppStoreServerAPIClient c = new AppStoreServerAPIClient(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER,
                Support.BUNDLE, Environment.SANDBOX, ApiSupport.options(ApiSupport.mockUrl())
                .rateLimit(Duration.ZERO, 100))) {
            c.requestTestNotification();
            long t0 = System.currentTimeMillis();
            APIException e = assertThrows(APIException.class, c::requestTestNotification);
            assertEquals(0, e.getHttpStatusCode());
            assertEquals(AppStoreStatus.RATE_LIMITED, e.getAppStoreStatus());
            assertEquals(FailureReason.LOCAL_RATE_LIMIT, e.getReason());
            assertTrue(e.getRetryAfter() > t0 && e.getRetryAfter() <= t0 + 11_000, String.valueOf(e.getRetryAfter()));
            assertTrue(e.getHeaders().isEmpty());
            // Another endpoint has its own budget.
            c.getTransactionInfo("2000000000000001");
        }
    }

    // ---- pagination --------------------------------------------------------------------------------------------------

    @Test
    void pagination() throws Exception {
        try (AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl())) {
            JsonNode refunds = ApiSupport.byEndpoint("getRefundHistory").get("pages");
            List<JsonNode> got = new ArrayList<>();
            for (RefundHistoryResponse p : c.getRefundHistoryPages("2000000000000001")) {
                got.add(ApiSupport.tree(p));
            }
            assertEquals(list(refunds), got);
            // Iterable again: a new call each time; and as a Stream.
            Pages<RefundHistoryResponse> pages = c.getRefundHistoryPages("2000000000000001");
            assertEquals(refunds.size(), pages.stream().count());
            assertEquals(refunds.size(), pages.stream().count());
            JsonNode k = ApiSupport.byEndpoint("getTransactionHistory");
            ApiSupport.Call call = ApiSupport.javaCall("getTransactionHistory", k.get("params"), true);
            @SuppressWarnings("unchecked")
            Pages<HistoryResponse> history = (Pages<HistoryResponse>) call.invoke(c);
            try (var s = history.stream()) {
                assertEquals(list(k.get("pages")), s.map(ApiSupport::tree).collect(Collectors.toList()));
            }
            k = ApiSupport.byEndpoint("getNotificationHistory");
            call = ApiSupport.javaCall("getNotificationHistory", k.get("params"), true);
            @SuppressWarnings("unchecked")
            Pages<NotificationHistoryResponse> notes = (Pages<NotificationHistoryResponse>) call.invoke(c);
            List<NotificationHistoryResponse> all = new ArrayList<>();
            notes.forEach(all::add);
            assertEquals(list(k.get("pages")), all.stream().map(ApiSupport::tree).collect(Collectors.toList()));
            var item = all.get(0).getNotificationHistory().get(0).getSendAttempts().get(1);
            assertNull(item.getSendAttemptResult());
            assertEquals("CARRIER_PIGEON", item.getRawSendAttemptResult());
            // Apple's way, page by page.
            RefundHistoryResponse second = c.getRefundHistory("2000000000000001", "revision-page-2");
            assertEquals(List.of("refund-3"), second.getSignedTransactions());
            assertFalse(second.getHasMore());
            // A page that fails ends the iteration with the APIException as the cause.
            Pages<RefundHistoryResponse> failing = c.getRefundHistoryPages("error-400-4000006");
            var it = failing.iterator();
            appstoreserver.client.UncheckedAPIException u = assertThrows(appstoreserver.client.UncheckedAPIException.class,
                    it::hasNext);
            assertEquals(400, u.getCause().getHttpStatusCode(), u.getCause().toString());
            assertFalse(it.hasNext());
        }
    }

    static List<JsonNode> list(JsonNode array) {
        List<JsonNode> out = new ArrayList<>();
        array.forEach(out::add);
        return out;
    }
}
