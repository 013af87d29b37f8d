package appstoreserver.tests;

import appstoreserver.migration.ReceiptUtility;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The 105 cases of ../shared/conformance (85 verifications of real Apple-signed data and derived negatives, 20
 * receipt extractions) through the Java API. Without ../shared/conformance every case is reported SKIPPED, loudly
 * (closing line "java conformance: 0 passed, 0 failed, 105 skipped").
 */
class ConformanceTest {
    static final int VERIFY_CASES = 85;
    static final int RECEIPT_CASES = 20;
    static final String MISSING = "SKIPPED: " + Support.CONFORMANCE + " not found; real Apple data NOT checked";
    static final Support.Tally TALLY = new Support.Tally("conformance");

    @AfterAll
    static void report() {
        if (!Support.conformancePresent()) {
            Support.note("conformance-missing", "java conformance: " + MISSING);
        }
        TALLY.write();
    }

    @Test
    void caseCounts() {
        Assumptions.assumeTrue(Support.conformancePresent(), MISSING);
        int verify = 0;
        int receipts = 0;
        for (JsonNode c : Support.json(Support.CONFORMANCE.resolve("manifest.json")).get("cases")) {
            String op = c.get("operation").asText();
            verify += op.startsWith("verifyAndDecode") ? 1 : 0;
            receipts += op.startsWith("extractTransactionId") ? 1 : 0;
        }
        assertEquals(VERIFY_CASES, verify);
        assertEquals(RECEIPT_CASES, receipts);
    }

    @TestFactory
    List<DynamicTest> cases() {
        List<DynamicTest> tests = new ArrayList<>();
        if (!Support.conformancePresent()) {
            for (int i = 0; i < VERIFY_CASES + RECEIPT_CASES; i++) {
                tests.add(DynamicTest.dynamicTest("missing-" + (i + 1), () -> {
                    TALLY.skip();
                    Assumptions.abort(MISSING);
                }));
            }
            return tests;
        }
        for (JsonNode c : Support.json(Support.CONFORMANCE.resolve("manifest.json")).get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("id").asText(), () -> {
                try {
                    if (c.get("operation").asText().startsWith("verifyAndDecode")) {
                        ManifestRunner.check(Support.CONFORMANCE, c);
                    } else {
                        checkReceipt(c);
                    }
                    TALLY.pass();
                } catch (Throwable t) {
                    TALLY.fail();
                    throw t;
                }
            }));
        }
        return tests;
    }

    /**
     * As Tests/capi/receipts_conformance.c: value / any_of + python_java_node / error-or-null / null. Apple's Java
     * library throws IllegalArgumentException (or IOException) where the others raise; so does this binding.
     */
    static void checkReceipt(JsonNode c) throws Exception {
        String text = Support.text(Support.CONFORMANCE.resolve(c.get("path").asText()));
        ReceiptUtility util = new ReceiptUtility();
        boolean app = c.get("operation").asText().equals("extractTransactionIdFromAppReceipt");
        JsonNode expect = c.get("expect");
        String result = expect.get("result").asText();
        String got = null;
        IllegalArgumentException error = null;
        try {
            got = app ? util.extractTransactionIdFromAppReceipt(text) : util.extractTransactionIdFromTransactionReceipt(text);
        } catch (IllegalArgumentException e) {
            error = e;
        }
        if (result.equals("value")) {
            if (error != null) {
                fail("expected a value, got " + error);
            }
            if (expect.has("value")) {
                assertEquals(expect.get("value").asText(), got);
            } else {
                JsonNode want = expect.get("python_java_node");
                if (want.isNull()) {
                    assertNull(got);
                } else {
                    assertEquals(want.asText(), got, "Apple's Java result");
                    boolean listed = false;
                    for (Iterator<JsonNode> it = expect.get("any_of").elements(); it.hasNext(); ) {
                        listed |= it.next().asText().equals(got);
                    }
                    assertTrue(listed, "not one of any_of");
                }
            }
        } else if (result.equals("error-or-null")) {
            assertTrue(error != null || got == null, "expected an error or null, got " + got);
        } else if (result.startsWith("null")) {
            assertNull(error, "expected null, got " + error);
            assertNull(got);
        } else {
            fail("unknown expectation " + result);
        }
        for (Map.Entry<String, JsonNode> ref : iterable(c.path("reference_results").fields())) {
            if (ref.getKey().startsWith("apple-python") && ref.getValue().path("result").asText().equals("value")
                    && !result.startsWith("null")) {
                JsonNode v = ref.getValue().get("value");
                assertEquals(v.isNull() ? null : v.asText(), got, "Apple's Python (and Java) value");
            }
        }
    }

    static <T> Iterable<T> iterable(Iterator<T> it) {
        return () -> it;
    }
}
