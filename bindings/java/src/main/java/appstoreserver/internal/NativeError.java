package appstoreserver.internal;

import java.nio.charset.StandardCharsets;

/**
 * A failed library call, as the JNI wrappers throw it: the library's status, reason and message, and for App Store
 * Server API errors the HTTP status, Apple's error code, name and message, Retry-After and the answer's headers.
 * Internal: the public classes turn it into VerificationException, AppStoreServerException, IllegalArgumentException
 * (and, in the API client, APIException).
 */
public final class NativeError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public final int status;
    public final int reason;
    public final String detail;
    public final int httpStatus;
    public final long apiErrorCode;
    public final String apiErrorName;
    public final String apiErrorMessage;
    public final long retryAfter;
    public final long retryAtMs;
    /** Header names and values of the answer, alternating, in the order received. */
    public final String[] headers;

    // Called by src/main/c/jni.c (asj_fail) with this exact signature.
    NativeError(int status, int reason, byte[] message, int httpStatus, long apiErrorCode, byte[] apiErrorName,
                byte[] apiErrorMessage, long retryAfter, long retryAtMs, byte[][] headers) {
        super(text(message), null, false, false);
        this.status = status;
        this.reason = reason;
        this.detail = text(message);
        this.httpStatus = httpStatus;
        this.apiErrorCode = apiErrorCode;
        this.apiErrorName = text(apiErrorName);
        this.apiErrorMessage = text(apiErrorMessage);
        this.retryAfter = retryAfter;
        this.retryAtMs = retryAtMs;
        this.headers = new String[headers == null ? 0 : headers.length];
        for (int i = 0; i < this.headers.length; i++) {
            this.headers[i] = text(headers[i]);
        }
    }

    private static String text(byte[] utf8) {
        return utf8 == null ? "" : new String(utf8, StandardCharsets.UTF_8);
    }
}
