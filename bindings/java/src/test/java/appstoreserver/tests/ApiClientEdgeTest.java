package appstoreserver.tests;

import appstoreserver.AppStoreServerException;
import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.InvalidArgumentException;
import appstoreserver.client.APIException;
import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.client.BaseAppStoreServerAPIClient;
import appstoreserver.client.GetTransactionHistoryVersion;
import appstoreserver.client.Pages;
import appstoreserver.model.ConsumptionRequest;
import appstoreserver.model.DeliveryStatus;
import appstoreserver.model.Environment;
import appstoreserver.model.RefundHistoryResponse;
import appstoreserver.model.Status;
import appstoreserver.model.TransactionHistoryRequest;
import appstoreserver.model.UploadMessageRequestBody;
import appstoreserver.signature.SigningKey;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.URI;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The API client's edges: bad arguments (NullPointerException / IllegalArgumentException naming the parameter, before
 * anything is sent), use after close(), an interrupt during a wait, many threads on one client, and the default
 * java.net.http transport against a hostile server (Tests/support/hostile_http.py: no redirect followed, a deadline
 * for the whole exchange, the body limit while reading, no gzip inflation).
 */
class ApiClientEdgeTest {
    static Support.Served hostile;
    static int main;

    @BeforeAll
    static void start() {
        hostile = new Support.Served("PORT", "hostile_http.py", "--lifetime", "600");
        main = Integer.parseInt(hostile.words[0]);
    }

    @AfterAll
    static void stop() {
        hostile.close();
    }

    static AppStoreServerAPIClient at(String url, BaseAppStoreServerAPIClient.Options o) {
        return new AppStoreServerAPIClient(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE,
                Environment.SANDBOX, o.baseUrl(url));
    }

    static String message(Throwable t) {
        return t.getMessage();
    }

