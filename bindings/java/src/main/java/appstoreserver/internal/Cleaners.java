package appstoreserver.internal;

import java.lang.ref.Cleaner;

/** The binding's one Cleaner: frees the native objects of objects dropped without close(). */
public final class Cleaners {
    public static final Cleaner CLEANER = Cleaner.create();

    private Cleaners() {
    }

    /** Registers handle.close() to run when owner becomes unreachable; close the returned Cleanable to run it now. */
    public static Cleaner.Cleanable register(Object owner, NativeHandle handle) {
        return CLEANER.register(owner, handle::close);
    }
}
