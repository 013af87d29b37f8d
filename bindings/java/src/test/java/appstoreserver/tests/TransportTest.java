package appstoreserver.tests;

import appstoreserver.internal.AbiConstants;
import appstoreserver.internal.JdkTransport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The HttpClient transport against a hostile server (Tests/support/hostile_http.py), with the rules every transport
 * keeps: redirects reported, never followed (and an answer reached through one refused); the timeout a deadline for
 * the whole exchange (a server dripping one byte at a time cannot hold the caller); the body limit enforced while
 * reading (a Content-Length over it fails before any read; exactly the limit passes); nothing inflated.
 */
class TransportTest {
    static Support.Served hostile;
    static int main;
    static final String HEADERS = "Content-Type: application/ocsp-request\r\nAccept: application/ocsp-response\r\n";
    static final long MIB = 1 << 20;

    @BeforeAll
    static void start() {
        hostile = new Support.Served("PORT", "hostile_http.py", "--lifetime", "600");
        main = Integer.parseInt(hostile.words[0]);
    }

    @AfterAll
    static void stop() {
        hostile.close();
    }

    static String url(String behaviour) {
        return "http://127.0.0.1:" + main + "/" + behaviour + "/ocsp";
    }

    static JdkTransport.Result send(JdkTransport t, String behaviour, int timeoutMs, long limit) {
        return t.send("POST", url(behaviour), HEADERS, new byte[] {0x30, 0}, timeoutMs, limit);
    }

    static long caught() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + main + "/caught")).build(), HttpResponse.BodyHandlers.ofString());
        return Support.JSON.readTree(r.body()).get("count").asLong();
    }

    @Test
    void redirectsAreReportedNeverFollowed() throws Exception {
        JdkTransport t = new JdkTransport(null);
        long before = caught();
        for (int code : new int[] {301, 302, 303, 307, 308}) {
            JdkTransport.Result r = send(t, "redirect-" + code, 10000, MIB);
            assertEquals(AbiConstants.TRANSPORT_RESULT_OK, r.result);
            assertEquals(code, r.status);
            assertTrue(r.headers.stream().anyMatch(h -> h[0].equalsIgnoreCase("location") && h[1].contains("/caught/")));
        }
        assertEquals(before, caught(), "the transport followed a redirect");
        // A client configured to follow them: the answer came from elsewhere, so the exchange fails.
        JdkTransport following = new JdkTransport(HttpClient.newBuilder().followRedirects(HttpClient.Redirect.ALWAYS).build());
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, send(following, "redirect-307", 10000, MIB).result);
    }

    @Test
    void timeoutIsADeadlineForTheWholeExchange() {
        JdkTransport t = new JdkTransport(null);
        for (String b : new String[] {"drip-100", "dripall-100"}) {
            long t0 = System.nanoTime();
            JdkTransport.Result r = send(t, b, 1000, MIB);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(AbiConstants.TRANSPORT_RESULT_TIMEOUT, r.result, b);
            // The drip lasts 600 s: 30x the deadline is >= 4x a loaded run and far below it.
            assertTrue(ms < 30000, b + " held the caller " + ms + " ms with a 1 s deadline");
        }
    }

    @Test
    void bodyLimit() {
        JdkTransport t = new JdkTransport(null);
        // A TiB: read to its end, it would outlast the 30 s timeout (TIMEOUT); FAILED shows the limit stopped the read.
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, send(t, "huge-1048576", 30000, MIB).result, "a TiB without length");
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, send(t, "hugecl-1048576", 30000, MIB).result, "a length over the limit");
        JdkTransport.Result exact = send(t, "hugecl-1", 30000, MIB);
        assertEquals(AbiConstants.TRANSPORT_RESULT_OK, exact.result, "exactly the limit is accepted");
        assertEquals(MIB, exact.body.length);
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, send(t, "hugecl-2", 30000, MIB).result);
        JdkTransport.Result gz = send(t, "gzip-1", 30000, MIB);
        assertEquals(AbiConstants.TRANSPORT_RESULT_OK, gz.result);
        assertTrue(gz.body.length < 64 * 1024, "the gzip body was inflated (" + gz.body.length + " bytes)");
    }

    @Test
    void noAnswer() throws Exception {
        JdkTransport t = new JdkTransport(null);
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, send(t, "nostatus", 10000, MIB).result);
        JdkTransport.Result e = send(t, "status-500", 10000, MIB);
        assertEquals(AbiConstants.TRANSPORT_RESULT_OK, e.result);
        assertEquals(500, e.status);
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        assertEquals(AbiConstants.TRANSPORT_RESULT_UNREACHABLE,
                t.send("POST", "http://127.0.0.1:" + port + "/ocsp", HEADERS, new byte[0], 5000, MIB).result);
        assertEquals(AbiConstants.TRANSPORT_RESULT_FAILED, t.send("POST", "not a url", HEADERS, new byte[0], 5000, MIB).result);
    }
}
