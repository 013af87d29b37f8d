package appstoreserver.tests;

import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.client.APIException;
import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.model.Environment;
import appstoreserver.signature.ExternalSigner;
import appstoreserver.signature.SigningKey;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client's timeout is a deadline for the whole call (issue 35): a signer still busy at the deadline is abandoned
 * (its signature discarded) and told the time it has. The deadline's waits and reads are the shared driver scenarios'
 * ({@link DriverScenariosTest}, Tests/driver/scenarios.json).
 */
class DeadlineTest {
    @Test
    void aBlockingSignerIsAbandonedAtTheDeadline() throws Exception {
        SigningTest.JavaSigner real = new SigningTest.JavaSigner(SigningTest.privateKey("p256.p8"));
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean returned = new AtomicBoolean();
        AtomicLong told = new AtomicLong(-1);
        // An 8 s signer: it answers when the test releases it (after the call), or after 8 s.
        ExternalSigner blocking = new ExternalSigner() {
            @Override
            public byte[] sign(byte[] message, byte[] digest) throws Exception {
                release.await(8, TimeUnit.SECONDS);
                returned.set(true);
                return real.sign(message, digest);
            }

            @Override
            public byte[] sign(byte[] message, byte[] digest, Duration timeout) throws Exception {
                told.set(timeout.toMillis());
                return sign(message, digest);
            }
        };
        byte[] pub = Support.bytes(Support.keys().resolve("p256_public.pem"));
        AtomicInteger sent = new AtomicInteger();
        try (SigningKey key = SigningKey.withSigner(blocking, pub, Support.KEY_ID, Support.ISSUER, Support.BUNDLE);
             AppStoreServerAPIClient c = new AppStoreServerAPIClient(key, Environment.SANDBOX,
                     ApiSupport.options(MakeRequestTest.BASE).timeout(Duration.ofSeconds(1))) {
                 @Override
                 protected HttpResponseInterface makeRequest(String path, String method, Map<String, List<String>> query,
                                                             Map<String, String> headers, String contentType, byte[] body) {
                     sent.incrementAndGet();
                     throw new AssertionError("nothing may be sent after the deadline");
                 }
             }) {
            long started = System.nanoTime();
            APIException e = assertThrows(APIException.class, () -> c.getTransactionInfo("1"));
            long elapsedMs = (System.nanoTime() - started) / 1_000_000;
            assertEquals(AppStoreStatus.TRANSPORT_ERROR, e.getAppStoreStatus(), e.getMessage());
            assertEquals(FailureReason.DEADLINE_EXCEEDED, e.getReason(), e.getMessage());
            assertTrue(e.getMessage().contains("external signer did not answer"), e.getMessage());
            // Deterministic: the call ended while the signer was still blocked (it is released only below).
            assertFalse(returned.get(), "the call waited for the signer");
            // The issue's acceptance check on the real clock: a call that waited for the signer takes 8 s (it is released
            // only after the call), one that did not about 1 s; the bound (7 s) sits below the signer's 8 s; the issue's 3 s was measured by hand (about 1 s).
            assertTrue(elapsedMs < 7000, elapsedMs + " ms"); // below the 8 s signer, room for load (about 1 s measured)
            // Told the time left of the call's 1000 ms (less than the key's 10 s), minus what the first step took.
            assertTrue(told.get() > 0 && told.get() <= 1000, "told " + told.get() + " ms");
            assertEquals(0, sent.get());
        } finally {
            release.countDown();
        }
    }
}
