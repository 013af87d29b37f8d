package appstoreserver.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A transport over java.net.http.HttpClient with the rules every transport of the library keeps
 * (CONTRIBUTING.md, docs/hardening.md): the timeout is a deadline for the whole exchange (connect, headers and body),
 * the body is counted while it is read and the exchange fails once it passes the library's limit for it
 * (APPSTORE_LIMIT_OCSP_RESPONSE_BYTES for OCSP, APPSTORE_LIMIT_API_RESPONSE_BYTES for the API; a Content-Length over it
 * fails before any read), and no redirect is followed: the 3xx is reported as it is (the library judges it), and an
 * answer that came through a redirect anyway (a client configured to follow them) fails the exchange.
 *
 * <p>The exchange runs on the thread that called the library (the callback is synchronous); it waits for the
 * HttpClient's future with the remaining time and cancels it when the deadline passes.
 */
public final class JdkTransport implements TransportBridge {
    private final HttpClient client;

    public JdkTransport(HttpClient client) {
        this.client = client != null ? client : defaultClient();
    }

    /** HTTP/1.1 (OCSP responders are plain http; no h2c upgrade attempt), redirects never followed. */
    public static HttpClient defaultClient() {
        return HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).version(HttpClient.Version.HTTP_1_1)
                .build();
    }

    /** Why a body was refused: it passed the limit. */
    static final class BodyTooLarge extends IOException {
        private static final long serialVersionUID = 1L;

        BodyTooLarge(long limit) {
            super("the response body is larger than " + limit + " bytes");
        }
    }

    /** The outcome of one exchange: an answer (status, headers as name/value pairs, body) or a transport result. */
    public static final class Result {
        public final int result;
        public final int status;
        public final List<String[]> headers;
        public final byte[] body;

        Result(int result, int status, List<String[]> headers, byte[] body) {
            this.result = result;
            this.status = status;
            this.headers = headers;
            this.body = body;
        }

        static Result failed(int result) {
            return new Result(result, 0, List.of(), new byte[0]);
        }
    }

    @Override
    public int exchange(byte[] method, byte[] url, byte[] headers, byte[] body, int timeoutMs, long response) {
        Result r = send(new String(method, StandardCharsets.UTF_8), new String(url, StandardCharsets.UTF_8),
                new String(headers, StandardCharsets.UTF_8), body, timeoutMs, Abi.http_response_body_limit(response));
        if (r.result != AbiConstants.TRANSPORT_RESULT_OK) {
            return r.result;
        }
        try {
            Abi.http_response_set_status(response, r.status);
            for (String[] h : r.headers) {
                Abi.http_response_add_header(response, h[0].getBytes(StandardCharsets.UTF_8),
                        h[1].getBytes(StandardCharsets.UTF_8));
            }
            if (r.body.length > 0) {
                Abi.http_response_append_body(response, r.body);
            }
        } catch (NativeError e) {
            return AbiConstants.TRANSPORT_RESULT_FAILED;
        }
        return AbiConstants.TRANSPORT_RESULT_OK;
    }

    /**
     * One exchange: headers as "Name: value\r\n" lines (the library's form), the timeout a deadline for all of it,
     * the body refused past limit bytes. Never throws for network trouble: the result says what happened.
     */
    public Result send(String method, String url, String headers, byte[] body, int timeoutMs, long limit) {
        List<String[]> list = new ArrayList<>();
        for (String line : headers.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                list.add(new String[] {line.substring(0, colon).trim(), line.substring(colon + 1).trim()});
            }
        }
        Answer a;
        try {
            a = fetch(method, url, list, body, timeoutMs, limit);
        } catch (IllegalArgumentException e) {
            return Result.failed(AbiConstants.TRANSPORT_RESULT_FAILED);
        } catch (IOException e) {
            return Result.failed(classify(e));
        }
        return new Result(AbiConstants.TRANSPORT_RESULT_OK, a.status, a.headers, a.body);
    }

    /** An answer: its status, headers (name and value, in the order received) and body. */
    public static final class Answer {
        public final int status;
        public final List<String[]> headers;
        public final byte[] body;

        Answer(int status, List<String[]> headers, byte[] body) {
            this.status = status;
            this.headers = headers;
            this.body = body;
        }
    }

    /**
     * One exchange, throwing what went wrong: HttpTimeoutException once the deadline (timeoutMs from now, for all of
     * it) passes, InterruptedIOException when the thread is interrupted (its flag kept), an IOException for a body
     * over limit bytes or an answer reached through a redirect, else the HttpClient's own exception. A plain http://
     * URL is asked in HTTP/1.1 (no h2c upgrade). Headers HttpClient sets itself (Host, Content-Length, ...) are
     * skipped; an unusable URL or header is an IllegalArgumentException.
     */
    public Answer fetch(String method, String url, List<String[]> headers, byte[] body, long timeoutMs, long limit)
            throws IOException {
        long ms = Math.max(1, timeoutMs);
        long deadline = System.nanoTime() + ms * 1_000_000L;
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMillis(ms));
        if (url.regionMatches(true, 0, "http:", 0, 5)) {
            b.version(HttpClient.Version.HTTP_1_1);
        }
        for (String[] h : headers) {
            try {
                b.header(h[0], h[1]);
            } catch (IllegalArgumentException restricted) {
                // Host, Content-Length, Connection, ...: HttpClient sets them itself.
            }
        }
        b.method(method, body == null || body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(body));
        HttpRequest request = b.build();
        CompletableFuture<HttpResponse<byte[]>> future =
                client.sendAsync(request, info -> new Limited(info, limit, deadline));
        HttpResponse<byte[]> answer;
        try {
            long left = deadline - System.nanoTime();
            answer = future.get(Math.max(0, left), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new HttpTimeoutException("no complete answer within " + ms + " ms");
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for the answer");
        } catch (CancellationException e) {
            throw new IOException("the exchange was cancelled", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            if (c instanceof IOException) {
                throw (IOException) c;
            }
            throw new IOException(c.toString(), c);
        }
        if (answer.previousResponse().isPresent()) {
            throw new IOException("the answer came through a redirect, which is never followed");
        }
        List<String[]> list = new ArrayList<>();
        for (Map.Entry<String, List<String>> h : answer.headers().map().entrySet()) {
            String name = h.getKey();
            if (name.startsWith(":") || name.indexOf('\0') >= 0) {
                continue;
            }
            for (String v : h.getValue()) {
                if (v.indexOf('\0') < 0) {
                    list.add(new String[] {name, v});
                }
            }
        }
        byte[] data = answer.body();
        return new Answer(answer.statusCode(), list, data == null ? new byte[0] : data);
    }

    /**
     * The transport result an exchange's exception stands for: UNREACHABLE (no connection: refused, unknown host,
     * connect timeout), TIMEOUT (HttpTimeoutException, a socket timeout), else FAILED.
     */
    public static int classify(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof BodyTooLarge) {
                return AbiConstants.TRANSPORT_RESULT_FAILED;
            }
            if (c instanceof HttpConnectTimeoutException || c instanceof ConnectException
                    || c instanceof UnknownHostException || c instanceof UnresolvedAddressException
                    || c instanceof java.net.NoRouteToHostException) {
                return AbiConstants.TRANSPORT_RESULT_UNREACHABLE;
            }
            if (c instanceof HttpTimeoutException || c instanceof java.net.SocketTimeoutException) {
                return AbiConstants.TRANSPORT_RESULT_TIMEOUT;
            }
        }
        return AbiConstants.TRANSPORT_RESULT_FAILED;
    }

    /** Collects the body, counting bytes against the limit and checking the deadline as they arrive. */
    static final class Limited implements HttpResponse.BodySubscriber<byte[]> {
        private final CompletableFuture<byte[]> result = new CompletableFuture<>();
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final long limit;
        private final long deadline;
        private final boolean declaredTooLarge;
        private Flow.Subscription subscription;
        private long total;

        Limited(HttpResponse.ResponseInfo info, long limit, long deadline) {
            this.limit = limit;
            this.deadline = deadline;
            long declared = info.headers().firstValueAsLong("content-length").orElse(-1L);
            this.declaredTooLarge = declared > limit
                    && info.headers().firstValue("content-encoding").orElse("identity").equalsIgnoreCase("identity");
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            if (declaredTooLarge) {
                s.cancel();
                result.completeExceptionally(new BodyTooLarge(limit));
                return;
            }
            s.request(1);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            if (result.isDone()) {
                return;
            }
            for (ByteBuffer b : items) {
                int n = b.remaining();
                total += n;
                if (total > limit) {
                    subscription.cancel();
                    result.completeExceptionally(new BodyTooLarge(limit));
                    return;
                }
                byte[] chunk = new byte[n];
                b.get(chunk);
                out.write(chunk, 0, n);
            }
            if (System.nanoTime() - deadline > 0) {
                subscription.cancel();
                result.completeExceptionally(new HttpTimeoutException("the exchange passed its deadline"));
                return;
            }
            subscription.request(1);
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            result.complete(out.toByteArray());
        }

        @Override
        public CompletionStage<byte[]> getBody() {
            return result;
        }
    }
}
