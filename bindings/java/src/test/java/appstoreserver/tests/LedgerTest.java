package appstoreserver.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.internal.Json;
import appstoreserver.ledger.Ledger;
import appstoreserver.ledger.LedgerException;
import appstoreserver.model.Environment;
import appstoreserver.model.LedgerCustomer;
import appstoreserver.model.LedgerEntitlementReason;
import appstoreserver.model.LedgerEventKind;
import appstoreserver.model.LedgerDisagreementPage;
import appstoreserver.model.LedgerExportResult;
import appstoreserver.model.LedgerIdPage;
import appstoreserver.model.LedgerImportResult;
import appstoreserver.model.LedgerIngestResult;
import appstoreserver.model.LedgerOracleVerdict;
import appstoreserver.model.LedgerReverifyResult;
import appstoreserver.model.LedgerSubscription;
import appstoreserver.model.LedgerSummary;
import appstoreserver.model.Status;
import appstoreserver.util.AppleRootCertificates;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;

/**
 * The purchase ledger from Java (appstoreserver.ledger.Ledger) over Tests/support/lifecycles.py's signed lifecycles,
 * the cases bindings/python/tests/test_ledger.py runs:
 * <ul>
 * <li>every expectation of the hand-written scenarios (written there from Apple's documentation, never from the
 * ledger's output), for each delivery it holds for: the notifications, the history catch-up, both;</li>
 * <li>the oracle: zero disagreements over every scenario and random lifecycle; idempotence; order independence;</li>
 * <li>refused input: the verifier's VerificationException with its status and reason, the ledger unchanged;</li>
 * <li>arguments (Java's exceptions), closing, reopening, threads sharing one ledger, identity, reverify;</li>
 * <li>real Apple data (../shared/conformance; SKIPPED loudly when absent).</li>
 * </ul>
 */
class LedgerTest {
    private static final String[] DELIVERIES = {"notifications", "history", "both"};
    private static final Set<String> SKIP = Set.of("at", "asOf", "subscription", "customer", "rule", "deliveries");
    private static JsonNode doc;
    private static SignedDataVerifier verifier;

    @BeforeAll
    static void lifecycles() throws IOException {
        Path out = Files.createTempDirectory("appstoreserver-java-lifecycles-");
        Support.run(List.of("python3", Support.SUPPORT.resolve("lifecycles.py").toString(),
                Support.testpki().toString(), out.toString()));
        doc = Support.json(out.resolve("lifecycles.json"));
        verifier = verifier(Environment.SANDBOX, doc.get("bundleId").asText(), null);
    }

    @AfterAll
    static void closeVerifier() {
        verifier.close();
    }

    static SignedDataVerifier verifier(Environment env, String bundle, Long appAppleId) {
        return new SignedDataVerifier(Set.of(new ByteArrayInputStream(Support.bytes(Support.testpki().resolve("root.der")))),
                bundle, appAppleId, env, false);
    }

