package appstoreserver.internal;

import appstoreserver.AppStoreServerException;
import appstoreserver.AppStoreStatus;
import appstoreserver.InvalidArgumentException;

/** Library failures that are not verification failures, as public exceptions. */
public final class Errors {
    private Errors() {
    }

    /**
     * INVALID_ARGUMENT (a value the library refuses, e.g. a request beyond Apple's limits) is an
     * IllegalArgumentException (InvalidArgumentException); everything else an AppStoreServerException.
     */
    public static RuntimeException library(NativeError e, Throwable cause) {
        if (e.status == AppStoreStatus.INVALID_ARGUMENT.getValue()) {
            InvalidArgumentException x = new InvalidArgumentException(e.status, e.reason, e.detail);
            if (cause != null) {
                x.initCause(cause);
            }
            return x;
        }
        return new AppStoreServerException(e.status, e.reason, e.detail, cause);
    }

    public static RuntimeException library(NativeError e) {
        return library(e, null);
    }
}
