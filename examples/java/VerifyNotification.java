/*
 * Verify an App Store Server Notification V2 (the body Apple POSTs to your server) and print what it says.
 *
 *     java -cp appstoreserver-VERSION.jar:jackson-databind.jar:jackson-core.jar:jackson-annotations.jar \
 *         VerifyNotification.java notification.json com.example.app [--environment Production --app-apple-id 1234]
 *
 * Apple's root certificate comes with the jar (AppleRootCertificates, checked against the fingerprint Apple
 * publishes); --root FILE trusts another root instead (DER or PEM), e.g. for a test PKI.
 */
import appstoreserver.model.Environment;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.ResponseBodyV2DecodedPayload;
import appstoreserver.util.AppleRootCertificates;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

public class VerifyNotification {
    static final String USAGE = "usage: VerifyNotification NOTIFICATION BUNDLE_ID [--environment Sandbox|Production] "
            + "[--app-apple-id ID] [--root FILE]\n"
            + "  NOTIFICATION  the request body {\"signedPayload\": \"...\"} or the bare JWS, in a file";

    public static void main(String[] args) throws Exception {
        List<String> positional = new ArrayList<>();
        String environment = "Sandbox";
        Long appAppleId = null;
        String root = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--help":
                    System.out.println(USAGE);
                    return;
                case "--environment":
                case "--app-apple-id":
                case "--root":
                    if (i + 1 == args.length) {
                        usage(args[i] + " needs a value");
                    }
                    String value = args[++i];
                    if (args[i - 1].equals("--environment")) {
                        environment = value;
                    } else if (args[i - 1].equals("--root")) {
                        root = value;
                    } else {
                        try {
                            appAppleId = Long.parseLong(value);
                        } catch (NumberFormatException e) {
                            usage("--app-apple-id must be a number");
                        }
                    }
                    break;
                default:
                    positional.add(args[i]);
            }
        }
        if (positional.size() != 2 || !(environment.equals("Sandbox") || environment.equals("Production"))) {
            usage(positional.size() != 2 ? "NOTIFICATION and BUNDLE_ID are required" : "--environment: Sandbox or Production");
        }

        String text = Files.readString(Path.of(positional.get(0))).trim();
        String signedPayload = text.startsWith("{") ? new ObjectMapper().readTree(text).get("signedPayload").asText() : text;
        Set<InputStream> roots = root != null ? Set.of(new ByteArrayInputStream(Files.readAllBytes(Path.of(root))))
                : AppleRootCertificates.forSignedData();
        try (SignedDataVerifier verifier = new SignedDataVerifier(roots, positional.get(1), appAppleId,
                Environment.fromValue(environment), false)) {
            ResponseBodyV2DecodedPayload notification = verifier.verifyAndDecodeNotification(signedPayload);
            String subtype = notification.getRawSubtype();
            System.out.println(("type: " + notification.getRawNotificationType() + " " + (subtype == null ? "" : subtype)).trim());
            if (notification.getData() != null) {
                System.out.println("bundle: " + notification.getData().getBundleId() + ", environment: "
                        + notification.getData().getRawEnvironment());
                String signedTransaction = notification.getData().getSignedTransactionInfo();
                if (signedTransaction != null) {
                    JWSTransactionDecodedPayload t = verifier.verifyAndDecodeTransaction(signedTransaction);
                    System.out.println("transaction: " + t.getTransactionId() + " (" + t.getProductId() + ")");
                }
            }
        } catch (VerificationException e) {
            System.err.println("NOT VERIFIED: " + e); // the status, the reason and what exactly failed
            System.exit(1);
        }
    }

    static void usage(String why) {
        System.err.println(why + "\n" + USAGE);
        System.exit(2);
    }
}
