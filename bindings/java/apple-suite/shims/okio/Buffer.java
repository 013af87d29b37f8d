package okio;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** The part of okio.Buffer Apple's tests use (harness only: not part of the library). */
public final class Buffer {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    public Buffer write(byte[] b) {
        bytes.writeBytes(b);
        return this;
    }

    public byte[] readByteArray() {
        byte[] b = bytes.toByteArray();
        bytes.reset();
        return b;
    }

    public String readUtf8() {
        return new String(readByteArray(), StandardCharsets.UTF_8);
    }
}
