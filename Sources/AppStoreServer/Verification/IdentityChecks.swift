import FoundationEssentials

/// A signed payload model with Apple's identity rules (bundle id, app Apple id, environment).
protocol SignedPayloadModel: JSONDecodable, Sendable {
    static var kind: SignedPayloadKind { get }
    /// Whether a payload of another kind could pass this kind's identity checks, so the kind is checked always.
    static var probesKindOnSuccess: Bool { get }
    /// The date the chain is validated at when online checks are off (Apple's rule).
    var effectiveDate: Date? { get }
    func identityFailure(for verifier: SignedDataVerifier) -> VerificationFailure?
}

extension SignedPayloadModel {
    static var probesKindOnSuccess: Bool { false }
    var effectiveDate: Date? { nil }
}

extension SignedDataVerifier {
    fileprivate func bundleFailure(_ found: String?, what: String) -> VerificationFailure? {
        guard !Identity.same(found, bundleId) else { return nil }
        return VerificationFailure(.wrongBundle,
            "\(what) bundleId is \(quoted(found)); this verifier accepts \(QuotedText.quote(bundleId))")
    }

    fileprivate func appAppleIdFailure(_ found: Int64?, what: String) -> VerificationFailure? {
        // Apple checks the app Apple ID in Production only (Sandbox data may omit it).
        guard environment == .production, found != appAppleId else { return nil }
        return VerificationFailure(.wrongAppAppleId,
            "\(what) appAppleId is \(found.map(String.init) ?? "missing"); this verifier accepts \(appAppleId.map(String.init) ?? "none")")
    }

    fileprivate func environmentFailure(_ found: AppStoreEnvironment?, what: String) -> VerificationFailure? {
        guard !Identity.same(found?.rawValue, environment.rawValue) else { return nil }
        return VerificationFailure(.wrongEnvironment,
            "\(what) is \(quoted(found?.rawValue)); this verifier is configured for \(environment.rawValue)")
    }

    private func quoted(_ s: String?) -> String { s.map { QuotedText.quote($0) } ?? "missing" }
}

extension ResponseBodyV2DecodedPayload: SignedPayloadModel {
    static var kind: SignedPayloadKind { .notification }
    var effectiveDate: Date? { signedDate }

    func identityFailure(for v: SignedDataVerifier) -> VerificationFailure? {
        // Apple's order: data, then summary, then externalPurchaseToken, then appData.
        let bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?, source: String
        if let data {
            (bundleId, appAppleId, environment, source) = (data.bundleId, data.appAppleId, data.environment, "data")
        } else if let summary {
            (bundleId, appAppleId, environment, source) = (summary.bundleId, summary.appAppleId, summary.environment, "summary")
        } else if let token = externalPurchaseToken {
            // External purchase tokens carry no environment: a "SANDBOX" id prefix means Sandbox.
            let env: AppStoreEnvironment = token.externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
            (bundleId, appAppleId, environment, source) = (token.bundleId, token.appAppleId, env, "externalPurchaseToken")
        } else if let appData {
            (bundleId, appAppleId, environment, source) = (appData.bundleId, appData.appAppleId, appData.environment, "appData")
        } else {
            return VerificationFailure(.wrongBundle,
                "notification has none of data, summary, externalPurchaseToken or appData, so it names no app")
        }
        if let f = v.bundleFailure(bundleId, what: "notification \(source).") { return f }
        if let f = v.appAppleIdFailure(appAppleId, what: "notification \(source).") { return f }
        let what = source == "externalPurchaseToken" ? "notification environment (from the externalPurchaseId prefix)"
            : "notification \(source).environment"
        return v.environmentFailure(environment, what: what)
    }
}

extension JWSTransactionDecodedPayload: SignedPayloadModel {
    static var kind: SignedPayloadKind { .transaction }
    var effectiveDate: Date? { signedDate }
    func identityFailure(for v: SignedDataVerifier) -> VerificationFailure? {
        v.bundleFailure(bundleId, what: "transaction")
            ?? v.environmentFailure(environment, what: "transaction environment")
    }
}

extension JWSRenewalInfoDecodedPayload: SignedPayloadModel {
    static var kind: SignedPayloadKind { .renewalInfo }
    static var probesKindOnSuccess: Bool { true }
    var effectiveDate: Date? { signedDate }
    func identityFailure(for v: SignedDataVerifier) -> VerificationFailure? {
        // Renewal info carries no bundle id; Apple checks the environment only.
        v.environmentFailure(environment, what: "renewal info environment")
    }
}

extension AppTransaction: SignedPayloadModel {
    static var kind: SignedPayloadKind { .appTransaction }
    var effectiveDate: Date? { receiptCreationDate }
    func identityFailure(for v: SignedDataVerifier) -> VerificationFailure? {
        v.bundleFailure(bundleId, what: "app transaction")
            ?? v.appAppleIdFailure(appAppleId, what: "app transaction")
            ?? v.environmentFailure(receiptType, what: "app transaction receiptType")
    }
}

extension DecodedRealtimeRequestBody: SignedPayloadModel {
    static var kind: SignedPayloadKind { .realtimeRequest }
    var effectiveDate: Date? { signedDate }
    func identityFailure(for v: SignedDataVerifier) -> VerificationFailure? {
        v.appAppleIdFailure(appAppleId, what: "realtime request")
            ?? v.environmentFailure(environment, what: "realtime request environment")
    }
}
