package appstoreserver.verification;

import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;

/**
 * Signed data that did not verify (Apple's checked exception, same constructors). getStatus() is Apple's Java
 * VerificationStatus for the failure, as Apple's Java library reports it (e.g. INVALID_CHAIN for an expired or
 * untrusted chain). Beyond Apple: getReason() says precisely why (EXPIRED, BAD_SIGNATURE, WRONG_BUNDLE, ...),
 * getAppStoreStatus() is the library's finer status, and getMessage() is Apple's text followed by the reason and what
 * exactly failed, e.g. {@code Verification failed with status INVALID_CHAIN (EXPIRED): certificate x5c[0] ... expired}.
 */
public class VerificationException extends Exception {
    private static final long serialVersionUID = 1L;

    private final VerificationStatus status;
    private final int rawAppStoreStatus;
    private final int rawReason;
    private final String detail;

    public VerificationException(VerificationStatus status) {
        super("Verification failed with status " + status);
        this.status = status;
        this.rawAppStoreStatus = -1;
        this.rawReason = -1;
        this.detail = null;
    }

    public VerificationException(VerificationStatus status, String message) {
        super("Verification failed with status " + status + ". " + message);
        this.status = status;
        this.rawAppStoreStatus = -1;
        this.rawReason = -1;
        this.detail = message;
    }

    public VerificationException(VerificationStatus status, Throwable cause) {
        super("Verification failed with status " + status, cause);
        this.status = status;
        this.rawAppStoreStatus = -1;
        this.rawReason = -1;
        this.detail = null;
    }

    /** A failure the library reported: Apple's status, the library's status and reason, the library's message. */
    public VerificationException(VerificationStatus status, int appStoreStatus, int reason, String message, Throwable cause) {
        super(text(status, reason, message), cause);
        this.status = status;
        this.rawAppStoreStatus = appStoreStatus;
        this.rawReason = reason;
        this.detail = message;
    }

    private static String text(VerificationStatus status, int reason, String message) {
        FailureReason r = FailureReason.fromValue(reason);
        return "Verification failed with status " + status + " (" + (r != null ? r.name() : String.valueOf(reason)) + "): "
                + message;
    }

    /** Apple's Java VerificationStatus for the failure. */
    public VerificationStatus getStatus() {
        return this.status;
    }

    /** Why it failed (beyond Apple); null when the exception was made with Apple's constructors or the reason is new. */
    public FailureReason getReason() {
        return rawReason < 0 ? null : FailureReason.fromValue(rawReason);
    }

    /** The reason's number (-1 when made with Apple's constructors). */
    public int getRawReason() {
        return rawReason;
    }

    /** The library's precise status (beyond Apple), e.g. INVALID_JWT_FORMAT where Apple says VERIFICATION_FAILURE. */
    public AppStoreStatus getAppStoreStatus() {
        return rawAppStoreStatus < 0 ? null : AppStoreStatus.fromValue(rawAppStoreStatus);
    }

    /** What exactly failed, without Apple's prefix (null when made with Apple's constructors without a message). */
    public String getDetail() {
        return detail;
    }
}
