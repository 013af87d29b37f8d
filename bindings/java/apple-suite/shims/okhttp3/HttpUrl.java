package okhttp3;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The part of okhttp3.HttpUrl Apple's tests use (harness only): a URL's encoded path and decoded query. */
public final class HttpUrl {
    private final URI uri;

    public HttpUrl(String url) {
        this.uri = URI.create(url);
    }

    public String encodedPath() {
        return uri.getRawPath();
    }

    public List<String> queryParameterValues(String name) {
        List<String> out = new ArrayList<>();
        String q = uri.getRawQuery();
        if (q == null) {
            return out;
        }
        for (String part : q.split("&")) {
            int eq = part.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? part : part.substring(0, eq), StandardCharsets.UTF_8);
            if (k.equals(name)) {
                out.add(eq < 0 ? null : URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    public String queryParameter(String name) {
        List<String> v = queryParameterValues(name);
        return v.isEmpty() ? null : v.get(0);
    }

    @Override
    public String toString() {
        return uri.toString();
    }
}
