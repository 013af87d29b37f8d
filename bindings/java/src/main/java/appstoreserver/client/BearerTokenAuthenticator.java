package appstoreserver.client;

import appstoreserver.signature.SigningKey;

/**
 * The App Store Server API bearer token of a signing key (Apple's class): ES256, header kid and typ JWT, claims iss,
 * iat, exp (5 minutes later), aud "appstoreconnect-v1", bid, signed by the native core. Beyond Apple: made from a
 * {@link SigningKey}, which may be held in a KMS or an HSM. Thread-safe; close() frees the key it made.
 */
public class BearerTokenAuthenticator implements BearerTokenAuthenticatorInterface, AutoCloseable {
    private final SigningKey signingKey;
    private final boolean owned;

    /**
     * @param signingKey Your private key downloaded from App Store Connect (the .p8 text)
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect
     * @param bundleId Your app's bundle ID
     * @throws appstoreserver.AppStoreServerException the key cannot be used (KEY_NOT_PEM, KEY_NOT_EC, ...); Apple's
     *                                                library throws a RuntimeException there too
     */
    public BearerTokenAuthenticator(String signingKey, String keyId, String issuerId, String bundleId) {
        this.signingKey = new SigningKey(signingKey, keyId, issuerId, bundleId);
        this.owned = true;
    }

    /** Beyond Apple: tokens signed with a key you hold (a .p8 or an external signer); close() leaves it open. */
    public BearerTokenAuthenticator(SigningKey signingKey) {
        if (signingKey == null) {
            throw new NullPointerException("signingKey must not be null");
        }
        this.signingKey = signingKey;
        this.owned = false;
    }

    @Override
    public String generateToken() {
        return signingKey.createApiToken();
    }

    /** The key the tokens are signed with. */
    public SigningKey getSigningKey() {
        return signingKey;
    }

    /** Frees the key this authenticator made from the .p8 text (clients made with it keep their own reference). */
    @Override
    public void close() {
        if (owned) {
            signingKey.close();
        }
    }
}
