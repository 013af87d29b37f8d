package appstoreserver.client;

import appstoreserver.internal.JdkTransport;
import appstoreserver.model.Environment;
import appstoreserver.signature.SigningKey;

import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.ByteArrayInputStream;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The App Store Server API client (Apple's class and constructors), sending with java.net.http.HttpClient: every
 * endpoint method of {@link BaseAppStoreServerAPIClient}, each call run by the native core's call driver.
 *
 * <p>{@link #makeRequest} is Apple's extension point: override it to send through your own HTTP stack or proxy (it
 * receives what Apple's library passes; see {@link BaseAppStoreServerAPIClient#makeRequest}), or call
 * super.makeRequest with changed arguments. The default sends the core's request exactly as built when the arguments
 * are unchanged, with a deadline for the whole exchange (the client's timeout), the body refused past
 * APPSTORE_LIMIT_API_RESPONSE_BYTES while it is read, and no redirect followed (the 3xx goes to the library, which
 * reports it).
 */
public class AppStoreServerAPIClient extends BaseAppStoreServerAPIClient {
    private final JdkTransport transport;

    /**
     * Create an App Store Server API client
     *
     * @param signingKey Your private key downloaded from App Store Connect
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect
     * @param bundleId Your app’s bundle ID
     * @param environment The environment to target
     */
    public AppStoreServerAPIClient(String signingKey, String keyId, String issuerId, String bundleId, Environment environment) {
        this(signingKey, keyId, issuerId, bundleId, environment, new Options());
    }

    /** Apple's constructor with {@link BaseAppStoreServerAPIClient.Options} (beyond Apple). */
    public AppStoreServerAPIClient(String signingKey, String keyId, String issuerId, String bundleId, Environment environment,
                                   Options options) {
        super(signingKey, keyId, issuerId, bundleId, environment, options);
        this.transport = new JdkTransport(httpClient != null ? httpClient : DefaultClient.CLIENT);
    }

    /**
     * Create an App Store Server API client using a custom Bearer token provider
     *
     * @param bearerTokenAuthenticator An implementation of {@link BearerTokenAuthenticatorInterface} that provides tokens
     * @param environment The environment to target
     */
    public AppStoreServerAPIClient(BearerTokenAuthenticatorInterface bearerTokenAuthenticator, Environment environment) {
        this(bearerTokenAuthenticator, environment, new Options());
    }

    /** Apple's constructor with a token provider, with {@link BaseAppStoreServerAPIClient.Options} (beyond Apple). */
    public AppStoreServerAPIClient(BearerTokenAuthenticatorInterface bearerTokenAuthenticator, Environment environment,
                                   Options options) {
        super(bearerTokenAuthenticator, environment, options);
        this.transport = new JdkTransport(httpClient != null ? httpClient : DefaultClient.CLIENT);
    }

    /** Beyond Apple: a client signing with a {@link SigningKey} (a .p8 key, or one held in a KMS or an HSM). */
    public AppStoreServerAPIClient(SigningKey signingKey, Environment environment) {
        this(signingKey, environment, new Options());
    }

    /** A client signing with a {@link SigningKey}, with {@link BaseAppStoreServerAPIClient.Options} (beyond Apple). */
    public AppStoreServerAPIClient(SigningKey signingKey, Environment environment, Options options) {
        super(signingKey, environment, options);
        this.transport = new JdkTransport(httpClient != null ? httpClient : DefaultClient.CLIENT);
    }

    /**
     * The HttpClient of clients without Options.httpClient: one for the process (its connections and its selector
     * thread shared), HTTP/2 where the server offers it, redirects never followed, a proxy from the default
     * ProxySelector. It has no Authenticator: java.net.http drops the Authorization header of requests made with a
     * client that has one (a proxy that asks for credentials: pass a client of your own with Options.httpClient).
     */
    private static final class DefaultClient {
        static final HttpClient CLIENT = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
    }

    @Override
    protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> queryParameters,
                                                Map<String, String> headers, String contentType, byte[] body)
            throws IOException {
        Prepared p = current();
        String full;
        List<String[]> hdrs = new ArrayList<>();
        byte[] b;
        if (p != null && p.unchanged(path, method, queryParameters, headers, contentType, body)) {
            full = p.fullUrl;
            hdrs.addAll(p.coreHeaders);
            b = p.coreBody;
        } else {
            StringBuilder u = new StringBuilder(getRequestBaseUrl()).append(path);
            char sep = '?';
            if (queryParameters != null) {
                for (Map.Entry<String, List<String>> e : queryParameters.entrySet()) {
                    for (String v : e.getValue()) {
                        u.append(sep).append(encode(e.getKey(), false)).append('=').append(encode(v, false));
                        sep = '&';
                    }
                }
            }
            full = u.toString();
            if (headers != null) {
                for (Map.Entry<String, String> h : headers.entrySet()) {
                    hdrs.add(new String[] {h.getKey(), h.getValue()});
                }
            }
            if (body != null && contentType != null) {
                hdrs.add(new String[] {"Content-Type", contentType});
            }
            b = body;
        }
        JdkTransport.Answer a;
        try {
            a = transport.fetch(method, full, hdrs, b, getRequestTimeoutMillis(), appstoreserver.internal.AbiConstants.LIMIT_API_RESPONSE_BYTES);
        } catch (IllegalArgumentException e) {
            throw new IOException(method + " " + full + ": " + e.getMessage(), e);
        }
        return new JdkResponse(a);
    }

    /** The default transport's answer: status, headers and the body as bytes (read by the client without a Reader). */
    private static final class JdkResponse implements HttpResponseInterface, RawBody {
        private final JdkTransport.Answer answer;

        JdkResponse(JdkTransport.Answer answer) {
            this.answer = answer;
        }

        @Override
        public int statusCode() {
            return answer.status;
        }

        @Override
        public Reader body() {
            return new InputStreamReader(new ByteArrayInputStream(answer.body), StandardCharsets.UTF_8);
        }

        @Override
        public Map<String, List<String>> headers() {
            Map<String, List<String>> out = new LinkedHashMap<>();
            for (String[] h : answer.headers) {
                out.computeIfAbsent(h[0], k -> new ArrayList<>()).add(h[1]);
            }
            return Collections.unmodifiableMap(out);
        }

        @Override
        public byte[] rawBody() {
            return answer.body;
        }

        @Override
        public void close() {
            // the body is already read
        }
    }
}
