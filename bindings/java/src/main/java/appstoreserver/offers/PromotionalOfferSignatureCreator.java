package appstoreserver.offers;

import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Signing;
import appstoreserver.signature.SigningKey;

import java.util.UUID;

/**
 * Promotional offer signatures, version 1 (StoreKit 1; Apple's class). The signature is the standard base64 DER
 * ECDSA over bundle id, key id, product id, offer id, lowercase app account token, lowercase nonce and timestamp,
 * joined by U+2063, as Apple's library makes it. Holds a native key: close() frees it.
 */
public class PromotionalOfferSignatureCreator implements AutoCloseable {
    private final SigningKey key;
    private final boolean ownsKey;

    /**
     * @param signingKey Your private key downloaded from App Store Connect
     * @param keyId Your private key ID from App Store Connect
     * @param bundleId Your app's bundle ID
     */
    public PromotionalOfferSignatureCreator(String signingKey, String keyId, String bundleId) {
        this.key = new SigningKey(signingKey, keyId, null, bundleId);
        this.ownsKey = true;
    }

    /** Beyond Apple: signatures made with a key you hold (e.g. one held in a KMS: SigningKey.withSigner). */
    public PromotionalOfferSignatureCreator(SigningKey signingKey) {
        this.key = Args.notNull(signingKey, "signingKey");
        this.ownsKey = false;
    }

    /**
     * A promotional offer signature v1 (StoreKit 1): the standard base64 DER ECDSA signature over the U+2063-joined
     * string of bundle id, key id, product id, offer id, lowercase application username (app account token),
     * lowercase nonce and timestamp (milliseconds since 1970).
     *
     * <p>Create a promotional offer signature
     *
     * @param productIdentifier The subscription product identifier
     * @param subscriptionOfferID The subscription discount identifier
     * @param appAccountToken An optional string value that you define; may be an empty string
     * @param nonce A one-time UUID value that your server generates. Generate a new nonce for every signature.
     * @param timestamp A timestamp your server generates in UNIX time format, in milliseconds. The timestamp keeps the
     *                  offer active for 24 hours.
     * @return The Base64 encoded signature
     * @cfunction appstore_signing_key_create_promotional_offer_v1
     */
    public String createSignature(String productIdentifier, String subscriptionOfferID, String appAccountToken,
                                  UUID nonce, long timestamp) {
        byte[] product = Args.cString(productIdentifier, "productIdentifier");
        byte[] offer = Args.cString(subscriptionOfferID, "subscriptionOfferID");
        byte[] token = Args.cString(appAccountToken, "appAccountToken");
        byte[] n = Args.cString(Args.notNull(nonce, "nonce").toString(), "nonce");
        if (timestamp <= 0) {
            throw new IllegalArgumentException("timestamp must be a positive number of milliseconds, got " + timestamp);
        }
        Object[] out = Signing.callMany(key, h -> Abi.signing_key_create_promotional_offer_v1(h, product, offer, token, n,
                timestamp));
        return Args.utf8((byte[]) out[0]);
    }

    @Override
    public void close() {
        if (ownsKey) {
            key.close();
        }
    }
}
