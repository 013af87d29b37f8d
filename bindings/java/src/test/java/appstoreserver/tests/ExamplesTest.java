package appstoreserver.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Java examples (examples/java) as a user runs them, checked by Tests/examples/check_examples.py as the C and
 * Swift ones are: every page of refund history from the mock App Store server (and an unreachable server, a
 * redirect, an oversized answer), an offer signature verified by Python cryptography (and a P-384 key refused), a
 * notification verified (own PKI, a forged chain, Apple's real one when ../shared/conformance exists, else SKIPPED),
 * usage and exit statuses. The examples are compiled against the jar, and each is run by a small launcher script.
 */
class ExamplesTest {
    @Test
    void examplesWorkAsDocumented(@TempDir Path dir) throws Exception {
        String cp = System.getProperty("appstoreserver.classpath");
        Path examples = Support.REPO.resolve("examples/java");
        List<String> javac = new ArrayList<>(List.of("javac", "--release", "11", "-encoding", "UTF-8", "-Xlint:all,-path",
                "-Werror", "-cp", cp, "-d", dir.resolve("classes").toString()));
        String[] names = {"RefundHistory", "OfferSignature", "VerifyNotification"};
        for (String n : names) {
            javac.add(examples.resolve(n + ".java").toString());
        }
        Support.run(javac);
        List<String> cmd = new ArrayList<>(List.of("python3", Support.REPO.resolve("Tests/examples/check_examples.py").toString(),
                "java", "--testpki", Support.testpki().toString()));
        for (String n : names) {
            Path launcher = dir.resolve(n);
            Files.writeString(launcher, "#!/bin/sh\nexec java -cp '" + dir.resolve("classes") + File.pathSeparator + cp
                    + "' " + n + " \"$@\"\n");
            Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
            cmd.add(n.equals("RefundHistory") ? "--refund-history" : n.equals("OfferSignature") ? "--offer-signature"
                    : "--verify-notification");
            cmd.add(launcher.toString());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(600, TimeUnit.SECONDS), "check_examples.py did not finish");
        System.out.println(out);
        String last = out.strip().substring(out.strip().lastIndexOf('\n') + 1);
        Support.note("examples", last);
        assertTrue(last.startsWith("examples (java): ") && last.contains(" 0 failed"), out);
        assertEquals(0, p.exitValue(), out);
    }
}
