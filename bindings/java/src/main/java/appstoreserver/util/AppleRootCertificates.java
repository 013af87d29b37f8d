package appstoreserver.util;

import appstoreserver.internal.Abi;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;

/**
 * Apple's root certificates as the library carries them, each checked against the SHA-256 fingerprint Apple publishes
 * (https://www.apple.com/certificateauthority/) before use, so a verifier needs no download:
 * {@code new SignedDataVerifier(AppleRootCertificates.forSignedData(), bundleId, appAppleId, environment, false)}.
 */
public final class AppleRootCertificates {
    /** One root: Apple's name for it, its SHA-256 fingerprint as Apple publishes it, and the DER bytes. */
    public static final class Root {
        private final String name;
        private final String sha256Fingerprint;
        private final byte[] der;

        Root(String name, String sha256Fingerprint, byte[] der) {
            this.name = name;
            this.sha256Fingerprint = sha256Fingerprint;
            this.der = der;
        }

        /** Apple's name, e.g. "Apple Root CA - G3". */
        public String getName() {
            return name;
        }

        /** SHA-256 of the DER, upper-case hex pairs separated by colons. */
        public String getSha256Fingerprint() {
            return sha256Fingerprint;
        }

        /** The certificate (DER); a copy. */
        public byte[] getDer() {
            return der.clone();
        }
    }

    private AppleRootCertificates() {
    }

    /** Every root the library carries: Apple Root CA - G3 (App Store signed data) first, then Apple Inc. Root. */
    public static List<Root> all() {
        List<Root> out = new ArrayList<>();
        long n = Abi.apple_root_count();
        for (long i = 0; i < n; i++) {
            out.add(new Root(new String(Abi.apple_root_name(i), StandardCharsets.UTF_8),
                    new String(Abi.apple_root_sha256(i), StandardCharsets.UTF_8), Abi.apple_root_der(i)));
        }
        return Collections.unmodifiableList(out);
    }

    /** Apple Root CA - G3, the anchor of App Store signed data, as SignedDataVerifier's rootCertificates takes it. */
    public static Set<InputStream> forSignedData() {
        return Set.of(stream("Apple Root CA - G3"));
    }

    /** Apple Inc. Root, the anchor of app receipts. */
    public static Set<InputStream> forReceipts() {
        return Set.of(stream("Apple Inc. Root"));
    }

    private static InputStream stream(String name) {
        for (Root r : all()) {
            if (r.getName().equals(name)) return new ByteArrayInputStream(r.der);
        }
        throw new IllegalStateException(name + " is not among the library's roots (its fingerprint did not match)");
    }
}
