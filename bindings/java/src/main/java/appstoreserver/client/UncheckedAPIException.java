package appstoreserver.client;

/**
 * An APIException thrown where a checked exception cannot be: while iterating the pages of a ...Pages method
 * (Iterator and Stream methods throw no checked exceptions). getCause() is the APIException.
 */
public class UncheckedAPIException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UncheckedAPIException(APIException cause) {
        super(cause.getMessage(), cause);
    }

    @Override
    public synchronized APIException getCause() {
        return (APIException) super.getCause();
    }
}
