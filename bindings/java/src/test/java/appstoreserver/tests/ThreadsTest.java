package appstoreserver.tests;

import appstoreserver.FailureReason;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.verification.SignedDataVerifier;
import appstoreserver.verification.VerificationException;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One verifier shared by 16 threads: every result right (valid and invalid data mixed), and the calls run in parallel
 * (no Java lock around the native call: the threads' CPU time adds up to more than the wall time on 2+ cores).
 */
class ThreadsTest {
    static final int THREADS = 16;

    @Test
    void sixteenThreadsShareOneVerifier() throws Exception {
        String valid = Fixtures.jws("tx-valid");
        String forged = Fixtures.jws("tx-bad-signature-payload-modified");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        double best = 0;
        // Rounds until one ran in parallel: a machine whose cores are busy with other suites may leave no two free for
        // a while, so keep trying for up to 120 s (a lock around the native call fails every round, however long).
        long deadline = System.nanoTime() + 120_000_000_000L;
        for (int attempt = 0; attempt < 3 || System.nanoTime() < deadline; attempt++) {
            try (SignedDataVerifier v = Fixtures.verifier()) {
                CyclicBarrier start = new CyclicBarrier(THREADS + 1);
                AtomicReference<Throwable> problem = new AtomicReference<>();
                AtomicLong cpu = new AtomicLong();
                List<Thread> threads = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    final int id = t;
                    Thread th = new Thread(() -> {
                        try {
                            start.await();
                            long c0 = mx.getCurrentThreadCpuTime();
                            for (int i = 0; i < 60; i++) {
                                if ((i + id) % 4 == 0) {
                                    try {
                                        v.verifyAndDecodeTransaction(forged);
                                        throw new AssertionError("a forged transaction verified");
                                    } catch (VerificationException e) {
                                        assertEquals(FailureReason.BAD_SIGNATURE, e.getReason());
                                    }
                                } else {
                                    JWSTransactionDecodedPayload p = v.verifyAndDecodeTransaction(valid);
                                    assertEquals("2000000912345678", p.getTransactionId());
                                }
                            }
                            cpu.addAndGet(mx.getCurrentThreadCpuTime() - c0);
                        } catch (Throwable e) {
                            problem.compareAndSet(null, e);
                        }
                    });
                    th.start();
                    threads.add(th);
                }
                start.await();
                long w0 = System.nanoTime();
                for (Thread th : threads) {
                    th.join();
                }
                long wall = System.nanoTime() - w0;
                assertNull(problem.get(), () -> "a thread failed: " + problem.get());
                best = Math.max(best, (double) cpu.get() / wall);
                long[] stats = v.cacheStats();
                assertTrue(stats[0] > 0, "the chain cache was shared");
            }
            if (best > 1.2 || Runtime.getRuntime().availableProcessors() < 2) {
                break;
            }
        }
        System.out.printf("threads: CPU time / wall time = %.2f with %d threads on %d processors%n", best, THREADS,
                Runtime.getRuntime().availableProcessors());
        if (Runtime.getRuntime().availableProcessors() >= 2) {
            assertTrue(best > 1.2, "the calls did not run in parallel (CPU/wall " + best + ")");
        }
    }
}
