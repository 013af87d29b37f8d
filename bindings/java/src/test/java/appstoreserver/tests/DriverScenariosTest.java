package appstoreserver.tests;

import appstoreserver.AppStoreServerException;
import appstoreserver.client.APIException;
import appstoreserver.client.Answered;
import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.client.BaseAppStoreServerAPIClient;
import appstoreserver.client.Pages;
import appstoreserver.client.UncheckedAPIException;
import appstoreserver.internal.AbiConstants;
import appstoreserver.internal.JdkTransport;
import appstoreserver.model.Environment;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The call driver's shared scenarios (Tests/driver/scenarios.json, read its "doc") through the Java client's own
 * loop: each SEND reaches makeRequest with Apple's arguments (checked against the scenario's method and full URL),
 * each WAIT reaches the client's sleep, the clock is the client's nowMillis serving each step's `now`, and the call
 * ends with the scenario's answer (through withEnvironment(), the ...Pages methods for "pages") or its error. The
 * scenarios marked driverOnly misuse the driver, which a client loop never does: the C and Swift runners run them.
 *
 * <p>A scripted transport failure is thrown from makeRequest as the exception the loop reports as that result
 * (HttpTimeoutException for TIMEOUT, ConnectException for UNREACHABLE, IOException for FAILED); the client throws it
 * on unchanged, with the core's account of the failure as a suppressed AppStoreServerException, which is where the
 * scenario's status, reason and message are looked for.
 */
class DriverScenariosTest {
    static final JsonNode SCENARIOS = Support.json(Support.REPO.resolve("Tests/driver/scenarios.json")).get("scenarios");
    static final Map<String, List<String>> REASON_STATUSES = new HashMap<>();

    static {
        for (JsonNode r : Support.json(Support.REPO.resolve("spec/errors.json")).get("reasons")) {
            List<String> s = new ArrayList<>();
            r.get("statuses").forEach(x -> s.add(x.asText()));
            REASON_STATUSES.put(r.get("name").asText(), s);
        }
    }

    static IOException failure(String result, String message) {
        switch (result) {
            case "TIMEOUT":
                return new HttpTimeoutException(message);
            case "UNREACHABLE":
                return new ConnectException(message);
            default:
                return new IOException(message);
        }
    }

