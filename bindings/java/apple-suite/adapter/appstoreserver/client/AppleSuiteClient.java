package appstoreserver.client;

import appstoreserver.model.Environment;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

import java.io.IOException;
import java.io.InputStreamReader;
import java.io.ByteArrayInputStream;
import java.io.Reader;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * Harness only (bindings/java/scripts/apple-suite): Apple's AppStoreServerAPIClient.makeRequest ported onto this
 * library's makeRequest hook, so Apple's AppStoreServerAPIClientTest, whose clients override Apple's OkHttp-typed
 * getResponse(Request), runs unchanged but for the class it instantiates. The library itself has no OkHttp: its
 * extension point is makeRequest with Apple's arguments (docs/migrating.md).
 */
public class AppleSuiteClient extends AppStoreServerAPIClient {
    public AppleSuiteClient(String signingKey, String keyId, String issuerId, String bundleId, Environment environment) {
        super(signingKey, keyId, issuerId, bundleId, environment);
    }

    /** What Apple's AppStoreServerAPIClient.makeRequest does: an OkHttp request from its arguments, to getResponse. */
    @Override
    protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> queryParameters,
                                                Map<String, String> headers, String contentType, byte[] body)
            throws IOException {
        StringBuilder url = new StringBuilder(getRequestBaseUrl()).append(path);
        char sep = '?';
        for (Map.Entry<String, List<String>> e : queryParameters.entrySet()) {
            for (String v : e.getValue()) {
                url.append(sep).append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(v, StandardCharsets.UTF_8));
                sep = '&';
            }
        }
        RequestBody b = body == null ? null : RequestBody.create(body, contentType != null ? MediaType.parse(contentType) : null);
        Response response = getResponse(new Request(method, new HttpUrl(url.toString()), headers, b));
        return new HttpResponseInterface() {
            @Override
            public int statusCode() {
                return response.code();
            }

            @Override
            public Reader body() {
                return response.body() == null ? null
                        : new InputStreamReader(new ByteArrayInputStream(response.body().bytes()), StandardCharsets.UTF_8);
            }

            @Override
            public void close() {
            }
        };
    }

    /** Apple's hook, which Apple's tests override; here it has no network to go to. */
    protected Response getResponse(Request request) throws IOException {
        throw new IOException("AppleSuiteClient: no transport (Apple's tests override getResponse)");
    }
}