    static JsonNode scenario(String name) {
        for (JsonNode s : doc.get("scenarios")) {
            if (s.get("name").asText().equals(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("no scenario " + name);
    }

    /** A lifecycle's signed values for one delivery, as {kind, jws}. */
    static List<String[]> signed(JsonNode lifecycle, String delivery) {
        List<String[]> out = new ArrayList<>();
        if (!delivery.equals("history")) {
            for (JsonNode n : lifecycle.get("notifications")) {
                out.add(new String[] {"NOTIFICATION", n.get("signed").asText()});
            }
        }
        if (!delivery.equals("notifications")) {
            JsonNode h = lifecycle.get("history");
            for (JsonNode page : h.get("pages")) {
                for (JsonNode t : page.get("signedTransactions")) {
                    out.add(new String[] {"TRANSACTION", t.asText()});
                }
            }
            for (JsonNode r : h.get("signedRenewalInfos")) {
                out.add(new String[] {"RENEWAL_INFO", r.asText()});
            }
        }
        return out;
    }

    static LedgerIngestResult ingest(Ledger ledger, String kind, String jws) throws VerificationException {
        switch (kind) {
            case "TRANSACTION":
                return ledger.ingestTransaction(jws);
            case "RENEWAL_INFO":
                return ledger.ingestRenewalInfo(jws);
            default:
                return ledger.ingestNotification(jws);
        }
    }

    static JsonNode tree(Object model) {
        try {
            return Support.JSON.readTree(Json.write(model));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The expectation's fields are a subset of the answer ("absent": missing; lists matched by productId). */
    static List<String> mismatches(JsonNode answer, JsonNode want) {
        List<String> problems = new ArrayList<>();
        if (answer == null || answer.isNull()) {
            problems.add("no answer (unknown)");
            return problems;
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = want.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> f = it.next();
            String key = f.getKey();
            JsonNode w = f.getValue();
            if (SKIP.contains(key)) {
                continue;
            }
            JsonNode got = answer.get(key);
            if (w.isTextual() && w.asText().equals("absent")) {
                if (got != null && !got.isNull()) {
                    problems.add(key + ": expected absent, got " + got);
                }
            } else if (w.isArray()) {
                if (got == null || !got.isArray() || got.size() != w.size()) {
                    problems.add(key + ": expected " + w.size() + " entries, got " + got);
                    continue;
                }
                for (JsonNode x : w) {
                    String product = x.path("productId").asText(null);
                    boolean found = false;
                    for (JsonNode g : got) {
                        if (String.valueOf(product).equals(g.path("productId").asText(null))) {
                            found = true;
                            for (String p : mismatches(g, x)) {
                                problems.add(key + "[" + product + "]." + p);
                            }
                        }
                    }
                    if (!found) {
                        problems.add(key + ": no entry for " + product);
                    }
                }
            } else if (got == null || !(got.equals(w) || (got.isNumber() && w.isNumber() && got.asLong() == w.asLong()))) {
                problems.add(key + ": expected " + w + ", got " + got);
            }
        }
        return problems;
    }

    /** The answer an expectation is about; its "asOf": absent = the default (now), "now" = the current time given
     *  explicitly, a number = that knowledge time (docs/ledger.md, "Bitemporal queries"). */
    static JsonNode answerFor(Ledger ledger, JsonNode e) {
        Instant at = Instant.ofEpochMilli(e.get("at").asLong());
        Instant asOf = !e.has("asOf") ? null
                : e.get("asOf").isTextual() ? Instant.now() : Instant.ofEpochMilli(e.get("asOf").asLong());
        if (e.has("subscription")) {
            LedgerSubscription s = ledger.subscription(e.get("subscription").asText(), at, asOf);
            return s == null ? null : tree(s);
        }
        return tree(ledger.customer(e.get("customer").asText(), at, asOf));
    }

    static Stream<Arguments> bitemporal() throws IOException {
        if (doc == null) {
            lifecycles();
        }
        List<Arguments> out = new ArrayList<>();
        for (JsonNode s : doc.get("bitemporal")) {
            for (String d : DELIVERIES) {
                out.add(Arguments.of(s.get("name").asText(), d));
            }
        }
        return out.stream();
    }

    /** A refund signed three days after its revocationDate, a backfill signed months after the purchases, a billing
     *  failure signed after the period ended: asked now (the default, and now given explicitly) and as known then. */
    @ParameterizedTest(name = "{0} via {1}")
    @MethodSource("bitemporal")
    void bitemporalAnswers(String name, String delivery) throws Exception {
        JsonNode s = null;
        for (JsonNode b : doc.get("bitemporal")) {
            if (b.get("name").asText().equals(name)) {
                s = b;
            }
        }
        assertNotNull(s, name);
        try (Ledger ledger = Ledger.open("sqlite::memory:", verifier)) {
            for (String[] v : signed(s, delivery)) {
                ingest(ledger, v[0], v[1]);
            }
            List<String> failures = new ArrayList<>();
            int checked = 0;
            for (JsonNode e : s.get("expect")) {
                if (!applies(e, delivery, Long.MIN_VALUE)) {
                    continue;
                }
                checked++;
                for (String p : mismatches(answerFor(ledger, e), e)) {
                    failures.add("at " + e.get("at") + " as of " + e.path("asOf").asText("default") + " ("
                            + e.path("rule").asText() + "): " + p);
                }
            }
            assertTrue(checked > 0, name + " via " + delivery + ": nothing checked");
            assertTrue(failures.isEmpty(), String.join("\n", failures));
            assertTrue(ledger.summary().getDisagreements().isEmpty());
            // asOf before 1970 is refused like `at`
            assertThrows(IllegalArgumentException.class, () -> ledger.customer("x", null, Instant.ofEpochMilli(-5)));
        }
    }

    static boolean applies(JsonNode e, String delivery, long historyDate) {
        if (e.has("deliveries")) {
            for (JsonNode d : e.get("deliveries")) {
                if (d.asText().equals(delivery)) {
                    return true;
                }
            }
            return false;
        }
        return e.get("at").asLong() >= historyDate || !delivery.equals("history");
    }

    static Stream<Arguments> scenarios() throws IOException {
        if (doc == null) {
            lifecycles();
        }
        List<Arguments> out = new ArrayList<>();
        for (JsonNode s : doc.get("scenarios")) {
            for (String d : DELIVERIES) {
                out.add(Arguments.of(s.get("name").asText(), d));
            }
        }
        return out.stream();
    }

    // ---- Apple's documented states ------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0} via {1}")
    @MethodSource("scenarios")
    void scenarioMatchesApplesDocumentation(String name, String delivery, @TempDir Path dir) throws Exception {
        JsonNode s = scenario(name);
        try (Ledger ledger = Ledger.open("sqlite:" + dir.resolve("ledger.db"), verifier)) {
            for (String[] v : signed(s, delivery)) {
                LedgerIngestResult r = ingest(ledger, v[0], v[1]);
                assertEquals(Boolean.TRUE, r.getStored());
                assertEquals(LedgerEventKind.valueOf(v[0]), r.getKind());
                if (r.getAppleStatus() != null) {
                    assertEquals(Boolean.TRUE, r.getAgrees(), name + ": " + tree(r));
                }
            }
            int checked = 0;
            List<String> failures = new ArrayList<>();
            for (JsonNode e : s.get("expect")) {
                if (!applies(e, delivery, s.get("historyDate").asLong())) {
                    continue;
                }
                checked++;
                for (String p : mismatches(answerFor(ledger, e), e)) {
                    failures.add("at " + e.get("at") + " (" + e.path("rule").asText() + "): " + p);
                }
            }
            assertTrue(failures.isEmpty(), String.join("\n", failures));
            if (!delivery.equals("history")) {
                assertTrue(checked > 0);
                assertTrue(ledger.summary().getDisagreements().isEmpty());
            }
        }
    }

    @Test
    void oracleAgreesWithAppleOnEveryLifecycle() throws Exception {
        List<JsonNode> all = new ArrayList<>();
        doc.get("scenarios").forEach(all::add);
        doc.get("random").forEach(all::add);
        long stored = 0;
        long notifications = 0;
        LedgerSummary summary;
        try (Ledger ledger = Ledger.open("sqlite::memory:", verifier)) {
            for (JsonNode lc : all) {
                notifications += lc.get("notifications").size();
                for (String[] v : signed(lc, "both")) {
                    stored += Boolean.TRUE.equals(ingest(ledger, v[0], v[1]).getStored()) ? 1 : 0;
                }
            }
            summary = ledger.summary();
        }
        assertTrue(summary.getDisagreements().isEmpty(), () -> tree(summary).toString());
        assertTrue(summary.getCheckedNotifications() > 300);
        assertEquals(stored, summary.getEvents());
        assertEquals(notifications, summary.getNotifications());
    }

    // ---- properties ---------------------------------------------------------------------------------------------

    static List<JsonNode> allAnswers(Ledger ledger) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode s : doc.get("scenarios")) {
            for (JsonNode e : s.get("expect")) {
                out.add(answerFor(ledger, e));
            }
        }
        return out;
    }

    @Test
    void idempotentAndOrderIndependent() throws Exception {
        List<String[]> values = new ArrayList<>();
        for (JsonNode s : doc.get("scenarios")) {
            values.addAll(signed(s, "both"));
        }
        List<Object> first = null;
        for (String order : new String[] {"as delivered", "reversed", "shuffled"}) {
            List<String[]> vs = new ArrayList<>(values);
            if (order.equals("reversed")) {
                Collections.reverse(vs);
            } else if (order.equals("shuffled")) {
                Collections.shuffle(vs, new Random(21));
            }
            try (Ledger ledger = Ledger.open("sqlite::memory:", verifier)) {
                for (String[] v : vs) {
                    ingest(ledger, v[0], v[1]);
                }
                List<Object> state = List.of(tree(ledger.summary()), allAnswers(ledger));
                if (first == null) {
                    first = state;
                    for (String[] v : vs) { // everything again: nothing stored, nothing changed
                        assertEquals(Boolean.FALSE, ingest(ledger, v[0], v[1]).getStored());
                    }
                    assertEquals(state, List.of(tree(ledger.summary()), allAnswers(ledger)));
                } else {
                    assertEquals(first, state, order);
                }
            }
        }
    }

    // ---- refused input ------------------------------------------------------------------------------------------

    @Test
    void badInputIsRefusedWithTheVerifiersReason() throws Exception {
        JsonNode first = doc.get("scenarios").get(0);
        String customer = null;
        for (JsonNode e : first.get("expect")) {
            if (e.has("customer")) {
                customer = e.get("customer").asText();
                break;
            }
        }
        assertNotNull(customer);
        Instant later = Instant.ofEpochMilli(1_900_000_000_000L);
        try (Ledger ledger = Ledger.open("sqlite::memory:", verifier)) {
            for (String[] v : signed(first, "both")) {
                ingest(ledger, v[0], v[1]);
            }
            List<JsonNode> before = List.of(tree(ledger.summary()), tree(ledger.customer(customer, later)));
            assertTrue(doc.get("bad").size() >= 9);
            for (JsonNode bad : doc.get("bad")) {
                String jws = bad.has("oversizedBytes") && bad.get("oversizedBytes").asLong() > 0
                        ? "a".repeat(bad.get("oversizedBytes").asInt()) : bad.get("signed").asText();
                VerificationException x = assertThrows(VerificationException.class,
                        () -> ingest(ledger, bad.get("kind").asText(), jws), bad.get("name").asText());
                assertEquals(AppStoreStatus.valueOf(bad.get("status").asText()), x.getAppStoreStatus(), bad.get("name").asText());
                assertEquals(FailureReason.valueOf(bad.get("reason").asText().toUpperCase()), x.getReason(), bad.get("name").asText());
                assertNotNull(x.getMessage());
            }
            assertEquals(before, List.of(tree(ledger.summary()), tree(ledger.customer(customer, later))));
        }
    }

    @Test
    void theVerifiersIdentityDecides() throws Exception {
        String jws = scenario("renewals-voluntary-expiry").get("notifications").get(0).get("signed").asText();
        try (SignedDataVerifier other = verifier(Environment.SANDBOX, "com.example.other", null);
             Ledger ledger = Ledger.open("sqlite::memory:", other)) {
            VerificationException x = assertThrows(VerificationException.class, () -> ledger.ingestNotification(jws));
            assertEquals(FailureReason.WRONG_BUNDLE, x.getReason());
            assertEquals(0L, ledger.summary().getEvents());
        }
    }

    /**
     * subscriptionIds / customerIds (C: appstore_ledger_query_subscription_ids, _customer_ids): pages of any size hold
     * every id once, in byte order, only the last without getNext(). Expected from the transactions' own payloads: a
     * subscription is an auto-renewable originalTransactionId; a customer is the appAccountToken in lowercase, else
     * the originalTransactionId.
     */
    @Test
    void idPages() throws Exception {
        java.util.TreeSet<String> subscriptions = new java.util.TreeSet<>(), customers = new java.util.TreeSet<>();
        try (Ledger ledger = Ledger.open("sqlite::memory:", verifier)) {
            assertTrue(ledger.subscriptionIds(null, 1000).getIds().isEmpty());
            for (JsonNode s : doc.get("scenarios")) {
                for (String[] v : signed(s, "history")) {
                    if (!v[0].equals("TRANSACTION")) {
                        continue;
                    }
                    ledger.ingestTransaction(v[1]);
                    JsonNode p = Json.MAPPER.readTree(java.util.Base64.getUrlDecoder().decode(v[1].split("\\.")[1]));
                    String original = p.get("originalTransactionId").asText();
                    if (p.get("type").asText().equals("Auto-Renewable Subscription")) {
                        subscriptions.add(original);
                    }
                    String token = p.has("appAccountToken") ? p.get("appAccountToken").asText().toLowerCase(java.util.Locale.ROOT) : "";
                    customers.add(token.isEmpty() ? original : token);
                }
            }
            // TreeSet's order is UTF-16's, which is byte order for these ASCII ids.
            for (boolean subs : new boolean[] {true, false}) {
                List<String> want = new ArrayList<>(subs ? subscriptions : customers);
                assertTrue(want.size() > 5);
                for (int limit : new int[] {1, 4, want.size(), 10000}) {
                    List<String> got = new ArrayList<>();
                    String after = null;
                    do {
                        LedgerIdPage page = subs ? ledger.subscriptionIds(after, limit) : ledger.customerIds(after, limit);
                        assertTrue(page.getIds().size() == limit || page.getNext() == null, String.valueOf(limit));
                        got.addAll(page.getIds());
                        after = page.getNext();
                    } while (after != null);
                    assertEquals(want, got, String.valueOf(limit));
                }
                for (int limit : new int[] {0, 10001, -1}) {
                    assertThrows(IllegalArgumentException.class,
                            () -> { if (subs) ledger.subscriptionIds(null, limit); else ledger.customerIds(null, limit); });
                }
            }
        }
    }

    /**
     * exportJsonl and importJsonl (C: appstore_ledger_export_jsonl, appstore_ledger_import_jsonl): every stored value
     * once, byte for byte as ingested, in the import's format and the order stored (expected from the values this test
     * gave); imported into a new ledger, the same summary; a refused line reported by number.
     */
    @Test
    void exportAndImport(@TempDir Path dir) throws Exception {
        java.util.Map<String, String> member = java.util.Map.of("NOTIFICATION", "notification", "TRANSACTION", "transaction",
                "RENEWAL_INFO", "renewalInfo");
        List<String[]> values = new ArrayList<>();
        int n = 0;
        for (JsonNode s : doc.get("scenarios")) {
            if (n++ < 6) {
                values.addAll(signed(s, "both"));
            }
        }
        values.addAll(values.subList(0, 4));
        Path file = dir.resolve("export.jsonl");
        try (Ledger a = Ledger.open("sqlite:" + dir.resolve("a.db"), verifier);
             Ledger b = Ledger.open("sqlite:" + dir.resolve("b.db"), verifier)) {
            StringBuilder want = new StringBuilder();
            for (String[] v : values) {
                if (ingest(a, v[0], v[1]).getStored()) {
                    want.append("{\"").append(member.get(v[0])).append("\":\"").append(v[1]).append("\"}\n");
                }
            }
            LedgerExportResult r = a.exportJsonl(file.toString());
            assertEquals(want.toString(), Files.readString(file));
            assertEquals(want.toString().split("\n").length, r.getExported());
            Files.writeString(file, "{\"transaction\": 42}\n", java.nio.file.StandardOpenOption.APPEND);
            LedgerImportResult i = b.importJsonl(file.toString(), 7);
            assertEquals(r.getExported(), i.getStored());
            assertEquals(1L, i.getRefusedCount());
            assertEquals(r.getExported() + 1, i.getRefused().get(0).getLine());
            assertEquals(a.summary(), b.summary());
            assertThrows(IllegalArgumentException.class, () -> a.exportJsonl(dir.resolve("missing-dir/x.jsonl").toString()));
            assertThrows(IllegalArgumentException.class, () -> b.importJsonl(dir.resolve("missing.jsonl").toString(), 0));
            assertThrows(IllegalArgumentException.class, () -> b.importJsonl(file.toString(), -1));
        }
    }

    // ---- the surface --------------------------------------------------------------------------------------------

    @Test
    void resultsAreTheGeneratedModels() throws Exception {
        JsonNode s = scenario("renewals-voluntary-expiry");
        JsonNode e = null;
        JsonNode c = null;
        for (JsonNode x : s.get("expect")) {
            if (e == null && x.has("subscription") && x.path("status").asInt() == 1) {
                e = x;
            }
            if (c == null && x.has("customer") && x.path("entitlements").size() > 0) {
                c = x;
            }
        }
        assertNotNull(e);
        assertNotNull(c);
        try (Ledger ledger = Ledger.open("sqlite::memory:", verifier)) {
            LedgerIngestResult r = ledger.ingestNotification(s.get("notifications").get(0).get("signed").asText());
            assertEquals(LedgerEventKind.NOTIFICATION, r.getKind());
            assertNotNull(r.getNotificationUUID());
            for (String[] v : signed(s, "both")) {
                ingest(ledger, v[0], v[1]);
            }
            LedgerSubscription sub = ledger.subscription(e.get("subscription").asText(), Instant.ofEpochMilli(e.get("at").asLong()));
            assertEquals(Status.ACTIVE, sub.getStatus());
            assertEquals(Boolean.TRUE, sub.getEntitled());
            String token = c.get("customer").asText();
            LedgerCustomer cust = ledger.customer(token, Instant.ofEpochMilli(c.get("at").asLong()));
            assertFalse(cust.getEntitlements().isEmpty());
            assertTrue(Set.of(LedgerEntitlementReason.ACTIVE, LedgerEntitlementReason.BILLING_GRACE_PERIOD)
                    .contains(cust.getEntitlements().get(0).getReason()));
            // a token in any case
            assertEquals(tree(cust).get("entitlements"),
                    tree(ledger.customer(token.toUpperCase(), Instant.ofEpochMilli(c.get("at").asLong()))).get("entitlements"));
            // now
            assertNotNull(ledger.customer(token).getAt());
            assertNull(ledger.subscription("no-such-subscription"));
            LedgerCustomer unknown = ledger.customer("no-such-customer");
            assertTrue(unknown.getEntitlements().isEmpty() && unknown.getSubscriptions().isEmpty()
                    && unknown.getPurchases().isEmpty());
        }
    }

    @Test
    void arguments(@TempDir Path dir) throws Exception {
        for (String url : new String[] {"mysql://localhost/x", dir.resolve("no-scheme.db").toString(), "sqlite:"}) {
            assertThrows(IllegalArgumentException.class, () -> Ledger.open(url, verifier), url);
        }
        assertThrows(NullPointerException.class, () -> Ledger.open(null, verifier));
        assertThrows(NullPointerException.class, () -> Ledger.open("sqlite::memory:", null));
        assertThrows(IllegalArgumentException.class, () -> Ledger.open("sqlite::mem\0ory:", verifier));
        LedgerException storage = assertThrows(LedgerException.class,
                () -> Ledger.open("sqlite:/nonexistent-dir/a/b.db", verifier));
        assertEquals(AppStoreStatus.STORAGE_ERROR, storage.getStatus());
        assertEquals(FailureReason.STORAGE_FAILED, storage.getReason());
        assertFalse(storage.getMessage().isEmpty());
        Ledger ledger = Ledger.open("sqlite::memory:", verifier);
        assertEquals("sqlite::memory:", ledger.getUrl());
        assertSame(verifier, ledger.getVerifier());
        assertThrows(NullPointerException.class, () -> ledger.ingestNotification(null));
        assertThrows(NullPointerException.class, () -> ledger.customer(null));
        assertThrows(NullPointerException.class, () -> ledger.subscription(null, Instant.now()));
        for (Instant at : new Instant[] {Instant.EPOCH, Instant.ofEpochMilli(-5), Instant.MAX}) {
            assertThrows(IllegalArgumentException.class, () -> ledger.subscription("1", at), String.valueOf(at));
        }
        assertThrows(IllegalArgumentException.class, () -> ledger.customer("a\0b"));
        // disagreements(after, limit): an empty ledger's one page; bad cursors and limits refused.
        assertTrue(ledger.disagreements().getDisagreements().isEmpty());
        assertNull(ledger.disagreements("", 10000).getNext());
        for (int limit : new int[] {0, 10001, -1}) {
            assertThrows(IllegalArgumentException.class, () -> ledger.disagreements(null, limit), String.valueOf(limit));
        }
        IllegalArgumentException cursor = assertThrows(IllegalArgumentException.class,
                () -> ledger.disagreements("CONTRADICTION:soon:x", 10));
        assertTrue(cursor.getMessage().contains("not a cursor"), cursor.getMessage());
        ledger.close();
        ledger.close(); // twice is fine
        assertThrows(IllegalStateException.class, ledger::summary);
        assertThrows(IllegalStateException.class, () -> ledger.ingestTransaction("a.b.c"));
    }

    @Test
    void reopenedDatabaseGivesTheSameAnswers(@TempDir Path dir) throws Exception {
        String url = "sqlite://" + dir.resolve("ledger.db");
        JsonNode summary;
        List<JsonNode> answers;
        try (Ledger ledger = Ledger.open(url, verifier)) {
            for (JsonNode s : doc.get("scenarios")) {
                for (String[] v : signed(s, "notifications")) {
                    ingest(ledger, v[0], v[1]);
                }
            }
            summary = tree(ledger.summary());
            answers = allAnswers(ledger);
            try (Ledger second = Ledger.open(url, verifier)) { // another handle on the same file, while the first is open
                assertEquals(summary, tree(second.summary()));
            }
        }
        try (Ledger reopened = Ledger.open(url, verifier)) {
            assertEquals(summary, tree(reopened.summary()));
            assertEquals(answers, allAnswers(reopened));
        }
    }

    @Test
    void threadsShareOneLedger() throws Exception {
        List<String[]> values = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            values.addAll(signed(doc.get("random").get(i), "both"));
        }
        JsonNode expected;
        try (Ledger one = Ledger.open("sqlite::memory:", verifier)) {
            for (String[] v : values) {
                ingest(one, v[0], v[1]);
            }
            expected = tree(one.summary());
        }
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        try (Ledger shared = Ledger.open("sqlite::memory:", verifier)) {
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                final int seed = t;
                threads.add(new Thread(() -> {
                    try {
                        List<String[]> vs = new ArrayList<>(values);
                        Collections.shuffle(vs, new Random(seed));
                        for (String[] v : vs) {
                            ingest(shared, v[0], v[1]);
                            shared.summary();
                        }
                    } catch (Throwable x) {
                        errors.add(x);
                    }
                }));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join();
            }
            assertTrue(errors.isEmpty(), errors.toString());
            assertEquals(expected, tree(shared.summary()));
        }
    }

    // ---- identity, re-verification (docs/ledger.md) -------------------------------------------------------------

    @Test
    void aLedgerIsBoundToItsAppAndEnvironment(@TempDir Path dir) throws Exception {
        String url = "sqlite:" + dir.resolve("ledger.db");
        String bundle = doc.get("bundleId").asText();
        long events;
        try (Ledger ledger = Ledger.open(url, verifier)) {
            for (String[] v : signed(scenario("renewals-voluntary-expiry"), "both")) {
                ingest(ledger, v[0], v[1]);
            }
            events = ledger.summary().getEvents();
        }
        try (SignedDataVerifier production = verifier(Environment.PRODUCTION, bundle, 1234L);
             SignedDataVerifier other = verifier(Environment.SANDBOX, "com.example.other", null)) {
            for (Object[] c : new Object[][] {{production, "Sandbox"}, {other, "com.example.other"}}) {
                LedgerException x = assertThrows(LedgerException.class, () -> Ledger.open(url, (SignedDataVerifier) c[0]));
                assertEquals(AppStoreStatus.CONFIGURATION_ERROR, x.getStatus());
                assertEquals(FailureReason.LEDGER_IDENTITY_MISMATCH, x.getReason());
                assertTrue(x.getMessage().contains((String) c[1]), x.getMessage());
            }
        }
        try (Ledger ledger = Ledger.open(url, verifier)) {
            assertEquals(events, ledger.summary().getEvents());
        }
    }

    @Test
    void reverify(@TempDir Path dir) throws Exception {
        String url = "sqlite:" + dir.resolve("ledger.db");
        long n;
        try (Ledger ledger = Ledger.open(url, verifier)) {
            for (String[] v : signed(scenario("renewals-voluntary-expiry"), "both")) {
                ingest(ledger, v[0], v[1]);
            }
            n = ledger.summary().getEvents();
            LedgerReverifyResult r = ledger.reverify();
            assertEquals(n, r.getChecked());
            assertTrue(r.getRefused().isEmpty());
        }
        // The same identity trusting Apple's root instead of the test PKI's: every stored value is refused now.
        try (SignedDataVerifier apple = new SignedDataVerifier(AppleRootCertificates.forSignedData(),
                doc.get("bundleId").asText(), null, Environment.SANDBOX, false);
             Ledger ledger = Ledger.open(url, apple)) {
            LedgerReverifyResult r = ledger.reverify();
            assertEquals(n, r.getChecked());
            assertEquals(n, r.getRefused().size());
            Set<String> reasons = new HashSet<>();
            Set<String> statuses = new HashSet<>();
            r.getRefused().forEach(x -> {
                reasons.add(x.getReason());
                statuses.add(x.getStatus());
            });
            assertEquals(Set.of("untrusted_chain"), reasons);
            assertEquals(Set.of("VERIFICATION_FAILURE"), statuses);
        }
    }

    /**
     * Real Apple data: the 2025-10-01 Sandbox DID_RENEW is signed 33 s before its new period's purchaseDate, so a
     * ledger that never saw the previous period knows no transaction at its signedDate. Apple's data.status is 1 (a
     * renewal is ACTIVE, apple-lifecycle.md sections 1-2): missing history, not a contradiction.
     */
    @Test
    void aFreshLedgersFirstRenewalIsIncompleteHistory() throws Exception {
        Assumptions.assumeTrue(Support.conformancePresent(), ConformanceTest.MISSING);
        String jws = Support.text(Support.CONFORMANCE.resolve("real/jws/sandbox-notification-did-renew-2025-10-01.jws"));
        try (SignedDataVerifier v = new SignedDataVerifier(AppleRootCertificates.forSignedData(),
                "com.loki-project.loki-messenger", null, Environment.SANDBOX, false);
             Ledger ledger = Ledger.open("sqlite::memory:", v)) {
            LedgerIngestResult r = ledger.ingestNotification(jws);
            assertEquals(Status.ACTIVE, r.getAppleStatus());
            assertEquals(Boolean.FALSE, r.getAgrees());
            assertEquals(LedgerOracleVerdict.INCOMPLETE_HISTORY, r.getVerdict());
            assertTrue(r.getMissing() != null && r.getMissing().contains("catch-up"), r.getMissing());
            assertEquals(0L, ledger.summary().getContradictions());
            LedgerIngestResult again = ledger.ingestNotification(jws);
            assertEquals(Boolean.FALSE, again.getStored());
            assertEquals(LedgerOracleVerdict.INCOMPLETE_HISTORY, again.getVerdict());
            LedgerDisagreementPage page = ledger.disagreements(null, 1);  // the one, and no page after it
            assertEquals(ledger.summary().getDisagreements(), page.getDisagreements());
            assertNull(page.getNext());
        }
    }
}
