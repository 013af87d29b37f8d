package okhttp3;

import java.nio.charset.StandardCharsets;

/** The part of okhttp3.ResponseBody Apple's tests use (harness only; OkHttp 4's create(String, MediaType)). */
public final class ResponseBody {
    private final byte[] bytes;

    private ResponseBody(byte[] bytes) {
        this.bytes = bytes;
    }

    public static ResponseBody create(String content, MediaType contentType) {
        return new ResponseBody(content.getBytes(StandardCharsets.UTF_8));
    }

    public byte[] bytes() {
        return bytes.clone();
    }
}
