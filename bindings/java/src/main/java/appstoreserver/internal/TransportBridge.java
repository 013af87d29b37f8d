package appstoreserver.internal;

/**
 * What the library's transport callback calls (src/main/c/jni.c, transport_callback), on the thread that called the
 * library: perform one HTTP exchange and report the answer into {@code response} with Abi.http_response_set_status,
 * _add_header and _append_body. Returns an AbiConstants.TRANSPORT_RESULT_* value; must not throw (a throw is FAILED).
 */
public interface TransportBridge {
    int exchange(byte[] method, byte[] url, byte[] headers, byte[] body, int timeoutMs, long response);
}
