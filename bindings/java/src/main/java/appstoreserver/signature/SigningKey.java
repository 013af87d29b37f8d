package appstoreserver.signature;

import appstoreserver.AppStoreServerException;
import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Cleaners;
import appstoreserver.internal.Errors;
import appstoreserver.internal.NativeError;
import appstoreserver.internal.NativeHandle;
import appstoreserver.internal.SignerBridge;
import appstoreserver.internal.Signing;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.Arrays;

/**
 * An App Store Connect signing key with the identifiers every signature needs (beyond Apple: Apple's classes take
 * the .p8 text directly, which they do here too). Either the .p8 text (PKCS#8 PEM, EC P-256), parsed by the native
 * core and kept in native memory that is cleansed when the key is closed, or an {@link ExternalSigner} (a KMS or an
 * HSM) with its public key. Immutable and thread-safe; close() frees it (keys made from an external signer keep the
 * signer until every object made with the key is closed).
 */
public final class SigningKey implements AutoCloseable {
    static {
        Signing.setHandles(k -> k.handle);
    }

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;
    private final String keyId;
    private final String issuerId;
    private final String bundleId;

    /**
     * @param signingKey Your private key downloaded from App Store Connect (the .p8 text)
     * @param keyId Your private key ID from App Store Connect
     * @param issuerId Your issuer ID from the Keys page in App Store Connect; may be null when only promotional offer v1
     *                 signatures are made
     * @param bundleId Your app's bundle ID
     * @throws AppStoreServerException the key cannot be used (status INVALID_KEY, reason KEY_NOT_PEM, KEY_ENCRYPTED,
     *                                 KEY_MALFORMED, KEY_NOT_EC, KEY_WRONG_CURVE); key bytes never appear in messages
     */
    public SigningKey(String signingKey, String keyId, String issuerId, String bundleId) {
        byte[] pem = Args.text(signingKey, "signingKey");
        byte[] kid = Args.cString(keyId, "keyId");
        byte[] iss = Args.optionalCString(issuerId, "issuerId");
        byte[] bid = Args.cString(bundleId, "bundleId");
        long k;
        try {
            k = Abi.signing_key_new(pem, kid, iss, bid);
        } catch (NativeError e) {
            throw Errors.library(e);
        } finally {
            Arrays.fill(pem, (byte) 0);
        }
        this.handle = new NativeHandle("SigningKey", k, Abi::signing_key_free);
        this.cleanable = Cleaners.register(this, handle);
        this.keyId = keyId;
        this.issuerId = issuerId;
        this.bundleId = bundleId;
    }

    private SigningKey(NativeHandle handle, String keyId, String issuerId, String bundleId) {
        this.handle = handle;
        this.cleanable = Cleaners.register(this, handle);
        this.keyId = keyId;
        this.issuerId = issuerId;
        this.bundleId = bundleId;
    }

    /** {@link #withSigner(ExternalSigner, byte[], String, String, String, Duration)} with the default 10 s. */
    public static SigningKey withSigner(ExternalSigner signer, byte[] publicKey, String keyId, String issuerId,
                                        String bundleId) {
        return withSigner(signer, publicKey, keyId, issuerId, bundleId, Duration.ofSeconds(10));
    }

