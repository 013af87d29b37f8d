/*
 * Every page of a customer's refund history through the App Store Server API (Get Refund History), with retries and
 * the Sandbox fallback that App Review's purchases need.
 *
 *     APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" java -cp appstoreserver-VERSION.jar:jackson-*.jar \
 *         RefundHistory.java --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app 2000000000000001
 *
 * --base-url points the client at another server (a test server); without it, Apple's.
 */
import appstoreserver.AppStoreServerException;
import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.client.BaseAppStoreServerAPIClient;
import appstoreserver.client.UncheckedAPIException;
import appstoreserver.model.Environment;
import appstoreserver.model.RefundHistoryResponse;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class RefundHistory {
    static final String USAGE = "usage: RefundHistory --key-id ID --issuer-id ID --bundle-id ID "
            + "[--environment Sandbox|Production] [--base-url URL] TRANSACTION_ID\n"
            + "  the .p8 key's text in APPSTORE_PRIVATE_KEY (never on a command line)";

    public static void main(String[] args) {
        Map<String, String> o = new HashMap<>(Map.of("--environment", "Production"));
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
        if (positional.size() != 1 || !o.containsKey("--key-id") || !o.containsKey("--issuer-id")
                || !o.containsKey("--bundle-id") || key == null) {
            usage(key == null ? "APPSTORE_PRIVATE_KEY is not set" : "TRANSACTION_ID, --key-id, --issuer-id and --bundle-id are required");
        }
        Environment env = Environment.fromValue(o.get("--environment"));
        if (env != Environment.SANDBOX && env != Environment.PRODUCTION) {
            usage("--environment: Sandbox or Production");
        }
        BaseAppStoreServerAPIClient.Options options = new BaseAppStoreServerAPIClient.Options()
                .retries(3, Duration.ofMillis(500), Duration.ofSeconds(8))
                .sandboxFallback(env == Environment.PRODUCTION);
        if (o.containsKey("--base-url")) {
            options.baseUrl(o.get("--base-url"));
        }
        AppStoreServerAPIClient client = new AppStoreServerAPIClient(key, o.get("--key-id"), o.get("--issuer-id"),
                o.get("--bundle-id"), env, options);
        try {
            int number = 0;
            for (RefundHistoryResponse page : client.getRefundHistoryPages(positional.get(0))) {
                int n = page.getSignedTransactions() == null ? 0 : page.getSignedTransactions().size();
                System.out.println("page " + ++number + ": " + n + " refunded transactions, more: "
                        + Boolean.TRUE.equals(page.getHasMore()));
            }
        } catch (UncheckedAPIException e) {
            System.err.println("failed: " + e.getCause()); // HTTP status, Apple's error code and message, Retry-After
            System.exit(1);
        } catch (UncheckedIOException e) {
            // No answer (never retried: it may have reached Apple). The core's account of it (TRANSPORT_UNREACHABLE,
            // TRANSPORT_TIMEOUT, TRANSPORT_FAILED) is a suppressed AppStoreServerException of the IOException.
            Throwable why = e.getCause();
            for (Throwable s : e.getCause().getSuppressed()) {
                why = s instanceof AppStoreServerException ? s : why;
            }
            System.err.println("failed: " + why);
            System.exit(1);
        }
    }

    static void usage(String why) {
        System.err.println(why + "\n" + USAGE);
        System.exit(2);
    }
}
