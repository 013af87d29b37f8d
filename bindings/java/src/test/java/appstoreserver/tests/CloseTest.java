package appstoreserver.tests;

import appstoreserver.internal.Abi;
import appstoreserver.migration.ReceiptVerifier;
import appstoreserver.model.Environment;
import appstoreserver.offers.PromotionalOfferV2SignatureCreator;
import appstoreserver.signature.SigningKey;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * close() frees native memory once; a closed object throws IllegalStateException naming it; close() while other
 * threads verify waits for nothing and frees nothing in use (the last call frees); a creator made from a SigningKey
 * leaves the key open, a key made with an external signer keeps its signer until the last object using it is closed.
 */
class CloseTest {
    @Test
    void useAfterClose() {
        SignedDataVerifier v = Fixtures.verifier();
        v.close();
        v.close(); // idempotent
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> v.verifyAndDecodeTransaction(Fixtures.jws("tx-valid")));
        assertEquals("SignedDataVerifier is closed", e.getMessage());
        assertThrows(IllegalStateException.class, v::cacheStats);

        SigningKey key = new SigningKey(SigningTest.p8(), "k", "i", "b");
        PromotionalOfferV2SignatureCreator c = new PromotionalOfferV2SignatureCreator(key);
        c.close();
        c.createSignature("p", "o", null); // the key is the caller's: still open
        key.close();
        assertEquals("SigningKey is closed",
                assertThrows(IllegalStateException.class, () -> c.createSignature("p", "o", null)).getMessage());
        assertThrows(IllegalStateException.class, key::createApiToken);

        ReceiptVerifier r = new ReceiptVerifier(Set.of(new ByteArrayInputStream(
                Support.bytes(Support.receipts().resolve("root.der")))), null);
        r.close();
        assertEquals("ReceiptVerifier is closed", assertThrows(IllegalStateException.class, () -> r.verify("x")).getMessage());
    }

    @Test
    void closeWhileOtherThreadsVerify() throws Exception {
        for (int round = 0; round < 20; round++) {
            SignedDataVerifier v = Fixtures.verifier();
            String jws = Fixtures.jws("tx-valid");
            CountDownLatch started = new CountDownLatch(4);
            AtomicInteger ok = new AtomicInteger();
            AtomicInteger closed = new AtomicInteger();
            AtomicReference<Throwable> other = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                Thread th = new Thread(() -> {
                    started.countDown();
                    for (int i = 0; i < 200; i++) {
                        try {
                            v.verifyAndDecodeTransaction(jws);
                            ok.incrementAndGet();
                        } catch (IllegalStateException e) {
                            closed.incrementAndGet();
                            return;
                        } catch (Throwable e) {
                            other.set(e);
                            return;
                        }
                    }
                });
                th.start();
                threads.add(th);
            }
            started.await();
            Thread.sleep(round % 5);
            v.close();
            for (Thread th : threads) {
                th.join();
            }
            assertNull(other.get(), "a call failed otherwise than with IllegalStateException");
            assertTrue(ok.get() + closed.get() > 0);
        }
    }

    @Test
    void externalSignerKeptUntilLastUser() throws Exception {
        long before = Abi.live_bridges();
        SigningKey key = SigningKey.withSigner(new SigningTest.JavaSigner(SigningTest.privateKey("p256.p8")),
                Support.bytes(Support.keys().resolve("p256_public.der")), Support.KEY_ID, Support.ISSUER, Support.BUNDLE);
        assertEquals(before + 1, Abi.live_bridges());
        key.createApiToken();
        key.close();
        assertEquals(before, Abi.live_bridges(), "the signer context is freed with the key");
    }

    @Test
    void onlineVerifierFreesItsTransport() throws VerificationException {
        long before = Abi.live_bridges();
        SignedDataVerifier v = new SignedDataVerifier(Fixtures.roots(), Fixtures.BUNDLE, null, Environment.SANDBOX, true);
        assertEquals(before + 1, Abi.live_bridges());
        v.close();
        assertEquals(before, Abi.live_bridges(), "the transport context is freed with the verifier");
    }
}