    /**
     * A key held outside the process: every signature is asked of signer, and checked with publicKey (the signer's EC
     * P-256 public key, PEM "-----BEGIN PUBLIC KEY-----" text or DER SubjectPublicKeyInfo) before it is used.
     *
     * @param timeout how long one signature may take (1 ms ... 4294967295 ms); a slower one fails. The signer runs on a
     *                thread of its own and is waited for at most this long, or what is left of an API call's timeout
     *                when that is less (the call then fails at its deadline); Java cannot interrupt it, so an
     *                abandoned signer's thread finishes on its own (its signature discarded).
     */
    public static SigningKey withSigner(ExternalSigner signer, byte[] publicKey, String keyId, String issuerId,
                                        String bundleId, Duration timeout) {
        Args.notNull(signer, "signer");
        Args.notNull(publicKey, "publicKey");
        byte[] kid = Args.cString(keyId, "keyId");
        byte[] iss = Args.optionalCString(issuerId, "issuerId");
        byte[] bid = Args.cString(bundleId, "bundleId");
        Args.notNull(timeout, "timeout");
        long ms = timeout.toMillis();
        if (ms < 1 || ms > 4294967295L) {
            throw new IllegalArgumentException("timeout must be from 1 ms to 4294967295 ms, got " + timeout);
        }
        SignerBridge bridge = (message, digest, timeoutMillis) -> {
            long wait = timeoutMillis > 0 ? timeoutMillis : ms;
            // On a daemon thread of its own, waited for at most the time it has: a hung KMS call must not hold the
            // API call past its deadline (the library cannot interrupt its callback, and Java cannot interrupt I/O).
            java.util.concurrent.CompletableFuture<byte[]> done = new java.util.concurrent.CompletableFuture<>();
            Thread worker = new Thread(() -> {
                try {
                    done.complete(signer.sign(message, digest, Duration.ofMillis(wait)));
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            }, "appstoreserver-signer");
            worker.setDaemon(true);
            try {
                worker.start();
                byte[] sig = done.get(wait, java.util.concurrent.TimeUnit.MILLISECONDS);
                if (sig == null) {
                    Signing.SIGNER_FAILURE.set(new IllegalStateException("the signer returned null"));
                }
                return sig;
            } catch (java.util.concurrent.TimeoutException t) {
                Signing.SIGNER_FAILURE.set(new java.util.concurrent.TimeoutException(
                        "no signature within the " + wait + " ms it had"));
                return null;
            } catch (java.util.concurrent.ExecutionException t) {
                Signing.SIGNER_FAILURE.set(t.getCause());
                return null;
            } catch (Throwable t) {
                Signing.SIGNER_FAILURE.set(t);
                return null;
            }
        };
        long[] made;
        try {
            made = Abi.signing_key_new_with_signer_bridge(bridge, publicKey, ms, kid, iss, bid);
        } catch (NativeError e) {
            throw Errors.library(e);
        }
        NativeHandle context = new NativeHandle("signer context", made[1], Abi::bridge_context_free);
        NativeHandle key = new NativeHandle("SigningKey", made[0], Abi::signing_key_free, context);
        context.close(); // the key keeps it, and every client made with the key (NativeHandle dependencies)
        return new SigningKey(key, keyId, issuerId, bundleId);
    }

    /**
     * An App Store Server API bearer token (ES256, claims iss, iat, exp, aud "appstoreconnect-v1", bid), valid for 5
     * minutes from now.
     */
    public String createApiToken() {
        return createApiToken(0, 300);
    }

    /**
     * An App Store Server API bearer token: an ES256 JWT with header alg, kid and typ JWT and claims iss, iat, exp,
     * aud "appstoreconnect-v1" and bid.
     *
     * <p>A bearer token issued at issuedAt (seconds since 1970; 0 = now) for lifetimeSeconds (1 ... 3600, Apple's
     * maximum).
     * @cfunction appstore_signing_key_create_api_token
     */
    public String createApiToken(long issuedAt, long lifetimeSeconds) {
        if (lifetimeSeconds < 1 || lifetimeSeconds > 3600) {
            throw new IllegalArgumentException("lifetimeSeconds must be from 1 to 3600, got " + lifetimeSeconds);
        }
        return Signing.call(this, h -> Abi.signing_key_create_api_token(h, issuedAt, lifetimeSeconds));
    }

    public String getKeyId() {
        return keyId;
    }

    public String getIssuerId() {
        return issuerId;
    }

    public String getBundleId() {
        return bundleId;
    }

    /** Frees the key (once every call in progress has returned). Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }
}
