package appstoreserver.advancedcommerce;

import appstoreserver.internal.Abi;
import appstoreserver.internal.Json;
import appstoreserver.internal.Signing;
import appstoreserver.model.AdvancedCommerceInAppRequest;
import appstoreserver.signature.JWSSignatureCreator;
import appstoreserver.signature.SigningKey;

import java.io.IOException;

/**
 * Advanced Commerce in-app request signatures (a JWS with aud "advanced-commerce-api"; Apple's class). The request is
 * checked against Apple's documented limits before it is signed (an IllegalArgumentException naming the field, e.g.
 * {@code items[0].SKU}), and keys the model does not know are refused rather than dropped.
 */
public class AdvancedCommerceInAppSignatureCreator extends JWSSignatureCreator {
    private static final String AUDIENCE = "advanced-commerce-api";

    /**
     * @param signingKey Your private key downloaded from App Store Connect
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect
     * @param bundleId Your app's bundle ID
     */
    public AdvancedCommerceInAppSignatureCreator(String signingKey, String keyId, String issuerId, String bundleId) {
        super(AUDIENCE, signingKey, keyId, issuerId, bundleId);
    }

    /** Beyond Apple: signatures made with a key you hold (e.g. one held in a KMS). */
    public AdvancedCommerceInAppSignatureCreator(SigningKey signingKey) {
        super(AUDIENCE, signingKey);
    }

    /**
     * An Advanced Commerce in-app request JWS (aud "advanced-commerce-api"). The request is one of the four in-app
     * request models, chosen by its "operation" (CREATE_ONE_TIME_CHARGE, CREATE_SUBSCRIPTION, MODIFY_SUBSCRIPTION,
     * REACTIVATE_SUBSCRIPTION); it is validated against Apple's limits (a failure names the field), re-encoded with
     * operation and version "1", and its standard base64 is the `request` claim. Keys the model does not know are
     * refused at every level (the message names the key path, e.g. "items[0].descripton"), so nothing given is
     * dropped silently; "version", when given, must be "1".
     *
     * <p>Create an Advanced Commerce in-app signed request.
     *
     * @param advancedCommerceInAppRequest The request to be signed.
     * @return The signed JWS
     * @throws IOException the request cannot be written as JSON (Apple's declared exception)
     * @cfunction appstore_signing_key_create_advanced_commerce_in_app
     */
    public String createSignature(AdvancedCommerceInAppRequest advancedCommerceInAppRequest) throws IOException {
        if (advancedCommerceInAppRequest == null) {
            throw new IllegalArgumentException("advancedCommerceInAppRequest cannot be null");
        }
        byte[] json = Json.write(advancedCommerceInAppRequest);
        byte[] n = Signing.nonce(createNonce());
        return Signing.call(signingKey(), h -> Abi.signing_key_create_advanced_commerce_in_app(h, json, n));
    }
}