    @Test
    @SuppressWarnings({"unchecked", "rawtypes"})
    void badArguments() throws Exception {
        String p8 = ApiSupport.p8();
        assertEquals("signingKey must not be null", message(assertThrows(NullPointerException.class,
                () -> new AppStoreServerAPIClient((String) null, Support.KEY_ID, Support.ISSUER, Support.BUNDLE,
                        Environment.SANDBOX))));
        assertEquals("environment must not be null", message(assertThrows(NullPointerException.class,
                () -> new AppStoreServerAPIClient(p8, Support.KEY_ID, Support.ISSUER, Support.BUNDLE, null))));
        assertEquals("Xcode is not a supported environment for an AppStoreServerAPIClient",
                message(assertThrows(IllegalArgumentException.class, () -> new AppStoreServerAPIClient(p8, Support.KEY_ID,
                        Support.ISSUER, Support.BUNDLE, Environment.XCODE))));
        AppStoreServerException bad = assertThrows(AppStoreServerException.class, () -> new AppStoreServerAPIClient(
                "not a key", Support.KEY_ID, Support.ISSUER, Support.BUNDLE, Environment.SANDBOX));
        assertEquals(FailureReason.KEY_NOT_PEM, bad.getReason());
        assertFalse(bad.getMessage().contains("not a key"));
        try (SigningKey noIssuer = new SigningKey(p8, Support.KEY_ID, null, Support.BUNDLE)) {
            assertThrows(IllegalArgumentException.class, () -> new AppStoreServerAPIClient(noIssuer, Environment.SANDBOX));
        }
        // Options.
        BaseAppStoreServerAPIClient.Options o = new BaseAppStoreServerAPIClient.Options();
        assertThrows(IllegalArgumentException.class, () -> o.timeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> o.timeout(Duration.ofDays(60)));
        assertThrows(NullPointerException.class, () -> o.timeout(null));
        assertThrows(IllegalArgumentException.class, () -> o.retries(101, Duration.ZERO, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> o.retries(1, Duration.ofMillis(-1), Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> o.rateLimit(Duration.ZERO, 0));
        assertThrows(IllegalArgumentException.class, () -> o.rateLimit(Duration.ZERO, 101));
        assertThrows(NullPointerException.class, () -> o.baseUrl(null));
        assertThrows(NullPointerException.class, () -> o.httpClient(null));
        assertTrue(message(assertThrows(IllegalArgumentException.class, () -> new AppStoreServerAPIClient(p8,
                Support.KEY_ID, Support.ISSUER, Support.BUNDLE, Environment.SANDBOX,
                new BaseAppStoreServerAPIClient.Options().sandboxFallback(true)))).contains("Production"));
        assertThrows(IllegalArgumentException.class, () -> at("ftp://example.test", new BaseAppStoreServerAPIClient.Options()));
        assertThrows(IllegalArgumentException.class, () -> at("http://exa\0mple.test", new BaseAppStoreServerAPIClient.Options()));
        // Endpoint arguments: null where Apple's API requires a value, before anything is sent.
        try (AppStoreServerAPIClient c = ApiSupport.client("http://127.0.0.1:9")) {
            assertEquals("transactionId must not be null",
                    message(assertThrows(NullPointerException.class, () -> c.getTransactionInfo(null))));
            assertEquals("status[1] must not be null", message(assertThrows(NullPointerException.class,
                    () -> c.getAllSubscriptionStatuses("1", new Status[] {Status.ACTIVE, null}))));
            assertEquals("consumptionRequest must not be null", message(assertThrows(NullPointerException.class,
                    () -> c.sendConsumptionInformation("1", null))));
            assertEquals("imageIdentifier must not be null", message(assertThrows(NullPointerException.class,
                    () -> c.uploadImage(null, new byte[1], null))));
            assertEquals("image must not be null", message(assertThrows(NullPointerException.class,
                    () -> c.uploadImage(UUID.randomUUID(), null, null))));
            assertEquals("transactionHistoryRequest must not be null", message(assertThrows(NullPointerException.class,
                    () -> c.getTransactionHistory("1", null, null, GetTransactionHistoryVersion.V2))));
            assertEquals("version must not be null", message(assertThrows(NullPointerException.class,
                    () -> c.getTransactionHistory("1", null, new TransactionHistoryRequest(), null))));
            assertThrows(NullPointerException.class, () -> c.getRefundHistoryPages(null));
            // Values the core refuses (Apple's limits, JSON of the wrong type through a raw collection): an
            // IllegalArgumentException naming the field, before anything is sent (port 9 would refuse the connection).
            InvalidArgumentException tooLong = assertThrows(InvalidArgumentException.class, () -> c.uploadMessage(
                    UUID.randomUUID(), new UploadMessageRequestBody("h".repeat(67), "body")));
            assertTrue(tooLong.getMessage().contains("uploadMessage") && tooLong.getMessage().contains("header"),
                    tooLong.getMessage());
            assertEquals(AppStoreStatus.INVALID_ARGUMENT, tooLong.getStatus());
            List raw = new ArrayList();
            raw.add(42);
            IllegalArgumentException wrongType = assertThrows(IllegalArgumentException.class, () -> c.getTransactionHistory(
                    "1", null, new TransactionHistoryRequest().productIds(raw), GetTransactionHistoryVersion.V2));
            assertTrue(wrongType.getMessage().startsWith("getTransactionHistory: transactionHistoryRequest")
                    && wrongType.getMessage().contains("productIds"), wrongType.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.sendConsumptionInformation("1",
                    new ConsumptionRequest(true, DeliveryStatus.DELIVERED, true).consumptionPercentage(100001)));
            // A huge argument beyond Apple's limit: refused by the core, before anything is sent.
            assertThrows(InvalidArgumentException.class, () -> c.uploadMessage(UUID.randomUUID(),
                    new UploadMessageRequestBody("h", "b".repeat(5_000_000))));
        }
    }

    @Test
    void useAfterClose() throws Exception {
        AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl());
        Pages<RefundHistoryResponse> pages = c.getRefundHistoryPages("2000000000000001");
        Iterator<RefundHistoryResponse> started = pages.iterator();
        assertTrue(started.hasNext());
        c.close();
        c.close(); // idempotent
        assertEquals("AppStoreServerAPIClient is closed",
                message(assertThrows(IllegalStateException.class, () -> c.getTransactionInfo("1"))));
        assertThrows(IllegalStateException.class, c::withEnvironment);
        assertThrows(IllegalStateException.class, () -> c.getRefundHistoryPages("1"));
        assertThrows(IllegalStateException.class, pages::iterator);
        // An iteration started before close() finishes: its call keeps what it needs.
        int n = 0;
        while (started.hasNext()) {
            started.next();
            n++;
        }
        assertEquals(ApiSupport.byEndpoint("getRefundHistory").get("pages").size(), n);
    }

    /** An interrupt during a retry's wait ends the call with the answer it was waiting to retry, the flag kept. */
    @Test
    void interruptEndsTheWait() throws Exception {
        // A 300 s retry wait: far beyond the 60 s join below (>= 4x a loaded run), so only the interrupt ends it; the
        // client's timeout (a deadline for the whole call, which no wait may pass) longer still.
        try (AppStoreServerAPIClient c = at(ApiSupport.mockUrl(), new BaseAppStoreServerAPIClient.Options()
                .retries(3, Duration.ofSeconds(300), Duration.ofSeconds(300)).timeout(Duration.ofSeconds(900)))) {
            AtomicReference<Object> outcome = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    outcome.set(c.getTransactionInfo("flaky5000001-5-javainterrupt"));
                } catch (Exception e) {
                    outcome.set(new Object[] {e, Thread.currentThread().isInterrupted()});
                }
            });
            t.setDaemon(true);
            t.start();
            awaitRetryWait(t); // interrupted in the wait, not in the exchange before it (a timer could race it)
            t.interrupt();
            t.join(60_000);
            assertFalse(t.isAlive(), "the wait was not cut short");
            Object[] got = (Object[]) outcome.get();
            APIException e = (APIException) got[0];
            assertEquals(500, e.getHttpStatusCode());
            assertEquals(5000001L, e.getRawApiError());
            assertTrue(e.getSuppressed()[e.getSuppressed().length - 1] instanceof InterruptedException);
            assertTrue((Boolean) got[1], "the interrupt flag is kept");
        }
        // A wait for the client's rate limit, with no answer yet: InterruptedIOException.
        try (AppStoreServerAPIClient c = at(ApiSupport.mockUrl(), new BaseAppStoreServerAPIClient.Options()
                .rateLimit(Duration.ofSeconds(30), 100))) {
            c.requestTestNotification();
            AtomicReference<Exception> thrown = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    c.requestTestNotification();
                } catch (Exception e) {
                    thrown.set(e);
                }
            });
            t.setDaemon(true);
            t.start();
            awaitRetryWait(t);
            t.interrupt();
            t.join(60_000); // the slot is ~10 s away: a wait not cut short ends with a request, not the exception
            assertTrue(thrown.get() instanceof InterruptedIOException, String.valueOf(thrown.get()));
        }
    }

    /** Returns once t sleeps in the client's wait (BaseAppStoreServerAPIClient.sleep), or fails after 60 s. */
    private static void awaitRetryWait(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline) {
            for (StackTraceElement f : t.getStackTrace()) {
                if (f.getClassName().equals(BaseAppStoreServerAPIClient.class.getName()) && f.getMethodName().equals("sleep")) {
                    return;
                }
            }
            Thread.sleep(10);
        }
        fail("the call never reached its wait");
    }

    @Test
    void manyThreadsOneClient() throws Exception {
        JsonNode want = ApiSupport.expected(ApiSupport.byEndpoint("getTransactionInfo"));
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (AppStoreServerAPIClient c = ApiSupport.client(ApiSupport.mockUrl())) {
            List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                Callable<Integer> task = () -> {
                    for (int i = 0; i < 10; i++) {
                        assertEquals(want, ApiSupport.tree(c.getTransactionInfo("2000000000000001")));
                    }
                    return 10;
                };
                done.add(pool.submit(task));
            }
            int n = 0;
            for (Future<Integer> f : done) {
                n += f.get();
            }
            assertEquals(80, n);
        } finally {
            pool.shutdownNow();
        }
    }

    // ---- the default transport against a hostile server ---------------------------------------------------------------

    static String url(String behaviour) {
        return "http://127.0.0.1:" + main + "/" + behaviour;
    }

    static JsonNode caught() throws Exception {
        try (InputStream in = URI.create(url("caught")).toURL().openStream()) {
            return Support.JSON.readTree(in);
        }
    }

    @Test
    void hostileServer() throws Exception {
        BaseAppStoreServerAPIClient.Options quick = new BaseAppStoreServerAPIClient.Options().timeout(Duration.ofMillis(1500));
        // A redirect is never followed: the 3xx goes to the core, which reports it.
        for (String code : List.of("301", "307", "308")) {
            try (AppStoreServerAPIClient c = at(url("redirect-" + code), new BaseAppStoreServerAPIClient.Options())) {
                APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
                assertEquals(Integer.parseInt(code), e.getHttpStatusCode());
                assertTrue(e.getMessage().contains("redirect"), e.getMessage());
            }
        }
        assertEquals(0, caught().get("count").asInt(), "a redirect was followed");
        // A deadline for the whole exchange: a body dripping one byte every 100 ms fails at the timeout.
        try (AppStoreServerAPIClient c = at(url("drip-100"), quick)) {
            long t0 = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> c.getTransactionInfo("1"));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e instanceof HttpTimeoutException, e.toString());
            // The drip lasts 600 s: only the deadline ends the call; 20x the 1.5 s timeout (>= 4x a loaded run).
            assertTrue(ms >= 1400 && ms < 30000, ms + " ms");
            AppStoreServerException account = (AppStoreServerException) e.getSuppressed()[0];
            assertEquals(FailureReason.TRANSPORT_TIMEOUT, account.getReason());
        }
        try (AppStoreServerAPIClient c = at(url("dripall-100"), quick)) {
            assertThrows(HttpTimeoutException.class, () -> c.getTransactionInfo("1"));
        }
        // The body limit (16 MiB), counted while the body is read, with and without a Content-Length.
        for (String b : List.of("huge-20", "hugecl-20")) {
            try (AppStoreServerAPIClient c = at(url(b), new BaseAppStoreServerAPIClient.Options())) {
                IOException e = assertThrows(IOException.class, () -> c.getTransactionInfo("1"));
                assertTrue(e.getMessage().contains("larger than"), b + ": " + e);
            }
        }
        // A gzip bomb is not inflated: its bytes go to the core, which does not decode them.
        try (AppStoreServerAPIClient c = at(url("gzip-1024"), new BaseAppStoreServerAPIClient.Options())) {
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
            assertEquals(FailureReason.UNDECODABLE_RESPONSE, e.getReason());
        }
        // No answer at all.
        try (AppStoreServerAPIClient c = at(url("nostatus"), quick)) {
            assertThrows(IOException.class, () -> c.getTransactionInfo("1"));
        }
        // Apple's message, hostile: control characters removed from the message.
        try (AppStoreServerAPIClient c = at(url("errmsg-64"), new BaseAppStoreServerAPIClient.Options())) {
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
            assertEquals(4000006L, e.getRawApiError());
            assertFalse(e.getMessage().chars().anyMatch(ch -> ch < 0x20 && ch != ' '), "control characters in the message");
            assertTrue(e.getMessage().length() < 4096, "message of " + e.getMessage().length() + " characters");
        }
        // Unreachable.
        try (AppStoreServerAPIClient c = at("http://127.0.0.1:9", quick)) {
            IOException e = assertThrows(IOException.class, () -> c.getTransactionInfo("1"));
            AppStoreServerException account = (AppStoreServerException) e.getSuppressed()[0];
            assertEquals(FailureReason.TRANSPORT_UNREACHABLE, account.getReason());
        }
    }
}
