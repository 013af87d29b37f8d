package appstoreserver;

/**
 * An argument the library refuses (status INVALID_ARGUMENT): a request beyond Apple's documented limits (reason
 * INVALID_REQUEST, the message naming the field, e.g. "items[0].SKU ..."), a JSON key the model does not know, a value
 * out of range. An IllegalArgumentException, as Apple's Java library throws for its validations.
 */
public class InvalidArgumentException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final int rawStatus;
    private final int rawReason;

    public InvalidArgumentException(int status, int reason, String message) {
        super(message);
        this.rawStatus = status;
        this.rawReason = reason;
    }

    public AppStoreStatus getStatus() {
        return AppStoreStatus.fromValue(rawStatus);
    }

    public FailureReason getReason() {
        return FailureReason.fromValue(rawReason);
    }

    public int getRawReason() {
        return rawReason;
    }
}
