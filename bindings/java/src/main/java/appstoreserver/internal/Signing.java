package appstoreserver.internal;

import appstoreserver.FailureReason;
import appstoreserver.signature.SigningKey;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.LongFunction;

/**
 * Calls that sign with a SigningKey: the key's handle is held for the call, a native failure becomes
 * AppStoreServerException / IllegalArgumentException, and when an external signer failed, what it threw is the cause.
 */
public final class Signing {
    /** What the external signer of the current thread's call threw (set by the signer bridge, read after the call). */
    public static final ThreadLocal<Throwable> SIGNER_FAILURE = new ThreadLocal<>();

    private static volatile Function<SigningKey, NativeHandle> handles;

    private Signing() {
    }

    /** Called once by SigningKey (its handle stays private to the public API). */
    public static void setHandles(Function<SigningKey, NativeHandle> f) {
        handles = f;
    }

    public static NativeHandle handle(SigningKey key) {
        return handles.apply(Args.notNull(key, "signingKey"));
    }

    /** The nonce argument of a JWS creator: what its createNonce() returned, as text; null lets the core make one. */
    public static byte[] nonce(UUID nonce) {
        return nonce == null ? null : nonce.toString().getBytes(StandardCharsets.US_ASCII);
    }

    public static String call(SigningKey key, LongFunction<byte[]> fn) {
        return new String(callMany(key, fn), StandardCharsets.UTF_8);
    }

    public static <T> T callMany(SigningKey key, LongFunction<T> fn) {
        NativeHandle handle = handle(key);
        long h = handle.acquire();
        SIGNER_FAILURE.remove();
        try {
            return fn.apply(h);
        } catch (NativeError e) {
            throw failure(e);
        } finally {
            handle.release();
        }
    }

    /** The public exception of a failed signing call (the signer's failure as the cause); clears the thread's note. */
    public static RuntimeException failure(NativeError e) {
        Throwable cause = SIGNER_FAILURE.get();
        SIGNER_FAILURE.remove();
        return Errors.library(e, e.reason == FailureReason.SIGNER_FAILED.getValue() ? cause : null);
    }
}
