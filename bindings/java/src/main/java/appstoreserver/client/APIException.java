package appstoreserver.client;

import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A call of the App Store Server API failed (Apple's checked exception, same constructors and getters): Apple
 * answered with an error status, a 2xx answer did not decode into the endpoint's model, or the client's rate limit
 * refused the call.
 *
 * <p>Apple's getters: {@link #getHttpStatusCode()}, {@link #getApiError()} (null when the code is unknown or absent),
 * {@link #getRawApiError()} (also when unknown), {@link #getApiErrorMessage()}. Beyond Apple, for an exception the
 * client threw: {@link #getReason()} and {@link #getAppStoreStatus()} (what failed, e.g. RATE_LIMITED /
 * RATE_LIMITED, API_ERROR / HTTP_ERROR for an answer without Apple's error payload, INVALID_RESPONSE /
 * UNDECODABLE_RESPONSE), {@link #getMessage()} in words (the endpoint, the HTTP status, Apple's code, name and message,
 * and what Production answered when a lookup fell back to Sandbox), {@link #getRetryAfter()} (Retry-After as a UNIX
 * time in milliseconds, in whichever form it came), {@link #getRetryAfterSeconds()}, {@link #getHeaders()} (the
 * answer's headers), {@link #getAdvancedCommerceApiError()}. The answers a call went past before this one (retried,
 * or Production's before a Sandbox fallback) are its suppressed exceptions, oldest first. The client's own rate limit
 * refuses a call with HTTP status 0 (nothing was sent), reason LOCAL_RATE_LIMIT and the next free slot as
 * getRetryAfter().
 */
public class APIException extends Exception {
    private static final long serialVersionUID = 1L;

    private final int httpStatusCode;
    private final Long apiErrorCode;
    private final String apiErrorMessage;
    private final int rawStatus;
    private final int rawReason;
    private final String apiErrorName;
    private final Long retryAfter;
    private final Long retryAfterSeconds;
    private final List<String[]> headers;

    public APIException(int httpStatusCode, Exception cause) {
        super("Failed to call API with httpStatusCode=" + httpStatusCode, cause);
        this.httpStatusCode = httpStatusCode;
        this.apiErrorCode = null;
        this.apiErrorMessage = null;
        this.rawStatus = -1;
        this.rawReason = -1;
        this.apiErrorName = null;
        this.retryAfter = null;
        this.retryAfterSeconds = null;
        this.headers = List.of();
    }

    public APIException(int httpStatusCode) {
        this(httpStatusCode, null);
    }

    public APIException(int httpStatusCode, APIError apiError, String apiErrorMessage) {
        this(httpStatusCode, apiError != null ? apiError.errorCode() : null, apiErrorMessage);
    }

    public APIException(int httpStatusCode, Long rawApiError, String apiErrorMessage) {
        super("Failed to call API with error=\"" + apiErrorMessage + "\"");
        this.httpStatusCode = httpStatusCode;
        this.apiErrorCode = rawApiError;
        this.apiErrorMessage = apiErrorMessage;
        this.rawStatus = -1;
        this.rawReason = -1;
        this.apiErrorName = null;
        this.retryAfter = null;
        this.retryAfterSeconds = null;
        this.headers = List.of();
    }

    /** A failure the library reported (its status, reason and message; Apple's code, name and message; the answer). */
    APIException(int status, int reason, String message, int httpStatusCode, Long apiErrorCode, String apiErrorName,
                 String apiErrorMessage, Long retryAfter, Long retryAfterSeconds, List<String[]> headers) {
        super(message);
        this.httpStatusCode = httpStatusCode;
        this.apiErrorCode = apiErrorCode;
        this.apiErrorMessage = apiErrorMessage;
        this.rawStatus = status;
        this.rawReason = reason;
        this.apiErrorName = apiErrorName;
        this.retryAfter = retryAfter;
        this.retryAfterSeconds = retryAfterSeconds;
        this.headers = Collections.unmodifiableList(new ArrayList<>(headers));
    }

    public int getHttpStatusCode() {
        return httpStatusCode;
    }

    /** Apple's error code as an APIError; null when there is none or this version does not know it. */
    public APIError getApiError() {
        return apiErrorCode != null ? APIError.fetchErrorResponseFromErrorCode(apiErrorCode) : null;
    }

    /** Apple's errorCode, also when this version does not know it; null when the answer had none. */
    public Long getRawApiError() {
        return apiErrorCode;
    }

    /** Apple's errorMessage; null when the answer had none. */
    public String getApiErrorMessage() {
        return apiErrorMessage;
    }

    // ---- beyond Apple ----------------------------------------------------------------------------------------------

    /** An Advanced Commerce endpoint's error code as an AdvancedCommerceAPIError (null when none or unknown). */
    public AdvancedCommerceAPIError getAdvancedCommerceApiError() {
        return apiErrorCode != null ? AdvancedCommerceAPIError.fetchErrorResponseFromErrorCode(apiErrorCode) : null;
    }

    /** The name of Apple's error code as the library knows it (e.g. "transactionIdNotFound"); null when unknown. */
    public String getApiErrorName() {
        return apiErrorName;
    }

    /** The library's status (API_ERROR, RATE_LIMITED, INVALID_RESPONSE); null for an exception made by hand. */
    public AppStoreStatus getAppStoreStatus() {
        return rawStatus < 0 ? null : AppStoreStatus.fromValue(rawStatus);
    }

    /** Why it failed (API_ERROR, HTTP_ERROR, RATE_LIMITED, LOCAL_RATE_LIMIT, UNDECODABLE_RESPONSE, ...); null for an
     *  exception made by hand. */
    public FailureReason getReason() {
        return rawReason < 0 ? null : FailureReason.fromValue(rawReason);
    }

    /**
     * Retry-After as Apple documents it: a UNIX time in milliseconds (an answer's delta-seconds or HTTP-date made
     * into one); for the client's rate limit, when its next slot is free. Null without one.
     */
    public Long getRetryAfter() {
        return retryAfter;
    }

    /** The seconds from the answer to getRetryAfter() (rounded up; 0 when it has passed); null without Retry-After. */
    public Long getRetryAfterSeconds() {
        return retryAfterSeconds;
    }

    /**
     * The failed answer's headers: names looked up in any case, every value in the order received; empty when there
     * was no answer (or for an exception made by hand).
     */
    public Map<String, List<String>> getHeaders() {
        Map<String, List<String>> out = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (String[] h : headers) {
            out.computeIfAbsent(h[0], k -> new ArrayList<>()).add(h[1]);
        }
        for (Map.Entry<String, List<String>> e : out.entrySet()) {
            e.setValue(Collections.unmodifiableList(e.getValue()));
        }
        return Collections.unmodifiableMap(out);
    }

    /** The first value of a header of the failed answer (any case), or null. */
    public String getHeader(String name) {
        for (String[] h : headers) {
            if (h[0].equalsIgnoreCase(name)) {
                return h[1];
            }
        }
        return null;
    }

    /** Apple's text; for an exception the client threw, followed by its reason and message. */
    @Override
    public String toString() {
        String apple = "APIException{" +
                "httpStatusCode=" + httpStatusCode +
                ", apiError=" + apiErrorCode +
                ", apiErrorMessage='" + apiErrorMessage + '\'' +
                '}';
        FailureReason r = getReason();
        return rawReason < 0 ? apple : apple + ": " + (r != null ? r.name() : String.valueOf(rawReason)) + ": " + getMessage();
    }
}
