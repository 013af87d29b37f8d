package appstoreserver.tests;

import appstoreserver.internal.Abi;
import appstoreserver.model.Environment;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;

import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Set;

/**
 * bindings/java/leak-check (and, shorter, LeakTest): N verifications (half valid, half a forged signature) on one verifier, plus verifiers made
 * and closed or dropped, printing RSS every N/10; fails when RSS after the first tenth grows by more than the limit.
 * Arguments: TESTPKI_DIR [N] [LIMIT_KB].
 */
public class LeakCheck {
    static long rssKb() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    public static void main(String[] args) throws Exception {
        Path pki = Paths.get(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        long limitKb = args.length > 2 ? Long.parseLong(args[2]) : 16 * 1024;
        byte[] root = Files.readAllBytes(pki.resolve("root.der"));
        String valid = Files.readString(pki.resolve("jws/tx-valid.jws")).trim();
        String forged = Files.readString(pki.resolve("jws/tx-bad-signature-payload-modified.jws")).trim();
        long baseline = -1;
        long max = 0;
        long t0 = System.nanoTime();
        try (SignedDataVerifier v = new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), "com.example.testpki",
                null, Environment.SANDBOX, false)) {
            for (int i = 1; i <= n; i++) {
                if ((i & 1) == 0) {
                    v.verifyAndDecodeTransaction(valid);
                } else {
                    try {
                        v.verifyAndDecodeTransaction(forged);
                        throw new AssertionError("a forged signature verified");
                    } catch (VerificationException expected) {
                        // the failure path allocates native errors too
                    }
                }
                if (i % 100 == 0) {
                    // verifiers made and closed, and dropped for the Cleaner (with online checks: a transport each)
                    new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), "b", null, Environment.SANDBOX, true).close();
                    new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), "b", null, Environment.SANDBOX, true);
                }
                if (i % (n / 10) == 0) {
                    System.gc();
                    long rss = rssKb();
                    if (baseline < 0) {
                        baseline = rss;
                    }
                    max = Math.max(max, rss);
                    System.out.printf("leak-check: %,9d verifications  RSS %,8d KB  (%+,d KB since the first tenth)  "
                            + "bridges %d%n", i, rss, rss - baseline, Abi.live_bridges());
                }
            }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        long growth = max - baseline;
        System.out.printf("leak-check: %,d verifications in %.1f s; RSS growth after the first tenth %,d KB (limit %,d KB): %s%n",
                n, secs, growth, limitKb, growth <= limitKb ? "flat" : "GROWING");
        System.exit(growth <= limitKb ? 0 : 1);
    }
}
