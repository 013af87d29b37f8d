/*
 * benchmarks/java/Bench.java VECTORS --c-verify PROGRAM --c-sign PROGRAM [--seconds S] [--runs N] [--only a,b]
 *
 * The Java binding (bindings/java, the jar on the class path) in one JVM, on the core the JVM is pinned to, against
 * two references measured in the same run:
 *   c    the C ABI: benchmarks/c/verify_capi and sign_capi, linked against the same self-contained library as the
 *        jar carries, started from this JVM between its own runs (they inherit its CPU pinning);
 *   jdk  the JDK's bare ES256 work on the same input, in this JVM: for the verify cases
 *        Signature.getInstance("SHA256withECDSA") checking the JWS signature (r||s converted to DER) with the leaf's
 *        public key parsed once from the first vector's x5c (what any pure-Java verifier must at least do: no chain,
 *        no payload); for api_token the same Signature signing the token's signing input with the key parsed once.
 *
 * Cases (each call returns what users get):
 *   transaction_cached       SignedDataVerifier.verifyAndDecodeTransaction: the model, the chain seen before
 *   transaction_first_sight  the same with the chain cache off (every call parses and validates the chain)
 *   notification             verifyAndDecodeNotification
 *   api_token                BearerTokenAuthenticator.generateToken() (the token of every API request)
 * Every result is checked (bundle id, transaction id / notification type; the token's shape, and after each run the
 * last token's signature with java.security).
 *
 * Scheduling: a warm-up (every vector once through each implementation, then each in-JVM case for at least 3 s, so
 * the JIT has compiled the paths), then RUNS rounds; in each, every case runs once per implementation (java, jdk, c)
 * for SECONDS, back to back, the order rotating between rounds; the best run of each counts. One line per case:
 *   java <case>  java N/s  c N/s  jdk N/s  targets...  ratio_to_c=X ratio_to_jdk=Y
 * Targets: java >= 0.8 x c for every case; java >= 1.5 x jdk for the verify cases with the chain seen
 * (transaction_cached, notification). First sight also checks two P-384 certificate signatures and the bearer token
 * is a signature made, not checked: their jdk ratios are informational.
 */

