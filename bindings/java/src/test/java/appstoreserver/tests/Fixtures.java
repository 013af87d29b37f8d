package appstoreserver.tests;

import appstoreserver.model.Environment;
import appstoreserver.verification.SignedDataVerifier;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.util.Set;

/** The own-PKI verifier and signed values most tests use (Tests/support/testpki.py). */
final class Fixtures {
    static final String BUNDLE = "com.example.testpki";

    private Fixtures() {
    }

    static Set<InputStream> roots() {
        return Set.of(new ByteArrayInputStream(Support.bytes(Support.testpki().resolve("root.der"))));
    }

    static SignedDataVerifier verifier() {
        return new SignedDataVerifier(roots(), BUNDLE, null, Environment.SANDBOX, false);
    }

    static String jws(String name) {
        return Support.text(Support.testpki().resolve("jws/" + name + ".jws"));
    }
}
