/*
 * Sign a promotional offer for StoreKit 2 (Promotional Offer V2 signature, a JWS your app passes to StoreKit).
 *
 *     APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" java -cp appstoreserver-VERSION.jar:jackson-*.jar \
 *         OfferSignature.java --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app \
 *         com.example.monthly WINBACK
 */
import appstoreserver.AppStoreServerException;
import appstoreserver.offers.PromotionalOfferV2SignatureCreator;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class OfferSignature {
    static final String USAGE = "usage: OfferSignature --key-id ID --issuer-id ID --bundle-id ID "
            + "[--transaction-id ID] PRODUCT_ID OFFER_ID\n"
            + "  the .p8 key's text in APPSTORE_PRIVATE_KEY (never on a command line); --transaction-id: the customer's, "
            + "when the offer is for one customer";

    public static void main(String[] args) {
        Map<String, String> o = new HashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--help")) {
                System.out.println(USAGE);
                return;
            }
            if (args[i].startsWith("--")) {
                if (i + 1 == args.length) {
                    usage(args[i] + " needs a value");
                }
                o.put(args[i], args[++i]);
            } else {
                positional.add(args[i]);
            }
        }
        String key = System.getenv("APPSTORE_PRIVATE_KEY");
        if (positional.size() != 2 || !o.containsKey("--key-id") || !o.containsKey("--issuer-id")
                || !o.containsKey("--bundle-id") || key == null) {
            usage(key == null ? "APPSTORE_PRIVATE_KEY is not set" : "PRODUCT_ID, OFFER_ID, --key-id, --issuer-id and --bundle-id are required");
        }
        try {
            PromotionalOfferV2SignatureCreator creator = new PromotionalOfferV2SignatureCreator(key, o.get("--key-id"),
                    o.get("--issuer-id"), o.get("--bundle-id"));
            System.out.println(creator.createSignature(positional.get(0), positional.get(1), o.get("--transaction-id")));
        } catch (AppStoreServerException | IllegalArgumentException e) {
            System.err.println("failed: " + e.getMessage()); // a key that is not an EC P-256 .p8, with why
            System.exit(1);
        }
    }

    static void usage(String why) {
        System.err.println(why + "\n" + USAGE);
        System.exit(2);
    }
}
