package appstoreserver.internal;

import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;

import java.util.function.Function;

/**
 * What other packages of the binding (the ledger) need of a SignedDataVerifier without it being public API: its
 * native handle, and its mapping of a library failure to VerificationException. Set once by SignedDataVerifier.
 */
public final class Verifiers {
    private static volatile Function<SignedDataVerifier, NativeHandle> handles;
    private static volatile Function<NativeError, VerificationException> failures;

    private Verifiers() {
    }

    /** Called once by SignedDataVerifier's static initializer. */
    public static void set(Function<SignedDataVerifier, NativeHandle> handleOf,
                           Function<NativeError, VerificationException> failureOf) {
        handles = handleOf;
        failures = failureOf;
    }

    public static NativeHandle handle(SignedDataVerifier verifier) {
        return handles.apply(Args.notNull(verifier, "verifier"));
    }

    /** The VerificationException a verify call throws for this failure (INVALID_ARGUMENT: thrown as IllegalArgumentException). */
    public static VerificationException failure(NativeError e) {
        return failures.apply(e);
    }
}
