import FoundationEssentials

/// Verifies and decodes App Store signed data (JWS) exactly as strictly as Apple's libraries, and more: the chain
/// is validated with OpenSSL against the caller's roots only, Apple's marker extensions are required, signatures
/// must be JOSE ES256, and every failure names its reason.
///
/// With online checks on, the chain is validated at the current time and the intermediate and the leaf are checked
/// for revocation with OCSP through the caller's transport (see `OCSP`); a good answer is reused with the chain
/// until the chain cache's TTL or the answer's nextUpdate, whichever comes first.
///
/// Thread-safe: one instance may be shared by any number of threads. Calls are synchronous: CPU-bound, plus, with
/// online checks on and no cached answer, up to two OCSP exchanges on the calling thread.
public final class SignedDataVerifier: Sendable {
    /// The app's bundle identifier; payloads for another bundle fail (`wrongBundle`).
    public let bundleId: String
    /// The app's Apple ID, checked in Production (`wrongAppAppleId`).
    public let appAppleId: Int64?
    /// The environment payloads must come from (`wrongEnvironment`).
    public let environment: AppStoreEnvironment
    /// Whether chains are checked for revocation with OCSP, at the current time.
    public let enableOnlineChecks: Bool
    /// The transport OCSP requests go through (online checks), if one was given.
    public let transport: (any BlockingHTTPTransport)?
    /// How long one OCSP exchange may take, in milliseconds.
    public let ocspTimeoutMilliseconds: UInt32
    /// Apple's libraries wait 30 s for an OCSP responder.
    public static let defaultOCSPTimeoutMilliseconds: UInt32 = 30_000
    /// The largest JWS accepted, in bytes; larger input is refused before a byte of it is read (`inputTooLarge`).
    public let maxJWSBytes: Int
    /// 1 MiB: App Store JWS are a few KB (a notification with nested values under 30 KB).
    public static let defaultMaxJWSBytes = 1 << 20
    let trust: TrustStore
    let cache: ChainCache
    let online: OnlineChecks?

    /// - Parameters:
    ///   - rootCertificates: root certificates, DER or PEM text (several certificates each), the only trust anchors (for App Store data: Apple Root CA - G3, `AppleRootCertificate.appleRootCAG3`);
    ///     may be empty for `.xcode` and `.localTesting`, which skip signature checks.
    ///   - bundleId: the app's bundle identifier; payloads for another app fail.
    ///   - appAppleId: required when `environment` is `.production`.
    ///   - environment: `.sandbox`, `.production`, `.xcode` or `.localTesting` (the last two skip signature checks,
    ///     as Apple's libraries do).
    ///   - enableOnlineChecks: OCSP revocation checks of the intermediate and the leaf, at the current time. They need
    ///     a `transport`; without one, `true` is a configuration error (`onlineChecksUnavailable`), never a silent
    ///     skip.
    ///   - chainCache: size and lifetime of the verified-chain cache (with online checks, of the OCSP answers too).
    ///   - transport: carries the OCSP requests (HTTP POST, `application/ocsp-request`). Used only with online checks.
    ///   - ocspTimeoutMilliseconds: the time one OCSP exchange may take (> 0); the intermediate and the leaf are
    ///     asked one after the other.
    ///   - maxJWSBytes: the largest JWS accepted (> 0); larger input is refused unread.
    public convenience init(rootCertificates: [Data], bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment,
                enableOnlineChecks: Bool, chainCache: ChainCacheConfiguration = .default,
                transport: (any BlockingHTTPTransport)? = nil,
                ocspTimeoutMilliseconds: UInt32 = SignedDataVerifier.defaultOCSPTimeoutMilliseconds,
                maxJWSBytes: Int = SignedDataVerifier.defaultMaxJWSBytes) throws(ConfigurationError) {
        try self.init(rootCertificates: rootCertificates.map { [UInt8]($0) }, bundleId: bundleId, appAppleId: appAppleId,
                      environment: environment, enableOnlineChecks: enableOnlineChecks, chainCache: chainCache,
                      transport: transport, ocspTimeoutMilliseconds: ocspTimeoutMilliseconds, maxJWSBytes: maxJWSBytes)
    }

