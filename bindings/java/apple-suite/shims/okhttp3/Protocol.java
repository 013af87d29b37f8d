package okhttp3;

/** The part of okhttp3.Protocol Apple's tests use (harness only). */
public enum Protocol {
    HTTP_1_1
}
