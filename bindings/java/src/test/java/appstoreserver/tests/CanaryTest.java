package appstoreserver.tests;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.fail;

/** Fails on purpose: run-tests runs it alone and checks that the launcher counts it as failed (never in the real run). */
class CanaryTest {
    @Test
    void failsOnPurpose() {
        fail("the canary fails on purpose");
    }
}