import appstoreserver.client.BearerTokenAuthenticator;
import appstoreserver.model.Environment;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.ResponseBodyV2DecodedPayload;
import appstoreserver.verification.SignedDataVerifier;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class Bench {
    static final List<String> CASES = List.of("transaction_cached", "transaction_first_sight", "notification", "api_token");
    static final Set<String> JDK_TARGET = Set.of("transaction_cached", "notification");
    static final double C_TARGET = 0.8;
    static final double JDK_RATIO_TARGET = 1.5;
    static final ObjectMapper JSON = new ObjectMapper();

    interface Op {
        void call(int i) throws Exception;
    }

    static void fail(String what) {
        System.err.println("FAILED: " + what);
        System.exit(1);
    }

    /** Runs op cycling over n inputs for seconds; calls per second. */
    static double measure(Op op, int n, double seconds) throws Exception {
        long start = System.nanoTime();
        long budget = (long) (seconds * 1e9);
        long calls = 0;
        int i = 0;
        long elapsed;
        do {
            for (int k = 0; k < 16; k++) { // check the clock every 16 calls
                op.call(i);
                calls++;
                if (++i == n) {
                    i = 0;
                }
            }
            elapsed = System.nanoTime() - start;
        } while (elapsed < budget);
        return calls / (elapsed / 1e9);
    }

    static List<String> lines(Path p) throws Exception {
        List<String> out = new ArrayList<>();
        for (String l : Files.readAllLines(p)) {
            if (!l.isBlank()) {
                out.add(l.trim());
            }
        }
        return out;
    }

    static byte[] b64url(String s) {
        return Base64.getUrlDecoder().decode(s);
    }

    /** r||s (64 bytes) as the DER SEQUENCE Signature("SHA256withECDSA") takes. */
    static byte[] der(byte[] rs) {
        byte[] r = new BigInteger(1, Arrays.copyOfRange(rs, 0, 32)).toByteArray();
        byte[] s = new BigInteger(1, Arrays.copyOfRange(rs, 32, 64)).toByteArray();
        byte[] out = new byte[6 + r.length + s.length];
        out[0] = 0x30;
        out[1] = (byte) (4 + r.length + s.length);
        out[2] = 0x02;
        out[3] = (byte) r.length;
        System.arraycopy(r, 0, out, 4, r.length);
        out[4 + r.length] = 0x02;
        out[5 + r.length] = (byte) s.length;
        System.arraycopy(s, 0, out, 6 + r.length, s.length);
        return out;
    }

    /** The JDK's bare ES256 check of one JWS: the signature over header.payload, with the leaf key. */
    static boolean jdkVerify(Signature sig, String jws) throws Exception {
        int a = jws.indexOf('.');
        int b = jws.indexOf('.', a + 1);
        sig.update(jws.substring(0, b).getBytes(StandardCharsets.US_ASCII));
        return sig.verify(der(b64url(jws.substring(b + 1))));
    }

    /** The C program's rate for one case: its RESULT line. */
    static double runC(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        double rate = -1;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null;) {
                String[] w = line.trim().split("\\s+");
                if (w.length >= 4 && w[0].equals("RESULT")) {
                    rate = Double.parseDouble(w[3]);
                }
            }
        }
        if (p.waitFor() != 0 || rate < 0) {
            fail(String.join(" ", cmd) + " exited " + p.exitValue() + " without a RESULT line");
        }
        return rate;
    }

    public static void main(String[] args) throws Exception {
        Path vectors = Paths.get(args[0]);
        String cVerify = null;
        String cSign = null;
        double seconds = 1.5;
        int runs = 3;
        List<String> only = CASES;
        for (int i = 1; i < args.length; i += 2) {
            switch (args[i]) {
                case "--c-verify":
                    cVerify = args[i + 1];
                    break;
                case "--c-sign":
                    cSign = args[i + 1];
                    break;
                case "--seconds":
                    seconds = Double.parseDouble(args[i + 1]);
                    break;
                case "--runs":
                    runs = Integer.parseInt(args[i + 1]);
                    break;
                case "--only":
                    only = Arrays.asList(args[i + 1].split(","));
                    break;
                default:
                    fail("unknown option " + args[i]);
            }
        }
        JsonNode manifest = JSON.readTree(vectors.resolve("manifest.json").toFile());
        String bundle = manifest.get("bundle_id").asText();
        long appId = manifest.get("app_apple_id").asLong();
        String keyId = manifest.get("api_key").get("key_id").asText();
        Path keyFile = vectors.resolve(manifest.get("api_key").get("file").asText());
        String p8 = Files.readString(keyFile);
        byte[] root = Files.readAllBytes(vectors.resolve("root.der"));
        List<String> txs = lines(vectors.resolve("transactions.jws"));
        List<String> notes = lines(vectors.resolve("notifications.jws"));
        String issuer = "57246542-96fe-1a63-e053-0824d011072a";

        // The library: two verifiers (cache on / off), the token provider.
        SignedDataVerifier cached = new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), bundle, appId,
                Environment.PRODUCTION, false);
        SignedDataVerifier uncached = new SignedDataVerifier(Set.of(new ByteArrayInputStream(root)), bundle, appId,
                Environment.PRODUCTION, false, new SignedDataVerifier.Options().chainCache(0, Duration.ZERO));
        BearerTokenAuthenticator tokens = new BearerTokenAuthenticator(p8, keyId, issuer, bundle);

        // The JDK: the leaf key from the first vector's x5c, the API key; one Signature object each.
        JsonNode header = JSON.readTree(b64url(txs.get(0).substring(0, txs.get(0).indexOf('.'))));
        X509Certificate leaf = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(
                new ByteArrayInputStream(Base64.getDecoder().decode(header.get("x5c").get(0).asText())));
        PublicKey leafKey = leaf.getPublicKey();
        Signature jdkCheck = Signature.getInstance("SHA256withECDSA");
        jdkCheck.initVerify(leafKey);
        PrivateKey apiKey = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder()
                .decode(p8.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", ""))));
        Signature jdkSign = Signature.getInstance("SHA256withECDSA");
        jdkSign.initSign(apiKey);
        String sample = tokens.generateToken();
        byte[] signingInput = sample.substring(0, sample.lastIndexOf('.')).getBytes(StandardCharsets.US_ASCII);
        PublicKey apiPublic = publicOf(apiKey);
        String[] last = {sample};

        Map<String, Op> java = new LinkedHashMap<>();
        Map<String, Op> jdk = new LinkedHashMap<>();
        Map<String, List<String>> c = new LinkedHashMap<>();
        Map<String, Integer> sizes = new LinkedHashMap<>();
        java.put("transaction_cached", i -> check(cached.verifyAndDecodeTransaction(txs.get(i)), bundle, i));
        java.put("transaction_first_sight", i -> check(uncached.verifyAndDecodeTransaction(txs.get(i)), bundle, i));
        java.put("notification", i -> check(cached.verifyAndDecodeNotification(notes.get(i)), bundle, i));
        java.put("api_token", i -> {
            String t = tokens.generateToken();
            if (t.length() < 200 || t.charAt(t.length() - 87) != '.') {
                fail("api_token: a token of unexpected shape: " + t);
            }
            last[0] = t;
        });
        Op jdkTx = i -> {
            if (!jdkVerify(jdkCheck, txs.get(i))) {
                fail("jdk: transaction #" + i + " does not verify with the leaf key");
            }
        };
        jdk.put("transaction_cached", jdkTx);
        jdk.put("transaction_first_sight", jdkTx);
        jdk.put("notification", i -> {
            if (!jdkVerify(jdkCheck, notes.get(i))) {
                fail("jdk: notification #" + i + " does not verify with the leaf key");
            }
        });
        jdk.put("api_token", i -> {
            jdkSign.update(signingInput);
            if (jdkSign.sign().length < 64) {
                fail("jdk: a short signature");
            }
        });
        for (String k : CASES) {
            sizes.put(k, k.equals("notification") ? notes.size() : k.equals("api_token") ? 1 : txs.size());
        }
        String sec = String.valueOf(seconds);
        for (String k : List.of("transaction_cached", "transaction_first_sight", "notification")) {
            c.put(k, List.of(cVerify, vectors.toString(), "--only", k, "--seconds", sec, "--runs", "1"));
        }
        c.put("api_token", List.of(cSign, keyFile.toString(), "--only", "api_token", "--seconds", sec, "--runs", "1"));

        // Warm-up: every vector once through the library and the JDK (checking each), then each case for 3 s.
        for (String k : CASES) {
            if (!only.contains(k)) {
                continue;
            }
            for (int i = 0; i < sizes.get(k); i++) {
                java.get(k).call(i);
                jdk.get(k).call(i);
            }
            measure(java.get(k), sizes.get(k), Math.max(3.0, seconds));
            measure(jdk.get(k), sizes.get(k), Math.max(3.0, seconds));
        }
        verifyToken(last[0], apiPublic);

        Map<String, double[]> best = new LinkedHashMap<>(); // case -> {java, jdk, c}
        String[] order = {"java", "jdk", "c"};
        for (int r = 0; r < runs; r++) {
            for (String k : CASES) {
                if (!only.contains(k)) {
                    continue;
                }
                double[] b = best.computeIfAbsent(k, x -> new double[3]);
                for (int j = 0; j < 3; j++) {
                    String impl = order[(j + r) % 3];
                    double rate;
                    if (impl.equals("java")) {
                        rate = measure(java.get(k), sizes.get(k), seconds);
                        if (k.equals("api_token")) {
                            verifyToken(last[0], apiPublic);
                        }
                        b[0] = Math.max(b[0], rate);
                    } else if (impl.equals("jdk")) {
                        rate = measure(jdk.get(k), sizes.get(k), seconds);
                        b[1] = Math.max(b[1], rate);
                    } else {
                        rate = runC(c.get(k));
                        b[2] = Math.max(b[2], rate);
                    }
                }
            }
        }
        long[] stats = cached.cacheStats();
        if (stats[1] > 1) {
            fail("transaction_cached: " + stats[1] + " chain cache misses (expected at most 1: the cached case must hit)");
        }
        if (uncached.cacheStats()[0] != 0) {
            fail("transaction_first_sight: the disabled cache hit");
        }
        for (Map.Entry<String, double[]> e : best.entrySet()) {
            String k = e.getKey();
            double[] b = e.getValue();
            double toC = b[0] / b[2];
            double toJdk = b[0] / b[1];
            String targets = "c " + (toC >= C_TARGET ? "met" : "MISSED") + ", jdk "
                    + (JDK_TARGET.contains(k) ? (toJdk >= JDK_RATIO_TARGET ? "met" : "MISSED") : "informational");
            System.out.printf("java %-24s java %7.0f/s  c %7.0f/s  jdk %7.0f/s  targets: %-27s ratio_to_c=%.2f ratio_to_jdk=%.2f%n",
                    k, b[0], b[2], b[1], targets, toC, toJdk);
        }
        cached.close();
        uncached.close();
        tokens.close();
    }

    /** The API key's public key (the .p8 holds the private scalar only): the scalar times the curve's generator. */
    static PublicKey publicOf(PrivateKey key) throws Exception {
        java.security.interfaces.ECPrivateKey k = (java.security.interfaces.ECPrivateKey) key;
        java.security.spec.ECParameterSpec spec = k.getParams();
        return KeyFactory.getInstance("EC").generatePublic(new java.security.spec.ECPublicKeySpec(multiply(spec, k.getS()), spec));
    }

    /** Scalar multiplication on the key's curve (affine, double-and-add; once per run, for the token check). */
    static java.security.spec.ECPoint multiply(java.security.spec.ECParameterSpec spec, BigInteger n) {
        BigInteger p = ((java.security.spec.ECFieldFp) spec.getCurve().getField()).getP();
        BigInteger a = spec.getCurve().getA();
        java.security.spec.ECPoint r = java.security.spec.ECPoint.POINT_INFINITY;
        java.security.spec.ECPoint g = spec.getGenerator();
        for (int i = n.bitLength() - 1; i >= 0; i--) {
            r = add(r, r, p, a);
            if (n.testBit(i)) {
                r = add(r, g, p, a);
            }
        }
        return r;
    }

    static java.security.spec.ECPoint add(java.security.spec.ECPoint u, java.security.spec.ECPoint v, BigInteger p,
                                          BigInteger a) {
        if (u.equals(java.security.spec.ECPoint.POINT_INFINITY)) {
            return v;
        }
        if (v.equals(java.security.spec.ECPoint.POINT_INFINITY)) {
            return u;
        }
        BigInteger x1 = u.getAffineX(), y1 = u.getAffineY(), x2 = v.getAffineX(), y2 = v.getAffineY();
        BigInteger l;
        if (x1.equals(x2)) {
            if (y1.add(y2).mod(p).signum() == 0) {
                return java.security.spec.ECPoint.POINT_INFINITY;
            }
            l = x1.pow(2).multiply(BigInteger.valueOf(3)).add(a).multiply(y1.shiftLeft(1).modInverse(p)).mod(p);
        } else {
            l = y2.subtract(y1).multiply(x2.subtract(x1).modInverse(p)).mod(p);
        }
        BigInteger x3 = l.pow(2).subtract(x1).subtract(x2).mod(p);
        BigInteger y3 = l.multiply(x1.subtract(x3)).subtract(y1).mod(p);
        return new java.security.spec.ECPoint(x3, y3);
    }

    /** A token's ES256 signature checked with java.security and the API key's public key; its claims. */
    static void verifyToken(String token, PublicKey key) throws Exception {
        Signature s = Signature.getInstance("SHA256withECDSA");
        s.initVerify(key);
        int dot = token.lastIndexOf('.');
        s.update(token.substring(0, dot).getBytes(StandardCharsets.US_ASCII));
        if (!s.verify(der(b64url(token.substring(dot + 1))))) {
            fail("api_token: the token's signature does not verify with the API key's public key");
        }
        JsonNode claims = JSON.readTree(b64url(token.split("\\.")[1]));
        if (!"appstoreconnect-v1".equals(claims.path("aud").asText()) || claims.path("exp").asLong() - claims.path("iat").asLong() != 300) {
            fail("api_token: claims " + claims);
        }
    }

    static void check(JWSTransactionDecodedPayload t, String bundle, int i) {
        if (t.getTransactionId() == null || !bundle.equals(t.getBundleId())) {
            fail("transaction #" + i + ": decoded without its transaction id or bundle id");
        }
    }

    static void check(ResponseBodyV2DecodedPayload n, String bundle, int i) {
        if (n.getNotificationType() == null || n.getData() == null || !bundle.equals(n.getData().getBundleId())) {
            fail("notification #" + i + ": decoded without its type or bundle id");
        }
    }
}
