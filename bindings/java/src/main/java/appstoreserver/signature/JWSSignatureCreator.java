package appstoreserver.signature;

import java.util.UUID;

/**
 * The base of the JWS signature creators (Apple's abstract class): a signing key with its audience. Subclasses sign
 * the claim sets Apple documents through the native core; signing arbitrary claims (Apple's protected
 * createSignature(Map)) is not offered. Holds a native key: close() frees it (a creator dropped without close() is
 * freed when collected); a creator made from a {@link SigningKey} leaves that key open.
 */
public abstract class JWSSignatureCreator implements AutoCloseable {
    private final String audience;
    private final SigningKey key;
    private final boolean ownsKey;

    public JWSSignatureCreator(String audience, String signingKey, String keyId, String issuerId, String bundleId) {
        this.audience = audience;
        appstoreserver.internal.Args.notNull(issuerId, "issuerId");
        this.key = new SigningKey(signingKey, keyId, issuerId, bundleId);
        this.ownsKey = true;
    }

    /** Beyond Apple: a creator over a key you hold (e.g. one whose signatures an {@link ExternalSigner} makes). */
    protected JWSSignatureCreator(String audience, SigningKey key) {
        this.audience = audience;
        this.key = appstoreserver.internal.Args.notNull(key, "signingKey");
        this.ownsKey = false;
    }

    /** The aud claim of the signatures this creator makes. */
    public String getAudience() {
        return audience;
    }

    protected SigningKey signingKey() {
        return key;
    }

    /**
     * The nonce of the next signature (Apple's extension point): a random UUID; a subclass may return its own, which is
     * signed as the nonce claim (lowercase, as {@link UUID#toString()}). Called once per createSignature; null lets
     * the native core make a random one.
     */
    protected UUID createNonce() {
        return UUID.randomUUID();
    }

    @Override
    public void close() {
        if (ownsKey) {
            key.close();
        }
    }
}