    @Test
    void everyScenarioIsRun() {
        List<String> driverOnly = new ArrayList<>();
        List<String> paged = new ArrayList<>();
        for (JsonNode s : SCENARIOS) {
            if (s.path("driverOnly").asBoolean()) {
                driverOnly.add(s.get("name").asText());
            } else if (s.path("pages").asBoolean()) {
                paged.add(s.get("endpoint").asText());
            }
        }
        assertTrue(SCENARIOS.size() >= 21);
        assertEquals(List.of("misuse: next before the outcome, and after the end"), driverOnly,
                "a new driverOnly scenario: is it really one?");
        assertEquals(List.of("getNotificationHistory", "getRefundHistory", "getTransactionHistory"),
                paged.stream().distinct().sorted().collect(java.util.stream.Collectors.toList()));
        // What the loop reports for each exception makeRequest throws.
        assertEquals(AbiConstants.TRANSPORT_RESULT_TIMEOUT, JdkTransport.classify(failure("TIMEOUT", "x")));
        assertEquals(AbiConstants.TRANSPORT_RESULT_UNREACHABLE, JdkTransport.classify(failure("UNREACHABLE", "x")));
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, JdkTransport.classify(failure("FAILED", "x")));
    }

    @TestFactory
    Stream<DynamicTest> scenarios() {
        List<DynamicTest> out = new ArrayList<>();
        for (JsonNode s : SCENARIOS) {
            if (!s.path("driverOnly").asBoolean()) {
                out.add(DynamicTest.dynamicTest(s.get("name").asText(), () -> run(s)));
            }
        }
        return out.stream();
    }

    /** One scenario's steps, served in order to the client loop's hooks. */
    static final class Script {
        final String name;
        final JsonNode steps;
        int i;
        IOException thrown; // the transport failure makeRequest threw
        JsonNode answered; // the last done, until the loop goes on or stops

        Script(JsonNode scenario) {
            this.name = scenario.get("name").asText();
            this.steps = scenario.get("steps");
        }

        /** The loop asked for more after an answer: the driver must have said there is a next page. */
        void wentOn() {
            if (answered != null) {
                assertTrue(answered.get("hasNextPage").asBoolean(), name + ": the loop went on after the last page");
                answered = null;
            }
        }

        JsonNode take(String kind) {
            wentOn();
            assertTrue(i < steps.size(), name + ": the loop went on after the last step (" + kind + ")");
            JsonNode step = steps.get(i);
            assertTrue(step.has(kind), name + ": step " + i + " is " + step + ", the loop did " + kind);
            i++;
            return step.get(kind);
        }

        long now() {
            wentOn();
            assertTrue(i < steps.size(), name + ": the loop asked the clock after the last step");
            JsonNode step = steps.get(i);
            assertTrue(step.has("now"), name + ": step " + i + " gives no time, the loop asked for it");
            if (step.has("receive")) { // the answer arrives: the loop reports it with this time
                i++;
            }
            return step.get("now").asLong();
        }

        void sleep(long ms) {
            assertEquals(take("wait").asLong(), ms, name + ": slept a different time than the driver says");
        }

        Map.Entry<Integer, Object[]> execute(String method, String url, Map<String, String> headers, long timeoutMs)
                throws IOException {
            JsonNode want = take("send");
            assertEquals(want.get("method").asText(), method, name + ": step " + (i - 1));
            assertEquals(want.get("url").asText(), url, name + ": step " + (i - 1));
            if (want.has("timeoutMs")) { // the time left before the call's deadline
                assertEquals(want.get("timeoutMs").asLong(), timeoutMs, name + ": the request's timeout");
            }
            assertTrue(headers.get("Authorization").startsWith("Bearer "), name);
            assertTrue(i < steps.size(), name + ": no outcome scripted for the send");
            JsonNode step = steps.get(i);
            if (step.has("fail")) {
                i++;
                thrown = failure(step.get("fail").get("result").asText(), step.get("fail").get("message").asText());
                throw thrown;
            }
            assertTrue(step.has("receive"), name + ": step " + i + " is " + step + " after a send");
            JsonNode r = step.get("receive");
            String body = r.has("bodyText") ? r.get("bodyText").asText() : r.get("body").toString();
            Map<String, List<String>> h = new LinkedHashMap<>();
            r.path("headers").fields().forEachRemaining(e -> h.put(e.getKey(), List.of(e.getValue().asText())));
            return Map.entry(r.get("status").asInt(), new Object[] {body, h});
        }

        void done(Object value, Environment environment) {
            JsonNode want = take("done");
            assertEquals(want.get("json"), ApiSupport.tree(value), name);
            assertEquals(Environment.valueOf(want.get("environment").asText()), environment, name);
            answered = want;
        }

        void stopped() {
            assertTrue(answered != null && !answered.get("hasNextPage").asBoolean(), name + ": stopped early");
            answered = null;
        }

        void error(Exception e) {
            JsonNode want = take("error");
            String message;
            if (thrown != null) { // a transport failure: makeRequest's exception, thrown on with the core's account
                assertSame(thrown, e, name);
                assertTrue(REASON_STATUSES.get(want.get("reason").asText()).contains(want.get("status").asText()), name);
                assertEquals(1, e.getSuppressed().length, name);
                AppStoreServerException account = (AppStoreServerException) e.getSuppressed()[0];
                assertEquals(want.get("status").asText(), account.getStatus().name(), name);
                assertEquals(want.get("reason").asText(), account.getReason().getReasonName(), name);
                message = account.getMessage();
            } else {
                assertTrue(e instanceof APIException, name + ": threw " + e);
                APIException a = (APIException) e;
                Map<String, Object> got = new LinkedHashMap<>();
                got.put("status", a.getAppStoreStatus().name());
                got.put("reason", a.getReason().getReasonName());
                got.put("httpStatus", a.getHttpStatusCode());
                got.put("apiErrorCode", a.getRawApiError());
                got.put("retryAfterMs", a.getRetryAfter());
                for (String k : got.keySet()) { // as the C and Swift runners: the fields listed
                    if (want.has(k)) {
                        Object w = want.get(k).isNumber() ? (Object) want.get(k).asLong() : want.get(k).asText();
                        Object g = got.get(k) instanceof Integer ? (Object) ((Integer) got.get(k)).longValue() : got.get(k);
                        assertEquals(w, g, name + ": " + k + " (" + a.getMessage() + ")");
                    }
                }
                message = a.getMessage();
            }
            for (JsonNode t : want.path("messageContains")) {
                assertTrue(message.contains(t.asText()), name + ": " + t + " not in " + message);
            }
            for (JsonNode t : want.path("messageLacks")) {
                assertTrue(!message.contains(t.asText()), name + ": " + t + " in " + message);
            }
        }

        void finished() {
            assertEquals(steps.size(), i, name + ": ended at step " + i + " of " + steps.size());
        }
    }

    /** The scenario's client: Apple's base URLs, the test key, its options; makeRequest, clock and sleep scripted. */
    static final class Scripted extends AppStoreServerAPIClient {
        final Script script;

        Scripted(JsonNode scenario, Script script) {
            super(ApiSupport.p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE,
                    Environment.valueOf(scenario.get("client").get("environment").asText()), options(scenario.get("client")));
            this.script = script;
        }

        static BaseAppStoreServerAPIClient.Options options(JsonNode o) {
            BaseAppStoreServerAPIClient.Options out = new BaseAppStoreServerAPIClient.Options();
            if (o.has("timeoutMs")) {
                out.timeout(Duration.ofMillis(o.get("timeoutMs").asLong()));
            }
            if (o.has("maxRetries")) {
                out.retries(o.get("maxRetries").asInt(), Duration.ofMillis(o.get("initialBackoffMs").asLong()),
                        Duration.ofMillis(o.get("maxBackoffMs").asLong()));
            }
            if (o.path("sandboxFallback").asBoolean()) {
                out.sandboxFallback(true);
            }
            if (o.has("rateLimit")) {
                out.rateLimit(Duration.ofMillis(o.get("rateLimit").get("maxWaitMs").asLong()),
                        o.get("rateLimit").get("sharePercent").asInt());
            }
            return out;
        }

        @Override
        protected long nowMillis() {
            return script.now();
        }

        @Override
        protected void sleep(long millis) {
            script.sleep(millis);
        }

        /** Apple's hook: the path after the request's base URL and the query as lists, rebuilt here into the URL. */
        @Override
        protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> query,
                                                    Map<String, String> headers, String contentType, byte[] body)
                throws IOException {
            StringBuilder url = new StringBuilder(getRequestBaseUrl()).append(path);
            char sep = '?';
            for (Map.Entry<String, List<String>> e : query.entrySet()) {
                for (String v : e.getValue()) {
                    url.append(sep).append(encode(e.getKey())).append('=').append(encode(v));
                    sep = '&';
                }
            }
            Map.Entry<Integer, Object[]> r = script.execute(method, url.toString(), headers, getRequestTimeoutMillis());
            String text = (String) r.getValue()[0];
            @SuppressWarnings("unchecked")
            Map<String, List<String>> h = (Map<String, List<String>>) r.getValue()[1];
            int status = r.getKey();
            return new HttpResponseInterface() {
                @Override
                public int statusCode() {
                    return status;
                }

                @Override
                public Reader body() {
                    return new StringReader(text);
                }

                @Override
                public Map<String, List<String>> headers() {
                    return h;
                }

                @Override
                public void close() {
                }
            };
        }

        static String encode(String s) {
            StringBuilder b = new StringBuilder();
            for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
                int c = x & 0xff;
                if (Character.isLetterOrDigit(c) && c < 128 || "-._~".indexOf(c) >= 0) {
                    b.append((char) c);
                } else {
                    b.append(String.format("%%%02X", c));
                }
            }
            return b.toString();
        }
    }

    static void run(JsonNode scenario) throws Exception {
        Script script = new Script(scenario);
        boolean pages = scenario.path("pages").asBoolean();
        ApiSupport.Call call = ApiSupport.javaCall(scenario.get("endpoint").asText(), scenario.get("params"), pages);
        try (Scripted c = new Scripted(scenario, script)) {
            try {
                if (pages) {
                    Pages<?> all = (Pages<?>) call.invoke(c.withEnvironment());
                    for (Iterator<?> it = all.iterator(); it.hasNext();) {
                        Answered<?> a = (Answered<?>) it.next();
                        assertNotNull(a);
                        script.done(a.getValue(), a.getEnvironment());
                    }
                } else {
                    Answered<?> a = (Answered<?>) call.invoke(c.withEnvironment());
                    script.done(a.getValue(), a.getEnvironment());
                }
                script.stopped();
            } catch (UncheckedAPIException e) {
                script.error(e.getCause());
            } catch (UncheckedIOException e) {
                script.error(e.getCause());
            } catch (APIException | IOException e) {
                script.error(e);
            } catch (RuntimeException e) {
                fail(script.name + ": threw " + e, e);
            }
        }
        script.finished();
    }
}
