package appstoreserver.tests;

import appstoreserver.internal.Abi;
import appstoreserver.model.Environment;
import appstoreserver.verification.SignedDataVerifier;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The short version of bindings/java/leak-check (100,000 verifications, docs/java.md): 20,000 verifications (valid and
 * failing) with flat RSS, verifiers closed or dropped without a native leak (their transport contexts counted back to
 * zero, the Cleaner freeing the dropped ones).
 */
class LeakTest {
    @Test
    void verificationsKeepRssFlat() throws Exception {
        // In a JVM of its own with a fixed, pre-touched heap, so that RSS beyond it is native memory; a short run still
        // warms up (JIT, code cache) after its first tenth, so it allows 24 MiB where the 100,000 run allows 16.
        String cp = System.getProperty("appstoreserver.classpath", System.getProperty("java.class.path"));
        ProcessBuilder pb = new ProcessBuilder(java.nio.file.Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xms64m", "-Xmx64m", "-XX:+AlwaysPreTouch", "-cp", cp, "appstoreserver.tests.LeakCheck",
                Support.testpki().toString(), "20000", "24576").redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        p.waitFor();
        System.out.print(out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains(": flat"), out);
    }

    @Test
    void droppedVerifiersAreFreed() throws Exception {
        long base = Abi.live_bridges();
        for (int i = 0; i < 300; i++) {
            new SignedDataVerifier(Fixtures.roots(), Fixtures.BUNDLE, null, Environment.SANDBOX, true).close();
        }
        assertEquals(base, Abi.live_bridges());
        for (int i = 0; i < 300; i++) {
            new SignedDataVerifier(Fixtures.roots(), Fixtures.BUNDLE, null, Environment.SANDBOX, true);
        }
        for (int i = 0; i < 100 && Abi.live_bridges() > base; i++) {
            System.gc();
            Thread.sleep(50);
        }
        assertEquals(base, Abi.live_bridges(), "the Cleaner did not free dropped verifiers");
    }
}
