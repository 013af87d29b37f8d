package appstoreserver.tests;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The jar as a user gets it: installed into a Maven repository with the documented command
 * (scripts/build --install-maven DIR), then used from a scratch project (its jar and Jackson's on the class path, code
 * written as for Apple's library with the appstoreserver prefix) compiled and run with a clean environment: PATH holds
 * only the JDK and /usr/bin:/bin (no Swift toolchain), no LD_LIBRARY_PATH. The native libraries come out of the jar
 * into a private temporary directory and are deleted once loaded; -Dappstoreserver.library.path loads them from a
 * directory instead.
 */
class ScratchProjectTest {
    static final String MAIN = String.join("\n",
            "import appstoreserver.client.AppStoreServerAPIClient;",
            "import appstoreserver.client.BaseAppStoreServerAPIClient;",
            "import appstoreserver.model.Environment;",
            "import appstoreserver.model.ResponseBodyV2DecodedPayload;",
            "import appstoreserver.verification.SignedDataVerifier;",
            "import appstoreserver.verification.VerificationException;",
            "import java.io.FileInputStream;",
            "import java.io.IOException;",
            "import java.io.InputStream;",
            "import java.nio.file.Files;",
            "import java.nio.file.Paths;",
            "import java.util.Set;",
            "",
            "public class Main {",
            "    public static void main(String[] args) throws Exception {",
            "        Set<InputStream> roots = Set.of(new FileInputStream(args[0] + \"/root.der\"));",
            "        SignedDataVerifier verifier = new SignedDataVerifier(roots, \"com.example.testpki\", null, Environment.SANDBOX, false);",
            "        String jws = Files.readString(Paths.get(args[0], \"jws/notif-valid-did-renew.jws\")).trim();",
            "        ResponseBodyV2DecodedPayload n = verifier.verifyAndDecodeNotification(jws);",
            "        System.out.println(\"notification \" + n.getNotificationType() + \" \" + n.getData().getBundleId());",
            "        try {",
            "            verifier.verifyAndDecodeTransaction(jws);",
            "        } catch (VerificationException e) {",
            "            System.out.println(\"refused \" + e.getStatus());",
            "        }",
            "        if (args.length > 1) {  // the API client, made as with Apple's library; port 9 refuses the connection",
            "            String p8 = Files.readString(Paths.get(args[1]));",
            "            try (AppStoreServerAPIClient client = new AppStoreServerAPIClient(p8, \"ABC123DEFG\", \"57246542-96fe-1a63-e053-0824d011072a\",",
            "                    \"com.example.app\", Environment.SANDBOX, new BaseAppStoreServerAPIClient.Options().baseUrl(\"http://127.0.0.1:9\"))) {",
            "                client.getTransactionInfo(\"1\");",
            "            } catch (IOException e) {",
            "                System.out.println(\"client \" + e.getClass().getSimpleName() + \" \" + e.getSuppressed()[0]);",
            "            }",
            "        }",
            "        for (String line : Files.readAllLines(Paths.get(\"/proc/self/maps\"))) {",
            "            if (line.contains(\"libappstoreserver\")) {",
            "                System.out.println(\"mapped \" + line.substring(line.indexOf('/')));",
            "            }",
            "        }",
            "    }",
            "}",
            "");

    static String run(Path dir, List<String> cmd) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.clear();
        env.put("PATH", Paths.get(System.getProperty("java.home"), "bin") + ":/usr/bin:/bin");
        env.put("HOME", dir.toString());
        env.put("TMPDIR", dir.resolve("tmp").toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + out);
        return out;
    }

    static void copy(Path from, Path to) throws IOException {
        Files.copy(from, to);
    }

    @Test
    void installedJarInAScratchProject() throws Exception {
        Path dir = Files.createTempDirectory("appstoreserver-java-scratch-");
        Files.createDirectories(dir.resolve("tmp"));
        Path m2 = dir.resolve("m2");
        String version = Files.readString(Support.REPO.resolve("VERSION")).trim();
        Support.run(List.of(Support.REPO.resolve("bindings/java/scripts/build").toString(), "--install-maven", m2.toString()));
        Path installed = m2.resolve("appstoreserver/appstoreserver/" + version);
        Path jar = installed.resolve("appstoreserver-" + version + ".jar");
        assertTrue(Files.isRegularFile(jar), "no " + jar);
        String pom = Files.readString(installed.resolve("appstoreserver-" + version + ".pom"));
        assertTrue(pom.contains("<artifactId>jackson-databind</artifactId>") && pom.contains("<version>" + version + "</version>"));

        Path lib = Files.createDirectories(dir.resolve("lib"));
        copy(jar, lib.resolve(jar.getFileName()));
        for (String j : new String[] {"jackson-databind", "jackson-core", "jackson-annotations"}) {
            copy(Paths.get("/usr/share/java/" + j + ".jar"), lib.resolve(j + ".jar"));
        }
        Files.writeString(dir.resolve("Main.java"), MAIN);
        String cp = "lib/*";
        run(dir, List.of("javac", "--release", "11", "-cp", cp, "Main.java"));
        String out = run(dir, List.of("java", "-cp", cp + ":.", "Main", Support.testpki().toString(),
                Support.keys().resolve("p256.p8").toString()));
        assertTrue(out.contains("notification DID_RENEW com.example.testpki"), out);
        assertTrue(out.contains("refused INVALID_APP_IDENTIFIER"), out);
        assertTrue(out.contains("client ConnectException appstoreserver.AppStoreServerException: TRANSPORT_ERROR "
                + "(transport_unreachable)"), out);
        assertTrue(out.contains("/appstoreserver-") && out.contains("libappstoreserver.so.0 (deleted)"),
                "the library is not the extracted, deleted copy:\n" + out);
        assertTrue(out.contains("libappstoreserver_jni.so (deleted)"), out);
        try (var left = Files.list(dir.resolve("tmp"))) {
            assertEquals(0, left.count(), "extracted files were left behind");
        }
        // The override: both libraries from a directory.
        Path native_ = Support.REPO.resolve("bindings/java/build/native/linux-x86_64");
        String over = run(dir, List.of("java", "-Dappstoreserver.library.path=" + native_, "-cp", cp + ":.", "Main",
                Support.testpki().toString()));
        assertTrue(over.contains("notification DID_RENEW"), over);
        assertTrue(over.contains(native_.resolve("libappstoreserver.so.0").toString()), over);
        // No Swift toolchain on the PATH the project ran with.
        List<String> swift = new ArrayList<>();
        for (String d : (Paths.get(System.getProperty("java.home"), "bin") + ":/usr/bin:/bin").split(":")) {
            if (Files.exists(Paths.get(d, "swift")) || Files.exists(Paths.get(d, "swiftc"))) {
                swift.add(d);
            }
        }
        assertTrue(swift.isEmpty(), "a Swift toolchain on the scratch PATH: " + swift);
    }
}
