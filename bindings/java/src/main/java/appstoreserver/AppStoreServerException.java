package appstoreserver;

/**
 * A failure of the library that is not a verification failure nor an App Store Server API error: a signing key that
 * cannot be used (INVALID_KEY: not PEM, encrypted, not EC P-256; an external signer that failed, with what it threw as
 * the cause), a receipt that cannot be read (INVALID_RECEIPT), a configuration the library refuses, an internal
 * error. Unchecked, as Apple's Java library throws RuntimeException for these. getStatus() and getReason() say what
 * failed; getMessage() says it in words.
 */
public class AppStoreServerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int rawStatus;
    private final int rawReason;
    private final String detail;

    public AppStoreServerException(int status, int reason, String message, Throwable cause) {
        super(message, cause);
        this.rawStatus = status;
        this.rawReason = reason;
        this.detail = message;
    }

    /** The library's status (null for a value this version does not know: see getRawStatus()). */
    public AppStoreStatus getStatus() {
        return AppStoreStatus.fromValue(rawStatus);
    }

    public int getRawStatus() {
        return rawStatus;
    }

    /** Why it failed (null for a value this version does not know: see getRawReason()). */
    public FailureReason getReason() {
        return FailureReason.fromValue(rawReason);
    }

    public int getRawReason() {
        return rawReason;
    }

    @Override
    public String toString() {
        FailureReason r = getReason();
        AppStoreStatus s = getStatus();
        return getClass().getName() + ": " + (s != null ? s.name() : String.valueOf(rawStatus)) + " ("
                + (r != null ? r.getReasonName() : String.valueOf(rawReason)) + "): " + detail;
    }
}
