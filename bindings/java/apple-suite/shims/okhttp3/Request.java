package okhttp3;

import java.util.Map;

/** The part of okhttp3.Request Apple's tests use (harness only). */
public final class Request {
    private final String method;
    private final HttpUrl url;
    private final Map<String, String> headers;
    private final RequestBody body;

    public Request(String method, HttpUrl url, Map<String, String> headers, RequestBody body) {
        this.method = method;
        this.url = url;
        this.headers = headers;
        this.body = body;
    }

    public String method() {
        return method;
    }

    public HttpUrl url() {
        return url;
    }

    public RequestBody body() {
        return body;
    }

    public String header(String name) {
        for (Map.Entry<String, String> e : headers.entrySet()) {
            if (e.getKey().equalsIgnoreCase(name)) {
                return e.getValue();
            }
        }
        return null;
    }
}
