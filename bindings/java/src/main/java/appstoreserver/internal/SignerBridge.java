package appstoreserver.internal;

/**
 * What the library's signer callback calls (src/main/c/jni.c, signer_callback) on the thread that asked for a
 * signature: the ECDSA P-256 signature of SHA-256(message) (DER or 64 bytes r||s), or null when the signer failed.
 */
public interface SignerBridge {
    /** timeoutMillis: the time the signature may take (the key's timeout, or an API call's time left). */
    byte[] sign(byte[] message, byte[] digest, long timeoutMillis);
}
