package appstoreserver.internal;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One library object (a verifier, a key, a transport, ...) owned by a Java object. Calls borrow it with acquire() /
 * release() around the native call; close() frees it once no call uses it any more, so close() on one thread while
 * another verifies never frees memory in use, and no Java lock is held during a native call (a lock-free count).
 * Handles this one depends on (a verifier's transport, a key's external-signer context) are released after it is
 * freed. After close(), acquire() throws IllegalStateException naming the object.
 */
public final class NativeHandle {
    /** Frees the library object. */
    public interface Free {
        void free(long pointer);
    }

    private static final long CLOSED = 1L << 62;
    private static final long COUNT = CLOSED - 1;

    private final AtomicLong state = new AtomicLong(1); // the owner's reference
    private final long pointer;
    private final Free free;
    private final String what;
    private final NativeHandle[] dependencies;

    /**
     * Takes ownership of pointer; retains each dependency until this handle is freed.
     */
    public NativeHandle(String what, long pointer, Free free, NativeHandle... dependencies) {
        if (pointer == 0) {
            throw new IllegalStateException(what + ": the library returned no object");
        }
        this.what = what;
        this.pointer = pointer;
        this.free = free;
        this.dependencies = dependencies.clone();
        for (NativeHandle d : this.dependencies) {
            if (d != null) {
                d.retain();
            }
        }
    }

    /** The pointer, for one call; pair with release(). */
    public long acquire() {
        for (;;) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                throw new IllegalStateException(what + " is closed");
            }
            if (state.compareAndSet(s, s + 1)) {
                return pointer;
            }
        }
    }

    public void release() {
        long s = state.decrementAndGet();
        if ((s & COUNT) == 0) {
            destroy();
        }
    }

    /** A reference held by another handle (not refused after close(): the holder was made while this was open). */
    void retain() {
        state.incrementAndGet();
    }

    /** Frees the object now, or when the last call using it returns. Idempotent. */
    public void close() {
        for (;;) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                return;
            }
            long next = (s | CLOSED) - 1;
            if (state.compareAndSet(s, next)) {
                if ((next & COUNT) == 0) {
                    destroy();
                }
                return;
            }
        }
    }

    public boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    private void destroy() {
        free.free(pointer);
        for (NativeHandle d : dependencies) {
            if (d != null) {
                d.release();
            }
        }
    }
}
