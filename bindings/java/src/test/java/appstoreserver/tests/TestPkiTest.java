package appstoreserver.tests;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The project's own PKI cases (Tests/support/testpki.py: every verify operation, valid and each failure, exact status
 * and reason) through the Java API, with Apple's Java VerificationStatus for each.
 */
class TestPkiTest {
    static final Support.Tally TALLY = new Support.Tally("testpki");

    @AfterAll
    static void report() {
        TALLY.write();
    }

    @Test
    void caseCount() {
        assertTrue(Support.json(Support.testpki().resolve("manifest.json")).get("cases").size() >= 162);
    }

    @TestFactory
    List<DynamicTest> cases() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : Support.json(Support.testpki().resolve("manifest.json")).get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("id").asText(), () -> {
                try {
                    ManifestRunner.check(Support.testpki(), c);
                    TALLY.pass();
                } catch (Throwable t) {
                    TALLY.fail();
                    throw t;
                }
            }));
        }
        return tests;
    }
}
