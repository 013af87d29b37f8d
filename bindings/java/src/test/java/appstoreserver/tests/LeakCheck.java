package appstoreserver.tests;

import appstoreserver.internal.Abi;
import appstoreserver.model.Environment;
import appstoreserver.offers.PromotionalOfferV2SignatureCreator;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;

import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The Java workload of the leak check (Tests/support/leakcheck.py judges it; bindings/java/leak-check and
 * scripts/leak-check java run the long form, LeakTest the short one). Arguments: TESTPKI_DIR CALLS none|handles|malloc.
 *
 * <p>CALLS verifications on one verifier as an application makes them (valid transactions, a forged signature: native
 * errors too, notifications), and every 100th call verifiers made and closed or dropped for the Cleaner (with online
 * checks: a transport bridge each) and an offer signature. At the start and after every thirtieth of the calls, after
 * System.gc(), it prints "leak-sample CALLS LIVE_OBJECTS MALLOC_IN_USE" (the library's own count and malloc's in-use
 * bytes: the JIT, the code cache and the heap move the resident size by tens of MiB without any leak). Self-test modes:
 * handles keeps a verifier options handle per call (never freed), malloc keeps 1,024 bytes of direct (malloc'd)
 * memory per call.
 */
public class LeakCheck {
    private static void sample(long done) throws InterruptedException {
        System.gc();
        Thread.sleep(10); // a turn for the Cleaner's thread; the judge reads the trend, so its lag does not matter
        System.out.println("leak-sample " + done + " " + Abi.debug_live_objects() + " " + Abi.debug_malloc_in_use());
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3 || !Set.of("none", "handles", "malloc").contains(args[2])) {
            System.err.println("usage: LeakCheck TESTPKI_DIR CALLS none|handles|malloc");
            System.exit(2);
        }
        Path pki = Paths.get(args[0]);
        int n = Integer.parseInt(args[1]);
        String mode = args[2];
        byte[] root = Files.readAllBytes(pki.resolve("root.der"));
        String valid = Files.readString(pki.resolve("jws/tx-valid.jws")).trim();
        String forged = Files.readString(pki.resolve("jws/tx-bad-signature-payload-modified.jws")).trim();
        String notification = Files.readString(pki.resolve("jws/notif-valid-did-renew.jws")).trim();
        String key = Files.readString(pki.resolve("leaf_key.pem")); // PKCS#8 P-256, as App Store Connect hands out
        List<Object> kept = new ArrayList<>();
        int failures = 0;
        try (SignedDataVerifier v = new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), "com.example.testpki",
                null, Environment.SANDBOX, false)) {
            sample(0);
            for (int i = 1; i <= n; i++) {
                int k = i % 10;
                if (k == 0) {
                    try {
                        v.verifyAndDecodeTransaction(forged);
                        throw new AssertionError("a forged signature verified");
                    } catch (VerificationException expected) {
                        failures++;
                    }
                } else if (k == 5) {
                    v.verifyAndDecodeNotification(notification);
                } else {
                    v.verifyAndDecodeTransaction(valid);
                }
                if (i % 100 == 0) {
                    new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), "b", null, Environment.SANDBOX, true).close();
                    new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), "b", null, Environment.SANDBOX, true);
                    try (PromotionalOfferV2SignatureCreator c = new PromotionalOfferV2SignatureCreator(key, "KEYID", "issuer",
                            "com.example.testpki")) {
                        c.createSignature("p", "o", null);
                    }
                }
                if (mode.equals("handles")) {
                    kept.add(Abi.verifier_options_new());
                } else if (mode.equals("malloc")) {
                    kept.add(ByteBuffer.allocateDirect(1024).put(0, (byte) 1));
                }
                if ((long) i * 30 / n != (long) (i - 1) * 30 / n) {
                    sample(i);
                }
            }
        }
        if (failures != n / 10) {
            System.err.println(failures + " failures, " + (n / 10) + " expected");
            System.exit(1);
        }
        java.lang.ref.Reference.reachabilityFence(kept); // what the self-test keeps stays alive to the end
        System.exit(0);
    }
}
