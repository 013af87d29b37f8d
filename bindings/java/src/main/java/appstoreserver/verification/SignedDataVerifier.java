package appstoreserver.verification;

import appstoreserver.AppStoreStatus;
import appstoreserver.FailureReason;
import appstoreserver.internal.Abi;
import appstoreserver.internal.AbiConstants;
import appstoreserver.internal.Args;
import appstoreserver.internal.Cleaners;
import appstoreserver.internal.Errors;
import appstoreserver.internal.JdkTransport;
import appstoreserver.internal.Json;
import appstoreserver.internal.NativeError;
import appstoreserver.internal.NativeHandle;
import appstoreserver.internal.Verifiers;
import appstoreserver.model.AppTransaction;
import appstoreserver.model.DecodedRealtimeRequestBody;
import appstoreserver.model.Environment;
import appstoreserver.model.JWSRenewalInfoDecodedPayload;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.ResponseBodyV2DecodedPayload;
import appstoreserver.model.VerifiedNotification;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Cleaner;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * A verifier and decoder of signed data from the App Store (Apple's class, constructor and methods): notifications
 * V2, transactions, renewal info, app transactions and Retention Messaging realtime requests. The JWS signature is
 * checked first, then the x5c chain against the root certificates given here (x5c[2] is never trusted), Apple's marker
 * extensions, the effective date, and the bundle id, app Apple ID and environment, by the library's native core.
 *
 * <p>Thread-safe: one verifier may be shared by any number of threads; calls run in parallel and hold no Java lock.
 * It holds native memory: close() frees it (later calls throw IllegalStateException); a verifier dropped without
 * close() is freed when it is collected.
 *
 * <p>Beyond Apple: {@link #verifyAndDecodeNotificationDeep} (the nested signed values verified in the same call), the
 * precise failure reason on {@link VerificationException}, a verified-chain cache also offline, and {@link Options}.
 */
public class SignedDataVerifier implements AutoCloseable {
    /** What a verify call decodes (for {@link #verifyAndDecodeToJson}). */
    public enum Kind {
        NOTIFICATION, TRANSACTION, RENEWAL_INFO, APP_TRANSACTION, REALTIME_REQUEST, NOTIFICATION_DEEP
    }

    /**
     * Options beyond Apple's constructor: the verified-chain cache (default 32 chains for 15 minutes; 0 entries
     * disables it), the largest JWS accepted (default 1 MiB), the time one OCSP exchange may take (default 30 s), and
     * the HttpClient online checks use (default: HTTP/1.1, no redirects; a client you configure with a proxy or
     * SSLContext works too: the deadline and the body limit are enforced around it, and an answer reached through a
     * redirect is refused).
     */
    public static final class Options {
        private Integer chainCacheSize;
        private Duration chainCacheTtl;
        private Duration onlineTimeout = Duration.ofSeconds(30);
        private Integer maxJwsBytes;
        private HttpClient httpClient;

        public Options chainCache(int maxEntries, Duration ttl) {
            if (maxEntries < 0) {
                throw new IllegalArgumentException("maxEntries must be >= 0, got " + maxEntries);
            }
            Args.notNull(ttl, "ttl");
            if (ttl.isNegative()) {
                throw new IllegalArgumentException("ttl must not be negative, got " + ttl);
            }
            this.chainCacheSize = maxEntries;
            this.chainCacheTtl = ttl;
            return this;
        }

        public Options onlineTimeout(Duration timeout) {
            Args.notNull(timeout, "timeout");
            if (timeout.toMillis() < 1 || timeout.toMillis() > 3_600_000) {
                throw new IllegalArgumentException("timeout must be from 1 ms to 1 hour, got " + timeout);
            }
            this.onlineTimeout = timeout;
            return this;
        }

        public Options maxJwsBytes(int maxBytes) {
            if (maxBytes < 1) {
                throw new IllegalArgumentException("maxBytes must be from 1 to 2147483647, got " + maxBytes);
            }
            this.maxJwsBytes = maxBytes;
            return this;
        }

        public Options httpClient(HttpClient client) {
            this.httpClient = Args.notNull(client, "client");
            return this;
        }
    }

    static {
        Verifiers.set(v -> v.handle, SignedDataVerifier::failure);
    }

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;
    private final Environment environment;
    private final boolean notificationHook = overridesVerifyNotification(getClass());

    /**
     * @param rootCertificates The set of Apple Root certificate authority certificates (DER, or PEM text), as found on
     *                         <a href="https://www.apple.com/certificateauthority/">Apple PKI</a>; the streams are read
     *                         to their end, not closed
     * @param bundleId The bundle identifier of the app.
     * @param appAppleId The unique identifier of the app in the App Store; required for Production.
     * @param environment The server environment, either sandbox or production.
     * @param enableOnlineChecks Whether to enable revocation checking (OCSP, over java.net.http) and check expiration
     *                           using the current date
     * @throws IllegalArgumentException no root certificate (except for Xcode and LocalTesting, which check no
     *                                  signatures), a root that is not a certificate, Production without appAppleId
     */
    public SignedDataVerifier(Set<InputStream> rootCertificates, String bundleId, Long appAppleId, Environment environment,
                              boolean enableOnlineChecks) {
        this(rootCertificates, bundleId, appAppleId, environment, enableOnlineChecks, new Options());
    }

    public SignedDataVerifier(Set<InputStream> rootCertificates, String bundleId, Long appAppleId, Environment environment,
                              boolean enableOnlineChecks, Options options) {
        byte[] bundle = Args.cString(bundleId, "bundleId");
        Args.notNull(environment, "environment");
        Args.notNull(options, "options");
        List<byte[]> roots = Args.readStreams(rootCertificates, "rootCertificates");
        boolean unchecked = environment == Environment.XCODE || environment == Environment.LOCAL_TESTING;
        if (roots.isEmpty() && !unchecked) {
            throw new IllegalArgumentException("At least one root certificate is required");
        }
        if (appAppleId == null && environment == Environment.PRODUCTION) {
            throw new IllegalArgumentException("appAppleId is required when the environment is Production");
        }
        this.environment = environment;
        NativeHandle transport = null;
        NativeHandle bridge = null;
        long opts = Abi.verifier_options_new();
        try {
            for (int i = 0; i < roots.size(); i++) {
                try {
                    Abi.verifier_options_add_root(opts, roots.get(i));
                } catch (NativeError e) {
                    throw new IllegalArgumentException("rootCertificates: " + e.detail);
                }
            }
            set(() -> Abi.verifier_options_set_bundle_id(opts, bundle));
            if (appAppleId != null) {
                set(() -> Abi.verifier_options_set_app_apple_id(opts, appAppleId));
            }
            set(() -> Abi.verifier_options_set_environment(opts, code(environment)));
            set(() -> Abi.verifier_options_set_online_checks(opts, enableOnlineChecks ? 1 : 0));
            if (options.chainCacheSize != null) {
                long ttl = options.chainCacheTtl.getSeconds();
                set(() -> Abi.verifier_options_set_chain_cache(opts, options.chainCacheSize, ttl));
            }
            if (options.maxJwsBytes != null) {
                set(() -> Abi.verifier_options_set_max_jws_bytes(opts, options.maxJwsBytes));
            }
            if (enableOnlineChecks) {
                long[] made;
                try {
                    made = Abi.transport_new_bridge(new JdkTransport(options.httpClient));
                } catch (NativeError e) {
                    throw Errors.library(e);
                }
                bridge = new NativeHandle("transport context", made[1], Abi::bridge_context_free);
                transport = new NativeHandle("transport", made[0], Abi::transport_free, bridge);
                bridge.close(); // the transport handle keeps it
                long t = transport.acquire();
                try {
                    set(() -> Abi.verifier_options_set_transport(opts, t, options.onlineTimeout.toMillis()));
                } finally {
                    transport.release();
                }
            }
            long v;
            try {
                v = Abi.verifier_new(opts);
            } catch (NativeError e) {
                boolean badRoot = e.reason == FailureReason.BAD_CERTIFICATE.getValue();
                throw new IllegalArgumentException((badRoot ? "rootCertificates: " : "") + e.detail);
            }
            this.handle = new NativeHandle("SignedDataVerifier", v, Abi::verifier_free, transport);
        } finally {
            Abi.verifier_options_free(opts);
            if (transport != null) {
                transport.close(); // the verifier handle keeps it (the options' reference is gone with them)
            }
        }
        this.cleanable = Cleaners.register(this, handle);
    }

    private interface Setter {
        void run();
    }

    private static void set(Setter s) {
        try {
            s.run();
        } catch (NativeError e) {
            throw new IllegalArgumentException(e.detail);
        }
    }

    static int code(Environment e) {
        switch (e) {
            case SANDBOX:
                return AbiConstants.ENVIRONMENT_SANDBOX;
            case PRODUCTION:
                return AbiConstants.ENVIRONMENT_PRODUCTION;
            case XCODE:
                return AbiConstants.ENVIRONMENT_XCODE;
            default:
                return AbiConstants.ENVIRONMENT_LOCAL_TESTING;
        }
    }

    // ---- Apple's methods ----------------------------------------------------------------------------------------

    /**
     * Verifies and decodes a signedTransaction (bundle id, then environment).
     *
     * <p>Verifies and decodes a signedTransaction obtained from the App Store Server API, an App Store Server
     * Notification, or from a device (bundle id, then environment).
     *
     * @param signedTransaction The signedTransaction field
     * @return The decoded transaction info after verification
     * @throws VerificationException Thrown if the data could not be verified
     * @cfunction appstore_verifier_verify_transaction
     */
    public JWSTransactionDecodedPayload verifyAndDecodeTransaction(String signedTransaction) throws VerificationException {
        return decode(verify(Kind.TRANSACTION, signedTransaction, "signedTransaction"), JWSTransactionDecodedPayload.class);
    }

    /**
     * Verifies and decodes a signedRenewalInfo (the environment is checked; Apple checks no bundle id).
     *
     * @param signedRenewalInfo The signedRenewalInfo field
     * @return The decoded renewal info after verification
     * @throws VerificationException Thrown if the data could not be verified
     * @cfunction appstore_verifier_verify_renewal_info
     */
    public JWSRenewalInfoDecodedPayload verifyAndDecodeRenewalInfo(String signedRenewalInfo) throws VerificationException {
        return decode(verify(Kind.RENEWAL_INFO, signedRenewalInfo, "signedRenewalInfo"), JWSRenewalInfoDecodedPayload.class);
    }

    /**
     * Verifies and decodes an App Store Server Notification V2 signedPayload.
     *
     * @param signedPayload The payload received by your server
     * @return The decoded payload after verification
     * @throws VerificationException Thrown if the data could not be verified
     * @cfunction appstore_verifier_verify_notification
     */
    public ResponseBodyV2DecodedPayload verifyAndDecodeNotification(String signedPayload) throws VerificationException {
        if (!notificationHook) {
            return decode(verify(Kind.NOTIFICATION, signedPayload, "signedPayload"), ResponseBodyV2DecodedPayload.class);
        }
        // A subclass overrides verifyNotification: the core verifies all but the app, which the override checks.
        byte[] jws = Args.text(signedPayload, "signedPayload");
        Object[] r;
        long h = handle.acquire();
        try {
            r = Abi.verifier_notification_leaving_identity(h, jws);
        } catch (NativeError e) {
            throw failure(e);
        } finally {
            handle.release();
        }
        com.fasterxml.jackson.databind.JsonNode id;
        try {
            id = Json.MAPPER.readTree((byte[]) r[1]);
        } catch (IOException e) {
            throw new IllegalStateException("the library's notification identity is not JSON", e);
        }
        verifyNotification(id.has("bundleId") ? id.get("bundleId").asText() : null,
                id.has("appAppleId") ? id.get("appAppleId").asLong() : null,
                id.has("environment") ? Environment.fromValue(id.get("environment").asText()) : null);
        return decode((byte[]) r[0], ResponseBodyV2DecodedPayload.class);
    }

    /**
     * Checks the app a notification names (Apple's extension point): called by {@link #verifyAndDecodeNotification}
     * after the signature, the chain and the payload passed, with the bundle id, app Apple ID and environment the
     * notification carries (from data, summary, externalPurchaseToken or appData, in Apple's order; null when absent).
     * The default is the library's check (bundle id, the app Apple ID in Production, the environment); a subclass may
     * override it, e.g. to accept several apps. A notification is returned only when this returns normally.
     *
     * @throws VerificationException INVALID_APP_IDENTIFIER or INVALID_ENVIRONMENT, as Apple's
     */
    protected void verifyNotification(String bundleId, Long appAppleId, Environment notificationEnv)
            throws VerificationException {
        byte[] b = bundleId == null ? null : Args.text(bundleId, "bundleId");
        byte[] e = notificationEnv == null ? null : notificationEnv.getValue().getBytes(StandardCharsets.UTF_8);
        long h = handle.acquire();
        try {
            Abi.verifier_check_notification_identity(h, b, appAppleId == null ? 0 : appAppleId, e);
        } catch (NativeError x) {
            throw failure(x);
        } finally {
            handle.release();
        }
    }

    /** Whether this object's class overrides verifyNotification (then notifications take the hook's path). */
    private static boolean overridesVerifyNotification(Class<?> c) {
        for (Class<?> k = c; k != null && k != SignedDataVerifier.class; k = k.getSuperclass()) {
            try {
                k.getDeclaredMethod("verifyNotification", String.class, Long.class, Environment.class);
                return true;
            } catch (NoSuchMethodException ignored) {
                // not declared here
            }
        }
        return false;
    }

    /**
     * Verifies and decodes a signed AppTransaction.
     *
     * @param signedAppTransaction The signed AppTransaction
     * @return The decoded AppTransaction after validation
     * @throws VerificationException Thrown if the data could not be verified
     * @cfunction appstore_verifier_verify_app_transaction
     */
    public AppTransaction verifyAndDecodeAppTransaction(String signedAppTransaction) throws VerificationException {
        return decode(verify(Kind.APP_TRANSACTION, signedAppTransaction, "signedAppTransaction"), AppTransaction.class);
    }

    /**
     * Verifies and decodes a Retention Messaging "Get Retention Message" realtime request body's signedPayload.
     *
     * @param signedPayload The payload received by your server
     * @return The decoded payload after verification
     * @throws VerificationException Thrown if the data could not be verified
     * @cfunction appstore_verifier_verify_realtime_request
     */
    public DecodedRealtimeRequestBody verifyAndDecodeRealtimeRequest(String signedPayload) throws VerificationException {
        return decode(verify(Kind.REALTIME_REQUEST, signedPayload, "signedPayload"), DecodedRealtimeRequestBody.class);
    }

    // ---- beyond Apple -----------------------------------------------------------------------------------------------

    /**
     * Verifies and decodes a notification and the signed values nested in it (data.signedTransactionInfo,
     * data.signedRenewalInfo, appData.signedAppTransactionInfo), each at its own effective date, all returned decoded
     * (notification, transaction, renewalInfo, appTransaction; each absent when the notification carries none). A
     * nested failure fails the call, and the error message starts with the field name (e.g.
     * "data.signedTransactionInfo: ...").
     *
     * @param signedPayload The payload received by your server
     * @return the notification and the nested values (a getter returns null for what the notification does not carry)
     * @throws VerificationException Thrown if the notification or a nested value could not be verified
     * @cfunction appstore_verifier_verify_notification_deep
     */
    public VerifiedNotification verifyAndDecodeNotificationDeep(String signedPayload) throws VerificationException {
        return decode(verify(Kind.NOTIFICATION_DEEP, signedPayload, "signedPayload"), VerifiedNotification.class);
    }

    /** The verified payload as JSON text, exactly as signed (unknown keys and number forms kept). */
    public String verifyAndDecodeToJson(Kind kind, String signed) throws VerificationException {
        Args.notNull(kind, "kind");
        return new String(verify(kind, signed, "signed"), StandardCharsets.UTF_8);
    }

    /**
     * Chain cache counters since the verifier was created: hits, misses, and the chains cached now.
     *
     * @return {hits, misses, entries}
     * @cfunction appstore_verifier_cache_stats
     */
    public long[] cacheStats() {
        long h = handle.acquire();
        try {
            Object[] r = Abi.verifier_cache_stats(h);
            return new long[] {(Long) r[0], (Long) r[1], (Long) r[2]};
        } finally {
            handle.release();
        }
    }

    /** The environment the verifier checks data against. */
    public Environment getEnvironment() {
        return environment;
    }

    /** Frees the native verifier (once every call in progress on other threads has returned). Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }

    // ---- the call ------------------------------------------------------------------------------------------------------

    private byte[] verify(Kind kind, String signed, String name) throws VerificationException {
        byte[] jws = Args.text(signed, name);
        long h = handle.acquire();
        try {
            switch (kind) {
                case NOTIFICATION:
                    return Abi.verifier_verify_notification(h, jws);
                case TRANSACTION:
                    return Abi.verifier_verify_transaction(h, jws);
                case RENEWAL_INFO:
                    return Abi.verifier_verify_renewal_info(h, jws);
                case APP_TRANSACTION:
                    return Abi.verifier_verify_app_transaction(h, jws);
                case REALTIME_REQUEST:
                    return Abi.verifier_verify_realtime_request(h, jws);
                default:
                    return Abi.verifier_verify_notification_deep(h, jws);
            }
        } catch (NativeError e) {
            throw failure(e);
        } finally {
            handle.release();
        }
    }

    static VerificationException failure(NativeError e) {
        if (e.status == AppStoreStatus.INVALID_ARGUMENT.getValue()) {
            throw Errors.library(e);
        }
        return new VerificationException(AppleVerificationStatus.of(e.status, e.reason), e.status, e.reason, e.detail, null);
    }

    private static <T> T decode(byte[] json, Class<T> type) throws VerificationException {
        try {
            return Json.read(json, type);
        } catch (IOException e) {
            // The library decoded the payload into the model; Jackson refusing it is a binding bug or a value the Java
            // type cannot hold (Apple's Java library reports VERIFICATION_FAILURE for a payload it cannot read).
            throw new VerificationException(VerificationStatus.VERIFICATION_FAILURE,
                    AppStoreStatus.INVALID_JWT_FORMAT.getValue(), FailureReason.UNDECODABLE_PAYLOAD.getValue(),
                    "the verified payload does not map to " + type.getSimpleName() + ": " + e.getMessage(), e);
        }
    }
}
