package okhttp3;

import java.util.Locale;

/** The part of okhttp3.MediaType Apple's tests use (harness only). */
public final class MediaType {
    private final String text;

    private MediaType(String text) {
        this.text = text;
    }

    public static MediaType parse(String text) {
        return text == null ? null : new MediaType(text);
    }

    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MediaType && ((MediaType) o).text.toLowerCase(Locale.ROOT).equals(text.toLowerCase(Locale.ROOT));
    }

    @Override
    public int hashCode() {
        return text.toLowerCase(Locale.ROOT).hashCode();
    }
}