    /// A verifier with the roots as bytes; the parameters as for the `Data` form.
    public init(rootCertificates: [[UInt8]], bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment,
                enableOnlineChecks: Bool, chainCache: ChainCacheConfiguration = .default,
                transport: (any BlockingHTTPTransport)? = nil,
                ocspTimeoutMilliseconds: UInt32 = SignedDataVerifier.defaultOCSPTimeoutMilliseconds,
                maxJWSBytes: Int = SignedDataVerifier.defaultMaxJWSBytes) throws(ConfigurationError) {
        guard environment.isKnown else {
            throw ConfigurationError(.invalidArgument,
                "unknown environment \(QuotedText.quote(environment.rawValue)): use Sandbox, Production, Xcode or LocalTesting")
        }
        if environment == .production && appAppleId == nil {
            throw ConfigurationError(.invalidArgument, "appAppleId is required for the Production environment")
        }
        guard ocspTimeoutMilliseconds > 0 else {
            throw ConfigurationError(.invalidArgument, "ocspTimeoutMilliseconds must be greater than 0")
        }
        guard maxJWSBytes > 0 else { throw ConfigurationError(.invalidArgument, "maxJWSBytes must be greater than 0") }
        self.maxJWSBytes = maxJWSBytes
        if enableOnlineChecks && transport == nil {
            throw ConfigurationError(.onlineChecksUnavailable,
                "online checks (OCSP) need a transport to reach the OCSP responders: pass transport: (Swift) or call "
                + "appstore_verifier_options_set_transport (C), or disable online checks explicitly")
        }
        // Xcode and LocalTesting data is not signed by Apple: those verifiers need no roots (as with Apple's libraries).
        self.trust = try TrustStore(rootCertificates: rootCertificates,
                                    allowEmpty: environment == .xcode || environment == .localTesting)
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.enableOnlineChecks = enableOnlineChecks
        self.transport = transport
        self.ocspTimeoutMilliseconds = ocspTimeoutMilliseconds
        self.cache = ChainCache(configuration: chainCache)
        self.online = enableOnlineChecks ? transport.map { OnlineChecks(transport: $0, timeoutMilliseconds: ocspTimeoutMilliseconds) } : nil
    }

    /// Hits and misses of the verified-chain cache so far.
    public var chainCacheStatistics: ChainCacheStatistics { cache.statistics }

    // MARK: Apple's five operations

    /// Verifies and decodes a notification V2 `signedPayload` (Apple's `verifyAndDecodeNotification`).
    public func verifyAndDecodeNotification(signedPayload: String) -> VerificationResult<ResponseBodyV2DecodedPayload> {
        VerificationResult(verify(signedPayload, as: ResponseBodyV2DecodedPayload.self).map(\.value))
    }

    /// Verifies and decodes a signed transaction (Apple's `verifyAndDecodeTransaction`).
    public func verifyAndDecodeTransaction(signedTransaction: String) -> VerificationResult<JWSTransactionDecodedPayload> {
        VerificationResult(verify(signedTransaction, as: JWSTransactionDecodedPayload.self).map(\.value))
    }

    /// Verifies and decodes signed renewal info (Apple's `verifyAndDecodeRenewalInfo`).
    public func verifyAndDecodeRenewalInfo(signedRenewalInfo: String) -> VerificationResult<JWSRenewalInfoDecodedPayload> {
        VerificationResult(verify(signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self).map(\.value))
    }

    /// Verifies and decodes a signed app transaction (Apple's `verifyAndDecodeAppTransaction`).
    public func verifyAndDecodeAppTransaction(signedAppTransaction: String) -> VerificationResult<AppTransaction> {
        VerificationResult(verify(signedAppTransaction, as: AppTransaction.self).map(\.value))
    }

    /// Verifies and decodes a Retention Messaging realtime request's `signedPayload` (Apple's
    /// `verifyAndDecodeRealtimeRequest`).
    public func verifyAndDecodeRealtimeRequest(signedPayload: String) -> VerificationResult<DecodedRealtimeRequestBody> {
        VerificationResult(verify(signedPayload, as: DecodedRealtimeRequestBody.self).map(\.value))
    }

    /// Beyond Apple: verifies a notification and, in the same call, the signed transaction, renewal info and app
    /// transaction nested in it, each against its own effective date and identity rules.
    public func verifyAndDecodeNotificationDeep(signedPayload: String) -> VerificationResult<VerifiedNotification> {
        VerificationResult(verifyDeep(signedPayload).map(\.decoded))
    }

    /// Async forms of the operations, for code written against Apple's async API. Verification is CPU-bound, so
    /// these simply run the synchronous call.
    public func verifyAndDecodeNotification(signedPayload: String) async -> VerificationResult<ResponseBodyV2DecodedPayload> {
        VerificationResult(verify(signedPayload, as: ResponseBodyV2DecodedPayload.self).map(\.value))
    }
    /// Async form of `verifyAndDecodeTransaction(signedTransaction:)`.
    public func verifyAndDecodeTransaction(signedTransaction: String) async -> VerificationResult<JWSTransactionDecodedPayload> {
        VerificationResult(verify(signedTransaction, as: JWSTransactionDecodedPayload.self).map(\.value))
    }
    /// Async form of `verifyAndDecodeRenewalInfo(signedRenewalInfo:)`.
    public func verifyAndDecodeRenewalInfo(signedRenewalInfo: String) async -> VerificationResult<JWSRenewalInfoDecodedPayload> {
        VerificationResult(verify(signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self).map(\.value))
    }
    /// Async form of `verifyAndDecodeAppTransaction(signedAppTransaction:)`.
    public func verifyAndDecodeAppTransaction(signedAppTransaction: String) async -> VerificationResult<AppTransaction> {
        VerificationResult(verify(signedAppTransaction, as: AppTransaction.self).map(\.value))
    }
    /// Async form of `verifyAndDecodeRealtimeRequest(signedPayload:)`.
    public func verifyAndDecodeRealtimeRequest(signedPayload: String) async -> VerificationResult<DecodedRealtimeRequestBody> {
        VerificationResult(verify(signedPayload, as: DecodedRealtimeRequestBody.self).map(\.value))
    }
}
