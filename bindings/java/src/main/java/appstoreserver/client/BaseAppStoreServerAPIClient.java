package appstoreserver.client;

import appstoreserver.AppStoreServerException;
import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.InvalidArgumentException;
import appstoreserver.internal.Abi;
import appstoreserver.internal.AbiConstants;
import appstoreserver.internal.Args;
import appstoreserver.internal.Cleaners;
import appstoreserver.internal.Errors;
import appstoreserver.internal.JdkTransport;
import appstoreserver.internal.Json;
import appstoreserver.internal.NativeError;
import appstoreserver.internal.NativeHandle;
import appstoreserver.internal.Signing;
import appstoreserver.model.Environment;
import appstoreserver.signature.SigningKey;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.lang.ref.Cleaner;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * The App Store Server API client with the HTTP left to a subclass (Apple's abstract class): every endpoint method
 * (Apple's names, parameters and checked exceptions), and {@link #makeRequest}, which a subclass implements to
 * perform one request ({@link AppStoreServerAPIClient} does it with java.net.http).
 *
 * <p>Each call is run by the native core's call driver (appstore_api_call_*): it checks the arguments against Apple's
 * limits, builds each request (method, percent-encoded URL, headers with a fresh ES256 bearer token, body), judges
 * each answer, and decides what comes next: a retry (HTTP 429 and Apple's retryable codes, after a backoff or
 * Retry-After; {@link Options#retries}), the same lookup asked in Sandbox ({@link Options#sandboxFallback}), a wait
 * for the client's rate limit ({@link Options#rateLimit}), the following page of a ...Pages method. This class only
 * moves bytes through makeRequest, sleeps when the driver says so ({@link #sleep}, interruptible: an interrupt ends
 * the call with the last answer's APIException), gives the driver its clock ({@link #nowMillis}), and decodes the
 * answer into Apple's model with Jackson.
 *
 * <p>Immutable and thread-safe: share one client across threads. It holds native memory: {@link #close()} frees it
 * (calls in progress finish first; later calls throw IllegalStateException); a client dropped without close() is
 * freed once collected.
 */
public abstract class BaseAppStoreServerAPIClient extends AppStoreServerAPIEndpoints implements AutoCloseable {
    /** Apple's base URLs: the core's (appstore_api_base_url), their one home. */
    private static final String SANDBOX_URL = baseUrl(Environment.SANDBOX);
    /** The content type Apple's library hands makeRequest for a JSON body. */
    private static final String JSON = "application/json; charset=utf-8";
    private static final String PNG = "image/png";
    private static final long BODY_LIMIT = AbiConstants.LIMIT_API_RESPONSE_BYTES;
    /** The request the calling thread is sending (for the default makeRequest and getRequestBaseUrl). */
    private static final ThreadLocal<Prepared> CURRENT = new ThreadLocal<>();

    /**
     * Options beyond Apple's constructors (the C client options): another base URL (a test server, a proxy), the
     * timeout (a deadline for the whole call, default 30 s), retries, the Sandbox fallback, the
     * client's rate limit, and the HttpClient of {@link AppStoreServerAPIClient}. Setters return this.
     */
    public static final class Options {
        String baseUrl;
        long timeoutMs = 30_000;
        int maxRetries;
        long initialBackoffMs = 500;
        long maxBackoffMs = 30_000;
        boolean sandboxFallback;
        String sandboxBaseUrl;
        boolean rateLimit;
        long rateLimitMaxWaitMs = 10_000;
        int rateLimitSharePercent = 100;
        HttpClient httpClient;

        /** Replaces the environment's base URLs, Advanced Commerce's included (http:// or https://). */
        public Options baseUrl(String baseUrl) {
            this.baseUrl = Args.notNull(baseUrl, "baseUrl");
            return this;
        }

        /**
         * The client's timeout (1 ms to 4294967295 ms, default 30 s): a deadline for the whole call (each page of a
         * {@code ...Pages} call): the external signer, rate-limit and retry waits and every exchange (connecting to the
         * last byte of the body, each given the time left) count against it. A wait past it is not made and a signer
         * still busy at it is abandoned: {@link APIException} with {@code TRANSPORT_ERROR} / {@code DEADLINE_EXCEEDED}.
         */
        public Options timeout(Duration timeout) {
            this.timeoutMs = millis(timeout, "timeout", 1);
            return this;
        }

        /**
         * Retries of HTTP 429 and of Apple's retryable error codes (0 to 100; default 0: none): the wait starts at
         * initialBackoff and doubles up to maxBackoff; a Retry-After makes the retry wait until the time it names,
         * and one further away than maxBackoff is not waited for (the call fails with that answer). A request that got
         * no answer is never retried (it may have reached Apple).
         */
        public Options retries(int maxRetries, Duration initialBackoff, Duration maxBackoff) {
            if (maxRetries < 0 || maxRetries > 100) {
                throw new IllegalArgumentException("maxRetries must be from 0 to 100, got " + maxRetries);
            }
            this.initialBackoffMs = millis(initialBackoff, "initialBackoff", 0);
            this.maxBackoffMs = millis(maxBackoff, "maxBackoff", 0);
            this.maxRetries = maxRetries;
            return this;
        }

        /**
         * Production clients: a lookup (transaction info, history, statuses, refund history, app transaction info)
         * that Production answers with transactionIdNotFound (4040010), or with HTTP 401 (its answer for an app never
         * released there), is asked again in Sandbox, as Apple advises (App Review buys in Sandbox). Later pages stay
         * in the environment that answered; client.withEnvironment() tells which one it was. When Sandbox fails too,
         * its APIException says what Production answered (Production's is among its suppressed exceptions).
         */
        public Options sandboxFallback(boolean enabled) {
            this.sandboxFallback = enabled;
            if (!enabled) {
                this.sandboxBaseUrl = null;
            }
            return this;
        }

        /** The Sandbox fallback, asking Sandbox at this base URL instead of Apple's (e.g. a second test server). */
        public Options sandboxFallback(String sandboxBaseUrl) {
            this.sandboxBaseUrl = Args.notNull(sandboxBaseUrl, "sandboxBaseUrl");
            this.sandboxFallback = true;
            return this;
        }

        /**
         * The client's own rate limit: Apple's published per-endpoint limits (Sandbox a tenth) times sharePercent / 100
         * (1 to 100, e.g. 50 when two processes share the key), one budget per endpoint and environment per client,
         * shared by its threads. Every attempt waits for a slot on the calling thread, up to maxWait (0 to
         * 4294967295 ms; default 10 s); when the next slot is further away, the call fails at once with APIException
         * (reason LOCAL_RATE_LIMIT, HTTP status 0, getRetryAfter() the slot's time) and nothing is sent.
         */
        public Options rateLimit(Duration maxWait, int sharePercent) {
            if (sharePercent < 1 || sharePercent > 100) {
                throw new IllegalArgumentException("sharePercent must be from 1 to 100, got " + sharePercent);
            }
            this.rateLimitMaxWaitMs = millis(maxWait, "maxWait", 0);
            this.rateLimitSharePercent = sharePercent;
            this.rateLimit = true;
            return this;
        }

        /**
         * The HttpClient AppStoreServerAPIClient sends with (a proxy, an SSLContext, an executor); the default is one
         * shared client that never follows redirects. Whatever the client: the timeout is a deadline for the whole
         * exchange, the body is refused past the library's limit while it is read, and an answer reached through a
         * redirect is refused.
         */
        public Options httpClient(HttpClient client) {
            this.httpClient = Args.notNull(client, "client");
            return this;
        }

        private static long millis(Duration d, String name, long min) {
            Args.notNull(d, name);
            long ms;
            try {
                ms = d.toMillis();
            } catch (ArithmeticException e) {
                ms = Long.MAX_VALUE;
            }
            if (d.isNegative() || ms < min || ms > 4294967295L) {
                throw new IllegalArgumentException(name + " must be from " + min + " ms to 4294967295 ms, got " + d);
            }
            return ms;
        }
    }

    /**
     * The answer makeRequest returns (Apple's interface): its status and body. Beyond Apple, headers(): the answer's
     * headers, which give the library Retry-After and come back on APIException (the default returns none).
     */
    protected interface HttpResponseInterface extends Closeable {
        /**
         * @return The HTTP status code of the response
         */
        int statusCode();

        /**
         * A nullable {@link Reader} containing the response body
         *
         * @return The response body, if it exists
         */
        Reader body();

        /** The answer's headers, each name with its values (beyond Apple; default: none). */
        default Map<String, List<String>> headers() {
            return Map.of();
        }
    }

    /** A response whose body is already bytes (the default transport's): read without a Reader. */
    interface RawBody {
        byte[] rawBody();
    }

    protected final String url;
    private final Environment environment;
    private final String sandboxUrl;
    private final long timeoutMs;
    private final NativeHandle client;
    private final Cleaner.Cleanable cleanable;
    private final SigningKey ownedKey;
    private final BearerTokenAuthenticatorInterface customTokens;
    final HttpClient httpClient;

    /**
     * Create an App Store Server API client (Apple's constructor).
     *
     * @param signingKey Your private key downloaded from App Store Connect
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect
     * @param bundleId Your app's bundle ID
     * @param environment The environment to target
     * @throws IllegalArgumentException Xcode, which is not a supported environment
     * @throws AppStoreServerException the key cannot be used (KEY_NOT_PEM, KEY_NOT_EC, ...)
     */
    public BaseAppStoreServerAPIClient(String signingKey, String keyId, String issuerId, String bundleId,
                                       Environment environment) {
        this(signingKey, keyId, issuerId, bundleId, environment, new Options());
    }

    /** Apple's constructor with {@link Options} (beyond Apple). */
    public BaseAppStoreServerAPIClient(String signingKey, String keyId, String issuerId, String bundleId,
                                       Environment environment, Options options) {
        this(newKey(signingKey, keyId, issuerId, bundleId, environment, options), true, null, environment, options);
    }

    /**
     * Create a client whose requests carry the tokens of bearerTokenAuthenticator (Apple's constructor). A
     * {@link BearerTokenAuthenticator} signs them with its key in the native core (with a fresh token for each
     * attempt); another implementation is asked for a token before each attempt, and that token is sent.
     */
    public BaseAppStoreServerAPIClient(BearerTokenAuthenticatorInterface bearerTokenAuthenticator, Environment environment) {
        this(bearerTokenAuthenticator, environment, new Options());
    }

    /** Apple's constructor with a token provider, with {@link Options} (beyond Apple). */
    public BaseAppStoreServerAPIClient(BearerTokenAuthenticatorInterface bearerTokenAuthenticator, Environment environment,
                                       Options options) {
        this(keyOf(bearerTokenAuthenticator), false,
                bearerTokenAuthenticator instanceof BearerTokenAuthenticator ? null : bearerTokenAuthenticator,
                environment, options);
    }

    /**
     * Beyond Apple: a client signing its tokens with signingKey (a .p8 key, or a key held in a KMS or an HSM:
     * {@link SigningKey#withSigner}), which must have an issuer id. The client keeps what it needs of the key: closing
     * the key later does not affect it.
     */
    public BaseAppStoreServerAPIClient(SigningKey signingKey, Environment environment) {
        this(signingKey, environment, new Options());
    }

    /** A client signing with signingKey, with {@link Options} (beyond Apple). */
    public BaseAppStoreServerAPIClient(SigningKey signingKey, Environment environment, Options options) {
        this(Args.notNull(signingKey, "signingKey"), false, null, environment, options);
    }

    private BaseAppStoreServerAPIClient(SigningKey key, boolean owned, BearerTokenAuthenticatorInterface customTokens,
                                        Environment environment, Options options) {
        try {
            checkEnvironment(environment);
            Args.notNull(options, "options");
            if (options.sandboxFallback && environment != Environment.PRODUCTION) {
                throw new IllegalArgumentException("sandboxFallback is for Production clients (this one is "
                        + environment + ")");
            }
            this.environment = environment;
            this.customTokens = customTokens;
            this.ownedKey = owned ? key : null;
            this.httpClient = options.httpClient;
            this.timeoutMs = options.timeoutMs;
            String base = options.baseUrl != null ? options.baseUrl : getUrlForEnvironment(environment);
            this.url = trimSlash(base);
            this.sandboxUrl = !options.sandboxFallback ? null
                    : trimSlash(options.sandboxBaseUrl != null ? options.sandboxBaseUrl : SANDBOX_URL);
            this.client = newClient(key, environment, options);
        } catch (RuntimeException | Error e) {
            if (owned) {
                key.close();
            }
            throw e;
        }
        this.cleanable = Cleaners.register(this, client);
    }

    private static SigningKey newKey(String signingKey, String keyId, String issuerId, String bundleId,
                                     Environment environment, Options options) {
        checkEnvironment(environment);
        Args.notNull(options, "options");
        Args.notNull(signingKey, "signingKey");
        Args.notNull(keyId, "keyId");
        Args.notNull(issuerId, "issuerId");
        Args.notNull(bundleId, "bundleId");
        return new SigningKey(signingKey, keyId, issuerId, bundleId);
    }

    private static SigningKey keyOf(BearerTokenAuthenticatorInterface tokens) {
        Args.notNull(tokens, "bearerTokenAuthenticator");
        if (tokens instanceof BearerTokenAuthenticator) {
            return ((BearerTokenAuthenticator) tokens).getSigningKey();
        }
        return Placeholder.KEY;
    }

    /**
     * The key of clients whose tokens come from a custom BearerTokenAuthenticatorInterface: the native core signs a
     * token for each attempt with it, and the client sends the custom token instead. Made once, in memory only.
     */
    private static final class Placeholder {
        static final SigningKey KEY = make();

        private static SigningKey make() {
            try {
                KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
                g.initialize(new ECGenParameterSpec("secp256r1"));
                byte[] der = g.generateKeyPair().getPrivate().getEncoded();
                String pem = "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                        + "\n-----END PRIVATE KEY-----\n";
                return new SigningKey(pem, "placeholder", "placeholder", "placeholder");
            } catch (java.security.GeneralSecurityException e) {
                throw new IllegalStateException("no EC P-256 key generator", e);
            }
        }
    }

    private static void checkEnvironment(Environment environment) {
        Args.notNull(environment, "environment");
        if (environment == Environment.XCODE) {
            throw new IllegalArgumentException("Xcode is not a supported environment for an AppStoreServerAPIClient");
        }
    }

    private static String trimSlash(String s) {
        String t = s;
        while (t.endsWith("/")) {
            t = t.substring(0, t.length() - 1);
        }
        return t;
    }

    private interface OptionCall {
        void run();
    }

    private static void option(OptionCall c) {
        try {
            c.run();
        } catch (NativeError e) {
            throw new IllegalArgumentException(e.detail);
        }
    }

    private static NativeHandle newClient(SigningKey key, Environment environment, Options options) {
        NativeHandle keyHandle = Signing.handle(key);
        long k = keyHandle.acquire();
        long opts = Abi.api_client_options_new();
        try {
            option(() -> Abi.api_client_options_set_timeout_ms(opts, options.timeoutMs));
            if (options.maxRetries > 0) {
                option(() -> Abi.api_client_options_set_retry(opts, options.maxRetries, options.initialBackoffMs,
                        options.maxBackoffMs));
            }
            if (options.baseUrl != null) {
                byte[] base = Args.cString(options.baseUrl, "baseUrl");
                option(() -> Abi.api_client_options_set_base_url(opts, base));
            }
            if (options.sandboxFallback) {
                byte[] sandbox = Args.optionalCString(options.sandboxBaseUrl, "sandboxBaseUrl");
                option(() -> Abi.api_client_options_set_sandbox_fallback(opts, 1, sandbox));
            }
            if (options.rateLimit) {
                option(() -> Abi.api_client_options_set_rate_limit(opts, 1, options.rateLimitMaxWaitMs,
                        options.rateLimitSharePercent));
            }
            long c;
            try {
                c = Abi.api_client_new(k, code(environment), opts);
            } catch (NativeError e) {
                if (e.status == AppStoreStatus.CONFIGURATION_ERROR.getValue()
                        || e.status == AppStoreStatus.INVALID_ARGUMENT.getValue()) {
                    throw new IllegalArgumentException(e.detail);
                }
                throw Errors.library(e);
            }
            // The client keeps the key's handle (and an external signer's bridge) until it is freed.
            return new NativeHandle("AppStoreServerAPIClient", c, Abi::api_client_free, keyHandle);
        } finally {
            Abi.api_client_options_free(opts);
            keyHandle.release();
        }
    }

    static int code(Environment e) {
        switch (e) {
            case SANDBOX:
                return AbiConstants.ENVIRONMENT_SANDBOX;
            case PRODUCTION:
                return AbiConstants.ENVIRONMENT_PRODUCTION;
            case XCODE:
                return AbiConstants.ENVIRONMENT_XCODE;
            default:
                return AbiConstants.ENVIRONMENT_LOCAL_TESTING;
        }
    }

    static Environment environmentOf(long code) {
        if (code == AbiConstants.ENVIRONMENT_SANDBOX) {
            return Environment.SANDBOX;
        }
        if (code == AbiConstants.ENVIRONMENT_PRODUCTION) {
            return Environment.PRODUCTION;
        }
        if (code == AbiConstants.ENVIRONMENT_LOCAL_TESTING) {
            return Environment.LOCAL_TESTING;
        }
        return Environment.XCODE;
    }

    /** Apple's base URL of an environment (Xcode: IllegalArgumentException). */
    protected String getUrlForEnvironment(Environment environment) {
        switch (environment) {
            case XCODE:
                throw new IllegalArgumentException("Xcode is not a supported environment for an AppStoreServerAPIClient");
            case PRODUCTION:
            case LOCAL_TESTING:
            case SANDBOX:
                return baseUrl(environment);
            default:
                throw new IllegalStateException();
        }
    }

    private static String baseUrl(Environment environment) {
        return new String(Abi.api_base_url(code(environment), 0), java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * Make an HTTP request (Apple's extension point): one attempt of a call, as Apple's library passes it.
     *
     * @param path The path of the request, after the base URL (its segments percent-encoded; see
     *             {@link #getRequestBaseUrl()} for the base it goes to)
     * @param method The HTTP method of the request
     * @param queryParameters A map of query parameters for the request (each value decoded, repeated keys as lists)
     * @param headers A map of headers for the request: User-Agent, Authorization (a fresh bearer token) and Accept
     * @param contentType The content type of the request, nullable ("application/json; charset=utf-8" for a JSON
     *                    body, as Apple's library passes it, "image/png" for an image)
     * @param body The request body, nullable (empty for a POST without one)
     * @return An {@link HttpResponseInterface} representing the status code and optional response body
     * @throws IOException If an exception was thrown while making the request (it ends the call: a request that
     *                     got no answer is never retried)
     */
    protected abstract HttpResponseInterface makeRequest(String path, String method,
                                                         Map<String, List<String>> queryParameters,
                                                         Map<String, String> headers, String contentType,
                                                         byte[] body) throws IOException;

    // ---- beyond Apple -------------------------------------------------------------------------------------------------

    /**
     * The endpoint methods returning each answer with the environment that gave it:
     * {@code client.withEnvironment().getTransactionInfo(id).getEnvironment()} is SANDBOX when a Production lookup
     * fell back.
     */
    public WithEnvironment withEnvironment() {
        ensureOpen();
        return new WithEnvironment(this);
    }

    /** The environment this client targets. */
    public Environment getEnvironment() {
        return environment;
    }

    /**
     * The base URL of the request makeRequest is sending on this thread: the client's (url), the Sandbox one for a
     * request of the Sandbox fallback, or Advanced Commerce's host for its endpoints; url outside makeRequest.
     */
    protected String getRequestBaseUrl() {
        Prepared p = CURRENT.get();
        return p != null ? p.base : url;
    }

    /** The time one attempt may take, in milliseconds, for the request makeRequest is sending on this thread. */
    protected long getRequestTimeoutMillis() {
        Prepared p = CURRENT.get();
        return p != null ? p.timeoutMs : timeoutMs;
    }

    /** The clock given to the call driver (milliseconds since 1970): rate-limit slots and Retry-After. Tests replace it. */
    protected long nowMillis() {
        return System.currentTimeMillis();
    }

    /** Waits as long as the call driver says (a retry's backoff, a rate-limit slot). Tests replace it. */
    protected void sleep(long millis) throws InterruptedException {
        Thread.sleep(millis);
    }

    /** Frees the native client (once the calls in progress have finished). Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
        if (ownedKey != null) {
            ownedKey.close();
        }
    }

    private void ensureOpen() {
        client.acquire();
        client.release();
    }

    // ---- the call loop over the driver ---------------------------------------------------------------------------------

    @Override
    final <T> Answered<T> answer(EndpointCall call, Class<T> type) throws APIException, IOException {
        try (Run run = new Run(call)) {
            return run.next(type);
        }
    }

    @Override
    final <T> Pages<Answered<T>> pages(EndpointCall call, Class<T> type) {
        ensureOpen();
        return new Pages<>(() -> new PageRun<>(call, type));
    }

    /** Every page of one call, as an iterator: one call of the driver, freed at its end (or by the Cleaner). */
    private final class PageRun<T> implements Pages.PageIterator<Answered<T>> {
        private final Run run;
        private final Class<T> type;
        private final Cleaner.Cleanable cleanable;
        private Answered<T> ahead;
        private boolean started;
        private boolean ended;

        PageRun(EndpointCall call, Class<T> type) {
            this.run = new Run(call);
            this.type = type;
            this.cleanable = Cleaners.register(this, run.handle);
        }

        @Override
        public boolean hasNext() {
            if (ahead != null) {
                return true;
            }
            if (ended) {
                return false;
            }
            if (started && !run.hasNextPage()) {
                close();
                return false;
            }
            started = true;
            try {
                ahead = run.next(type);
            } catch (APIException e) {
                close();
                throw new UncheckedAPIException(e);
            } catch (IOException e) {
                close();
                throw new UncheckedIOException(e);
            } catch (RuntimeException | Error e) {
                close();
                throw e;
            }
            if (!run.hasNextPage()) {
                close();
            }
            return true;
        }

        @Override
        public Answered<T> next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            Answered<T> a = ahead;
            ahead = null;
            return a;
        }

        @Override
        public void close() {
            ended = true;
            cleanable.clean();
        }
    }

    /** An answer reported to the driver, until its next step judges it. */
    private static final class Received {
        final int status;
        final byte[] headers;
        final byte[] body;

        Received(int status, byte[] headers, byte[] body) {
            this.status = status;
            this.headers = headers;
            this.body = body;
        }
    }

    /** One call of the driver. */
    private final class Run implements AutoCloseable {
        final EndpointCall call;
        final NativeHandle handle;
        private final long clientPointer;
        private final List<APIException> passed = new ArrayList<>();
        private Received received;
        private int lastStatus = 200;

        Run(EndpointCall call) {
            this.call = call;
            byte[] params = call.json();
            long c = client.acquire();
            try {
                long h;
                try {
                    h = Abi.api_call_new(c, call.endpoint.getBytes(StandardCharsets.UTF_8), params);
                } catch (NativeError e) {
                    throw argumentFailure(e);
                }
                // The call keeps the client's handle (and so the key's, and an external signer's bridge) alive.
                this.handle = new NativeHandle("API call", h, Abi::api_call_free, client);
                this.clientPointer = c;
            } finally {
                client.release();
            }
        }

        @Override
        public void close() {
            handle.close();
        }

        boolean hasNextPage() {
            long h = handle.acquire();
            try {
                return Abi.api_call_has_next_page(h) == 1;
            } finally {
                handle.release();
            }
        }

        /** Drives the call to its next answer (DONE), sending and waiting as the driver says. */
        <T> Answered<T> next(Class<T> type) throws APIException, IOException {
            for (;;) {
                Object[] step;
                Received r;
                long h = handle.acquire();
                try {
                    Signing.SIGNER_FAILURE.remove();
                    long now = nowMillis();
                    try {
                        step = Abi.api_call_next(h, now);
                    } catch (NativeError e) {
                        r = received;
                        received = null;
                        if (r != null && e.httpStatus == 0) {
                            pass(h, r); // not that answer's error: nothing was sent since
                        }
                        throw failure(e);
                    }
                    r = received;
                    received = null;
                    int action = ((Long) step[0]).intValue();
                    if (r != null && action != AbiConstants.API_ACTION_DONE) {
                        pass(h, r); // retried, or asked again in Sandbox
                    }
                    if (action == AbiConstants.API_ACTION_DONE) {
                        return answered(h, type);
                    }
                    if (action != AbiConstants.API_ACTION_SEND && action != AbiConstants.API_ACTION_WAIT) {
                        throw new IllegalStateException(call.endpoint + ": the driver answered action " + action);
                    }
                } finally {
                    handle.release();
                }
                if (((Long) step[0]).intValue() == AbiConstants.API_ACTION_SEND) {
                    send();
                } else {
                    try {
                        sleep((Long) step[1]);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw interrupted(e);
                    }
                }
            }
        }

        private <T> Answered<T> answered(long h, Class<T> type) throws APIException {
            Object[] a;
            try {
                a = Abi.api_call_answer(h);
            } catch (NativeError e) {
                throw Errors.library(e);
            }
            Environment env = environmentOf((Long) a[1]);
            if (type == Void.class) {
                return new Answered<>(null, env);
            }
            try {
                return new Answered<>(Json.read((byte[]) a[0], type), env);
            } catch (IOException e) {
                // The core checked that the body decodes into the endpoint's model: a value Java's type cannot hold.
                throw new APIException(lastStatus, e);
            }
        }

        /** SEND: the driver's request through makeRequest; the answer (or the failure) back to the driver. */
        private void send() throws IOException {
            Prepared p;
            long h = handle.acquire();
            try {
                long req;
                try {
                    req = Abi.api_call_request(h);
                } catch (NativeError e) {
                    throw Errors.library(e);
                }
                try {
                    p = Prepared.read(req, url, sandboxUrl);
                } finally {
                    Abi.api_request_free(req);
                }
            } finally {
                handle.release();
            }
            if (customTokens != null) {
                p.replaceToken(customTokens.generateToken());
            }
            Prepared outer = CURRENT.get();
            CURRENT.set(p);
            Received got;
            try {
                HttpResponseInterface response = makeRequest(p.path, p.method, p.query, p.headers, p.contentType, p.body);
                if (response == null) {
                    throw new IOException(call.endpoint + ": makeRequest returned no response");
                }
                try (HttpResponseInterface r = response) {
                    int status = r.statusCode();
                    byte[] headers = headerLines(r.headers());
                    byte[] body = r instanceof RawBody ? ((RawBody) r).rawBody() : readBody(r.body());
                    if (body.length > BODY_LIMIT) {
                        throw new IOException("the response body is larger than " + BODY_LIMIT + " bytes");
                    }
                    got = new Received(status, headers, body);
                }
            } catch (IOException | RuntimeException | Error e) {
                reportFailure(e);
                throw e;
            } finally {
                if (outer != null) {
                    CURRENT.set(outer);
                } else {
                    CURRENT.remove();
                }
            }
            NativeError refused = null;
            h = handle.acquire();
            try {
                Abi.api_call_receive(h, got.status, got.headers, got.body, nowMillis());
                lastStatus = got.status;
                received = got;
            } catch (NativeError e) { // a status outside 100-599
                refused = e;
            } finally {
                handle.release();
            }
            if (refused != null) {
                IOException x = new IOException(call.endpoint + ": makeRequest returned an answer the library refuses: "
                        + refused.detail);
                reportFailure(x);
                throw x;
            }
        }

        /**
         * makeRequest threw (or its answer could not be read): reported to the driver as the transport failure it is
         * (final: never retried, the request may have reached Apple); the driver's account of it, naming the
         * endpoint, is added to the exception as a suppressed AppStoreServerException, and the exception is thrown on.
         */
        private void reportFailure(Throwable e) {
            long h = handle.acquire();
            try {
                String text = e.getMessage() != null ? e.getMessage() : e.getClass().getName();
                byte[] msg = text.replace('\0', ' ').getBytes(StandardCharsets.UTF_8);
                Abi.api_call_receive_failure(h, JdkTransport.classify(e), msg);
                try {
                    Abi.api_call_next(h, nowMillis());
                } catch (NativeError account) {
                    e.addSuppressed(new AppStoreServerException(account.status, account.reason, account.detail, null));
                }
            } catch (NativeError ignored) {
                // no request awaited an outcome: nothing to report
            } finally {
                handle.release();
            }
        }

        /** An answer the call went past (retried, or Production's before Sandbox), as the APIException it was. */
        private void pass(long h, Received r) {
            try {
                Abi.api_client_decode_response(clientPointer, call.endpoint.getBytes(StandardCharsets.UTF_8), r.status,
                        r.headers, r.body);
            } catch (NativeError e) {
                passed.add(apiException(e));
            }
        }

        /** The call's final error: APIException for an API failure, else the runtime exception it is. */
        private APIException failure(NativeError e) {
            int st = e.status;
            if (st == AppStoreStatus.API_ERROR.getValue() || st == AppStoreStatus.RATE_LIMITED.getValue()
                    || st == AppStoreStatus.INVALID_RESPONSE.getValue()
                    || st == AppStoreStatus.TRANSPORT_ERROR.getValue()) {
                APIException x = apiException(e);
                if (e.reason == FailureReason.UNDECODABLE_RESPONSE.getValue()) {
                    // As Apple's: the decoding failure is the cause (here the core's account of it: what and where).
                    x.initCause(new AppStoreServerException(e.status, e.reason, e.detail, null));
                }
                for (APIException p : passed) {
                    x.addSuppressed(p);
                }
                return x;
            }
            if (e.reason == FailureReason.SIGNER_FAILED.getValue()) {
                throw Signing.failure(e);
            }
            throw argumentFailure(e);
        }

        private RuntimeException argumentFailure(NativeError e) {
            String prefix = e.detail.startsWith(call.endpoint + ": ") ? "" : call.endpoint + ": ";
            if (e.status == AppStoreStatus.INVALID_ARGUMENT.getValue()) {
                return new InvalidArgumentException(e.status, e.reason, prefix + e.detail);
            }
            return new AppStoreServerException(e.status, e.reason, prefix + e.detail, null);
        }

        private APIException apiException(NativeError e) {
            List<String[]> headers = new ArrayList<>();
            for (int i = 0; i + 1 < e.headers.length; i += 2) {
                headers.add(new String[] {e.headers[i], e.headers[i + 1]});
            }
            Long code = e.apiErrorCode != 0 ? e.apiErrorCode : null;
            return new APIException(e.status, e.reason, e.detail, e.httpStatus, code,
                    e.apiErrorName.isEmpty() ? null : e.apiErrorName, code != null ? e.apiErrorMessage : null,
                    e.retryAtMs >= 0 ? e.retryAtMs : null, e.retryAfter >= 0 ? e.retryAfter : null, headers);
        }

        /** An interrupt during a wait ends the call: with the last answer's APIException, else InterruptedIOException. */
        private APIException interrupted(InterruptedException cause) throws InterruptedIOException {
            if (passed.isEmpty()) {
                InterruptedIOException x = new InterruptedIOException(call.endpoint
                        + ": interrupted while waiting for the client's rate limit");
                x.initCause(cause);
                throw x;
            }
            APIException last = passed.remove(passed.size() - 1);
            for (APIException p : passed) {
                last.addSuppressed(p);
            }
            last.addSuppressed(cause);
            return last;
        }
    }

    /** "Name: value\r\n" lines of a response's headers (values with CR, LF or NUL left out). */
    private static byte[] headerLines(Map<String, List<String>> headers) {
        if (headers == null || headers.isEmpty()) {
            return new byte[0];
        }
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, List<String>> e : headers.entrySet()) {
            String name = e.getKey();
            if (name == null || e.getValue() == null || bad(name) || name.indexOf(':') >= 0) {
                continue;
            }
            for (String v : e.getValue()) {
                if (v != null && !bad(v)) {
                    b.append(name).append(": ").append(v).append("\r\n");
                }
            }
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static boolean bad(String s) {
        return s.indexOf('\r') >= 0 || s.indexOf('\n') >= 0 || s.indexOf('\0') >= 0;
    }

    /** The body of a response given as a Reader, as UTF-8, refused past the library's limit while it is read. */
    private static byte[] readBody(Reader body) throws IOException {
        if (body == null) {
            return new byte[0];
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        OutputStream limited = new OutputStream() {
            private long total;

            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                total += len;
                if (total > BODY_LIMIT) {
                    throw new IOException("the response body is larger than " + BODY_LIMIT + " bytes");
                }
                out.write(b, off, len);
            }
        };
        try (Reader r = body; Writer w = new OutputStreamWriter(limited, StandardCharsets.UTF_8)) {
            r.transferTo(w);
        }
        return out.toByteArray();
    }

    // ---- the request, in the driver's and in Apple's terms ----------------------------------------------------------

    /**
     * A request the driver built, as it is to be sent (full URL, every header, body) and as makeRequest receives it
     * (Apple's arguments: the path after the base URL, the query decoded into lists, User-Agent, Authorization and
     * Accept, Apple's content type, the body; the maps are makeRequest's to change).
     */
    static final class Prepared {
        final String method;
        final String fullUrl;
        final String base;
        final String path;
        final List<String[]> coreHeaders;
        final byte[] coreBody;
        final long timeoutMs;
        final Map<String, List<String>> query;
        final Map<String, String> headers;
        final String contentType;
        final byte[] body;
        private final Map<String, List<String>> querySnapshot;
        private Map<String, String> headersSnapshot;

        private Prepared(String method, String fullUrl, String base, List<String[]> coreHeaders, byte[] coreBody,
                         long timeoutMs) {
            this.method = method;
            this.fullUrl = fullUrl;
            this.base = base;
            this.coreHeaders = coreHeaders;
            this.coreBody = coreBody;
            this.timeoutMs = timeoutMs;
            int q = fullUrl.indexOf('?');
            String pathAndBase = q < 0 ? fullUrl : fullUrl.substring(0, q);
            this.path = pathAndBase.substring(base.length());
            this.query = new LinkedHashMap<>();
            if (q >= 0) {
                for (String part : fullUrl.substring(q + 1).split("&")) {
                    if (part.isEmpty()) {
                        continue;
                    }
                    int eq = part.indexOf('=');
                    String k = decode(eq < 0 ? part : part.substring(0, eq));
                    String v = eq < 0 ? "" : decode(part.substring(eq + 1));
                    query.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
                }
            }
            this.querySnapshot = copy(query);
            String ctype = null;
            Map<String, String> hook = new LinkedHashMap<>();
            for (String name : new String[] {"User-Agent", "Authorization", "Accept"}) {
                for (String[] h : coreHeaders) {
                    if (h[0].equalsIgnoreCase(name)) {
                        hook.put(name, h[1]);
                    }
                }
            }
            for (String[] h : coreHeaders) {
                if (h[0].equalsIgnoreCase("Content-Type")) {
                    ctype = h[1];
                } else if (!hook.containsKey(h[0]) && !h[0].equalsIgnoreCase("User-Agent")
                        && !h[0].equalsIgnoreCase("Authorization") && !h[0].equalsIgnoreCase("Accept")) {
                    hook.put(h[0], h[1]); // whatever else the core sends, after Apple's
                }
            }
            this.headers = hook;
            this.headersSnapshot = new LinkedHashMap<>(hook);
            if (coreBody.length > 0) {
                this.contentType = ctype != null && ctype.startsWith("application/json") ? JSON : ctype;
                this.body = coreBody.clone();
            } else {
                this.contentType = null;
                this.body = method.equals("POST") ? new byte[0] : null; // as Apple's library passes it
            }
        }

        static Prepared read(long req, String url, String sandboxUrl) {
            String method = Args.utf8(Abi.api_request_method(req));
            String full = Args.utf8(Abi.api_request_url(req));
            long n = Abi.api_request_header_count(req);
            List<String[]> headers = new ArrayList<>();
            for (long i = 0; i < n; i++) {
                headers.add(new String[] {Args.utf8(Abi.api_request_header_name(req, i)),
                        Args.utf8(Abi.api_request_header_value(req, i))});
            }
            byte[] body = Abi.api_request_body(req);
            long timeout = Abi.api_request_timeout_ms(req);
            return new Prepared(method, full, baseOf(full, url, sandboxUrl), headers, body == null ? new byte[0] : body,
                    timeout);
        }

        /** The base URL of a request: the client's, the fallback's Sandbox one, or else the URL's origin. */
        private static String baseOf(String full, String url, String sandboxUrl) {
            if (sandboxUrl != null && full.startsWith(sandboxUrl + "/") && !full.startsWith(url + "/")) {
                return sandboxUrl;
            }
            if (full.startsWith(url + "/")) {
                return url;
            }
            int scheme = full.indexOf("://");
            int slash = scheme < 0 ? -1 : full.indexOf('/', scheme + 3);
            return slash < 0 ? full : full.substring(0, slash);
        }

        void replaceToken(String token) {
            String value = "Bearer " + Objects.requireNonNull(token, "the BearerTokenAuthenticatorInterface returned null");
            headers.put("Authorization", value);
            headersSnapshot = new LinkedHashMap<>(headers);
            for (String[] h : coreHeaders) {
                if (h[0].equalsIgnoreCase("Authorization")) {
                    h[1] = value;
                }
            }
        }

        /** Whether makeRequest got exactly this request (then the core's bytes go out as they are). */
        boolean unchanged(String path, String method, Map<String, List<String>> query, Map<String, String> headers,
                          String contentType, byte[] body) {
            return this.path.equals(path) && this.method.equals(method) && querySnapshot.equals(query)
                    && headersSnapshot.equals(headers) && Objects.equals(this.contentType, contentType)
                    && Arrays.equals(this.body, body);
        }

        private static Map<String, List<String>> copy(Map<String, List<String>> m) {
            Map<String, List<String>> out = new LinkedHashMap<>();
            for (Map.Entry<String, List<String>> e : m.entrySet()) {
                out.put(e.getKey(), new ArrayList<>(e.getValue()));
            }
            return out;
        }
    }

    /** Percent-decoding of one query component ('+' is a plus: the core encodes a space as %20). */
    static String decode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < s.length()) {
                int hi = Character.digit(s.charAt(i + 1), 16);
                int lo = Character.digit(s.charAt(i + 2), 16);
                if (hi >= 0 && lo >= 0) {
                    out.write(hi * 16 + lo);
                    i += 2;
                    continue;
                }
            }
            byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
            out.write(b, 0, b.length);
        }
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }

    /** Percent-encoding of one query component or path: everything but RFC 3986's unreserved characters. */
    static String encode(String s, boolean keepSlash) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            int c = x & 0xff;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'
                    || c == '_' || c == '~' || (keepSlash && c == '/')) {
                b.append((char) c);
            } else {
                b.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
            }
        }
        return b.toString();
    }

    /** The thread's request in progress, for the default makeRequest. */
    static Prepared current() {
        return CURRENT.get();
    }
}
