package appstoreserver.internal;

import java.nio.charset.StandardCharsets;

/**
 * Argument checks with the messages the public API promises: null is a NullPointerException naming the parameter,
 * text with a NUL character where the library takes a C string is an IllegalArgumentException.
 */
public final class Args {
    private Args() {
    }

    public static <T> T notNull(T value, String name) {
        if (value == null) {
            throw new NullPointerException(name + " must not be null");
        }
        return value;
    }

    /** UTF-8 of text the library reads with its length (a JWS, a receipt, a key); unpaired surrogates become '?'. */
    public static byte[] text(String value, String name) {
        return notNull(value, name).getBytes(StandardCharsets.UTF_8);
    }

    /** UTF-8 of a string the library reads NUL-terminated. */
    public static byte[] cString(String value, String name) {
        byte[] b = text(value, name);
        for (byte x : b) {
            if (x == 0) {
                throw new IllegalArgumentException(name + " must not contain a NUL character");
            }
        }
        return b;
    }

    /** cString, or null for null. */
    public static byte[] optionalCString(String value, String name) {
        return value == null ? null : cString(value, name);
    }

    /**
     * Reads every stream of a collection to its end (not closing them). The collection is checked element by element,
     * so a raw collection with something else in it is an IllegalArgumentException, not a ClassCastException.
     */
    public static java.util.List<byte[]> readStreams(java.util.Collection<?> streams, String name) {
        notNull(streams, name);
        java.util.List<byte[]> out = new java.util.ArrayList<>();
        for (Object o : streams) {
            if (o == null) {
                throw new NullPointerException(name + " must not contain null");
            }
            if (!(o instanceof java.io.InputStream)) {
                throw new IllegalArgumentException(name + " must hold InputStreams, got " + o.getClass().getName());
            }
            try {
                out.add(((java.io.InputStream) o).readAllBytes());
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(name + ": cannot read a certificate: " + e.getMessage(), e);
            }
        }
        return out;
    }

    public static String utf8(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
