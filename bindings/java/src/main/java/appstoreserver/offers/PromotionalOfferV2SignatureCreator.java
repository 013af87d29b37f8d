package appstoreserver.offers;

import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Signing;
import appstoreserver.signature.JWSSignatureCreator;
import appstoreserver.signature.SigningKey;

/**
 * Promotional offer signatures, version 2 (a JWS with aud "promotional-offer"; Apple's class).
 */
public class PromotionalOfferV2SignatureCreator extends JWSSignatureCreator {
    private static final String AUDIENCE = "promotional-offer";

    /**
     * @param signingKey Your private key downloaded from App Store Connect
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect
     * @param bundleId Your app's bundle ID
     */
    public PromotionalOfferV2SignatureCreator(String signingKey, String keyId, String issuerId, String bundleId) {
        super(AUDIENCE, signingKey, keyId, issuerId, bundleId);
    }

    /** Beyond Apple: signatures made with a key you hold (e.g. one held in a KMS). */
    public PromotionalOfferV2SignatureCreator(SigningKey signingKey) {
        super(AUDIENCE, signingKey);
    }

    /**
     * A promotional offer V2 JWS (aud "promotional-offer"): productId, offerIdentifier, and transactionId when one is
     * given. No exp; the nonce a lowercase UUID.
     *
     * <p>Create a promotional offer V2 signature.
     *
     * @param productId The unique identifier of the product
     * @param offerIdentifier The promotional offer identifier that you set up in App Store Connect.
     * @param transactionId The unique identifier of any transaction that belongs to the customer (optional, but
     *                      recommended).
     * @return The signed JWS
     * @cfunction appstore_signing_key_create_promotional_offer_v2
     */
    public String createSignature(String productId, String offerIdentifier, String transactionId) {
        if (productId == null) {
            throw new IllegalArgumentException("productId cannot be null");
        }
        if (offerIdentifier == null) {
            throw new IllegalArgumentException("offerIdentifier cannot be null");
        }
        byte[] p = Args.cString(productId, "productId");
        byte[] o = Args.cString(offerIdentifier, "offerIdentifier");
        byte[] t = Args.optionalCString(transactionId, "transactionId");
        byte[] n = Signing.nonce(createNonce());
        return Signing.call(signingKey(), h -> Abi.signing_key_create_promotional_offer_v2(h, p, o, t, n));
    }
}
