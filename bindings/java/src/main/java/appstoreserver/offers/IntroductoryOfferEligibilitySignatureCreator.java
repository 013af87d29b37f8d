package appstoreserver.offers;

import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Signing;
import appstoreserver.signature.JWSSignatureCreator;
import appstoreserver.signature.SigningKey;

/**
 * Introductory offer eligibility signatures (a JWS with aud "introductory-offer-eligibility"; Apple's class).
 */
public class IntroductoryOfferEligibilitySignatureCreator extends JWSSignatureCreator {
    private static final String AUDIENCE = "introductory-offer-eligibility";

    /**
     * @param signingKey Your private key downloaded from App Store Connect
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect
     * @param bundleId Your app's bundle ID
     */
    public IntroductoryOfferEligibilitySignatureCreator(String signingKey, String keyId, String issuerId, String bundleId) {
        super(AUDIENCE, signingKey, keyId, issuerId, bundleId);
    }

    /** Beyond Apple: signatures made with a key you hold (e.g. one held in a KMS). */
    public IntroductoryOfferEligibilitySignatureCreator(SigningKey signingKey) {
        super(AUDIENCE, signingKey);
    }

    /**
     * An introductory offer eligibility JWS (aud "introductory-offer-eligibility"): productId, allowIntroductoryOffer
     * (a JSON boolean) and transactionId, all required.
     *
     * <p>Create an introductory offer eligibility signature.
     *
     * @param productId The unique identifier of the product
     * @param allowIntroductoryOffer Whether the customer is eligible for an introductory offer
     * @param transactionId The unique identifier of any transaction that belongs to the customer.
     * @return The signed JWS
     * @cfunction appstore_signing_key_create_introductory_offer_eligibility
     */
    public String createSignature(String productId, boolean allowIntroductoryOffer, String transactionId) {
        if (productId == null) {
            throw new IllegalArgumentException("productId cannot be null");
        }
        if (transactionId == null) {
            throw new IllegalArgumentException("transactionId cannot be null");
        }
        byte[] p = Args.cString(productId, "productId");
        byte[] t = Args.cString(transactionId, "transactionId");
        byte[] n = Signing.nonce(createNonce());
        return Signing.call(signingKey(), h -> Abi.signing_key_create_introductory_offer_eligibility(h, p,
                allowIntroductoryOffer ? 1 : 0, t, n));
    }
}
