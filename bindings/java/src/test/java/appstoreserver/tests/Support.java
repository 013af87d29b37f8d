package appstoreserver.tests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Shared inputs of the Java tests, made once per run by the repository's generators (Tests/support): the own PKI
 * cases (testpki.py), keys (check_signatures.py keys), receipts (receipts.py), the shared conformance data
 * (../shared/conformance), and the test servers (served: mock, hostile HTTP, OCSP harness). run-tests passes the
 * repository as -Dappstoreserver.repo.
 */
public final class Support {
    public static final ObjectMapper JSON = new ObjectMapper();
    public static final Path REPO = Paths.get(System.getProperty("appstoreserver.repo", "../..")).toAbsolutePath().normalize();
    public static final Path SUPPORT = REPO.resolve("Tests/support");
    public static final Path CONFORMANCE = Paths.get(System.getenv().getOrDefault("APPSTORESERVER_CONFORMANCE",
            REPO.resolve("../shared/conformance").toString())).toAbsolutePath().normalize();
    public static final String KEY_ID = "ABC123DEFG";
    public static final String ISSUER = "57246542-96fe-1a63-e053-0824d011072a";
    public static final String BUNDLE = "com.example.app";

    private static Path testpki;
    private static Path keys;
    private static Path receipts;

    private Support() {
    }

    public static synchronized Path testpki() {
        if (testpki == null) {
            String given = System.getenv("APPSTORESERVER_TESTPKI");
            testpki = given != null ? Paths.get(given) : generate("testpki.py");
        }
        return testpki;
    }

    public static synchronized Path keys() {
        if (keys == null) {
            keys = generate("check_signatures.py", "keys");
        }
        return keys;
    }

    public static synchronized Path receipts() {
        if (receipts == null) {
            receipts = generate("receipts.py");
        }
        return receipts;
    }

    private static Path generate(String script, String... before) {
        try {
            Path out = Files.createTempDirectory("appstoreserver-java-" + script.replace(".py", "") + "-");
            List<String> cmd = new ArrayList<>(List.of("python3", SUPPORT.resolve(script).toString()));
            cmd.addAll(Arrays.asList(before));
            cmd.add(out.toString());
            run(cmd);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String run(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed:\n" + out);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public static JsonNode json(Path p) {
        try {
            return JSON.readTree(p.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String text(Path p) {
        try {
            return Files.readString(p).trim();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static byte[] bytes(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static boolean conformancePresent() {
        return Files.isRegularFile(CONFORMANCE.resolve("manifest.json"));
    }

    public static boolean onPath(String command) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Paths.get(dir, command))) {
                return true;
            }
        }
        return false;
    }

    /** A test server of Tests/support running until close(): words are what followed its ready word. */
    public static final class Served implements AutoCloseable {
        private final Process process;
        public final String[] words;

        public Served(String ready, String script, String... args) {
            List<String> cmd = new ArrayList<>(List.of("python3", SUPPORT.resolve(script).toString()));
            cmd.addAll(Arrays.asList(args));
            try {
                process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                String line = r.readLine();
                if (line == null || !line.startsWith(ready + " ")) {
                    process.destroyForcibly();
                    throw new IllegalStateException(script + " said " + line);
                }
                words = line.substring(ready.length() + 1).trim().split("\\s+");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void close() {
            try (OutputStream in = process.getOutputStream()) {
                in.flush();
            } catch (IOException ignored) {
                // already gone
            }
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A line for the end of the run (run-tests prints these notes with the tallies). */
    public static void note(String name, String line) {
        System.out.println(line);
        String dir = System.getProperty("appstoreserver.tally");
        if (dir != null) {
            try {
                Files.writeString(Paths.get(dir, name + ".txt"), line + "\n");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** Counts of one group of cases, written where run-tests prints them (the closing lines of the run). */
    public static final class Tally {
        private final String name;
        public int passed;
        public int failed;
        public int skipped;

        public Tally(String name) {
            this.name = name;
        }

        public synchronized void pass() {
            passed++;
        }

        public synchronized void fail() {
            failed++;
        }

        public synchronized void skip() {
            skipped++;
        }

        public synchronized void write() {
            String dir = System.getProperty("appstoreserver.tally");
            String line = "java " + name + ": " + passed + " passed, " + failed + " failed, " + skipped + " skipped";
            System.out.println(line);
            if (dir != null) {
                try {
                    Files.writeString(Paths.get(dir, name + ".txt"), line + "\n");
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }
}
