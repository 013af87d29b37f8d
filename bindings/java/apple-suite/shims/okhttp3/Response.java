package okhttp3;

/** The part of okhttp3.Response Apple's tests use (harness only). */
public final class Response {
    private final int code;
    private final ResponseBody body;

    private Response(Builder b) {
        this.code = b.code;
        this.body = b.body;
    }

    public int code() {
        return code;
    }

    public ResponseBody body() {
        return body;
    }

    public static final class Builder {
        private int code;
        private ResponseBody body;

        public Builder body(ResponseBody body) {
            this.body = body;
            return this;
        }

        public Builder code(int code) {
            this.code = code;
            return this;
        }

        public Builder request(Request request) {
            return this;
        }

        public Builder protocol(Protocol protocol) {
            return this;
        }

        public Builder message(String message) {
            return this;
        }

        public Response build() {
            return new Response(this);
        }
    }
}
