import FoundationEssentials

/// Verifies and decodes App Store signed data (JWS) exactly as strictly as Apple's libraries, and more: the chain
/// is validated with OpenSSL against the caller's roots only, Apple's marker extensions are required, signatures
/// must be JOSE ES256, and every failure names its reason.
///
/// Thread-safe: one instance may be shared by any number of threads. Calls are synchronous (CPU-bound).
public final class SignedDataVerifier: Sendable {
    public let bundleId: String
    public let appAppleId: Int64?
    public let environment: AppStoreEnvironment
    public let enableOnlineChecks: Bool
    let trust: TrustStore
    let cache: ChainCache

    /// - Parameters:
    ///   - rootCertificates: DER root certificates, the only trust anchors (for App Store data: Apple Root CA - G3).
    ///   - appAppleId: required when `environment` is `.production`.
    ///   - environment: `.sandbox`, `.production`, `.xcode` or `.localTesting` (the last two skip signature checks,
    ///     as Apple's libraries do).
    ///   - enableOnlineChecks: OCSP revocation checks. Not available in this version: `true` is a configuration
    ///     error rather than a silent skip.
    ///   - chainCache: size and lifetime of the verified-chain cache.
    public convenience init(rootCertificates: [Data], bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment,
                enableOnlineChecks: Bool, chainCache: ChainCacheConfiguration = .default) throws(ConfigurationError) {
        try self.init(rootCertificates: rootCertificates.map { [UInt8]($0) }, bundleId: bundleId, appAppleId: appAppleId,
                      environment: environment, enableOnlineChecks: enableOnlineChecks, chainCache: chainCache)
    }

    public init(rootCertificates: [[UInt8]], bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment,
                enableOnlineChecks: Bool, chainCache: ChainCacheConfiguration = .default) throws(ConfigurationError) {
        guard environment.isKnown else {
            throw ConfigurationError(.invalidArgument,
                "unknown environment \"\(environment.rawValue)\": use Sandbox, Production, Xcode or LocalTesting")
        }
        if environment == .production && appAppleId == nil {
            throw ConfigurationError(.invalidArgument, "appAppleId is required for the Production environment")
        }
        if enableOnlineChecks {
            throw ConfigurationError(.onlineChecksUnavailable,
                "online checks (OCSP) are not available in this version; disable them explicitly")
        }
        self.trust = try TrustStore(rootCertificates: rootCertificates)
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.enableOnlineChecks = enableOnlineChecks
        self.cache = ChainCache(configuration: chainCache)
    }

    /// Hits and misses of the verified-chain cache so far.
    public var chainCacheStatistics: ChainCacheStatistics { cache.statistics }

    // MARK: Apple's five operations

    public func verifyAndDecodeNotification(signedPayload: String) -> VerificationResult<ResponseBodyV2DecodedPayload> {
        VerificationResult(verify(signedPayload, as: ResponseBodyV2DecodedPayload.self).map(\.value))
    }

    public func verifyAndDecodeTransaction(signedTransaction: String) -> VerificationResult<JWSTransactionDecodedPayload> {
        VerificationResult(verify(signedTransaction, as: JWSTransactionDecodedPayload.self).map(\.value))
    }

    public func verifyAndDecodeRenewalInfo(signedRenewalInfo: String) -> VerificationResult<JWSRenewalInfoDecodedPayload> {
        VerificationResult(verify(signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self).map(\.value))
    }

    public func verifyAndDecodeAppTransaction(signedAppTransaction: String) -> VerificationResult<AppTransaction> {
        VerificationResult(verify(signedAppTransaction, as: AppTransaction.self).map(\.value))
    }

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
    public func verifyAndDecodeTransaction(signedTransaction: String) async -> VerificationResult<JWSTransactionDecodedPayload> {
        VerificationResult(verify(signedTransaction, as: JWSTransactionDecodedPayload.self).map(\.value))
    }
    public func verifyAndDecodeRenewalInfo(signedRenewalInfo: String) async -> VerificationResult<JWSRenewalInfoDecodedPayload> {
        VerificationResult(verify(signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self).map(\.value))
    }
    public func verifyAndDecodeAppTransaction(signedAppTransaction: String) async -> VerificationResult<AppTransaction> {
        VerificationResult(verify(signedAppTransaction, as: AppTransaction.self).map(\.value))
    }
    public func verifyAndDecodeRealtimeRequest(signedPayload: String) async -> VerificationResult<DecodedRealtimeRequestBody> {
        VerificationResult(verify(signedPayload, as: DecodedRealtimeRequestBody.self).map(\.value))
    }
}

/// A notification with its nested signed values verified and decoded.
public struct VerifiedNotification: Hashable, Sendable {
    public let notification: ResponseBodyV2DecodedPayload
    /// `data.signedTransactionInfo`, when present.
    public let transaction: JWSTransactionDecodedPayload?
    /// `data.signedRenewalInfo`, when present.
    public let renewalInfo: JWSRenewalInfoDecodedPayload?
    /// `appData.signedAppTransactionInfo`, when present.
    public let appTransaction: AppTransaction?
}
