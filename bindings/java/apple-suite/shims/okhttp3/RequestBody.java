package okhttp3;

/** The part of okhttp3.RequestBody Apple's tests use (harness only). */
public final class RequestBody {
    private final byte[] bytes;
    private final MediaType contentType;

    private RequestBody(byte[] bytes, MediaType contentType) {
        this.bytes = bytes;
        this.contentType = contentType;
    }

    public static RequestBody create(byte[] bytes, MediaType contentType) {
        return new RequestBody(bytes.clone(), contentType);
    }

    public MediaType contentType() {
        return contentType;
    }

    public long contentLength() throws java.io.IOException {
        return bytes.length;
    }

    public void writeTo(okio.Buffer sink) throws java.io.IOException {
        sink.write(bytes);
    }
}
