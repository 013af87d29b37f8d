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
        guard let id = identity else {
            return VerificationFailure(.wrongBundle,
                "notification has none of data, summary, externalPurchaseToken or appData, so it names no app")
        }
        return v.notificationIdentityFailure(id)
    }

    /// The app a notification names, in Apple's order: data, then summary, then externalPurchaseToken, then appData
    /// (what Apple's verifyNotification hook is called with); nil when it carries none of them.
    public var identity: NotificationIdentity? {
        if let data {
            return NotificationIdentity(bundleId: data.bundleId, appAppleId: data.appAppleId, environment: data.environment, source: "data")
        } else if let summary {
            return NotificationIdentity(bundleId: summary.bundleId, appAppleId: summary.appAppleId, environment: summary.environment,
                                        source: "summary")
        } else if let token = externalPurchaseToken {
            // External purchase tokens carry no environment: a "SANDBOX" id prefix means Sandbox.
            let env: AppStoreEnvironment = token.externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
            return NotificationIdentity(bundleId: token.bundleId, appAppleId: token.appAppleId, environment: env,
                                        source: "externalPurchaseToken")
        } else if let appData {
            return NotificationIdentity(bundleId: appData.bundleId, appAppleId: appData.appAppleId, environment: appData.environment,
                                        source: "appData")
        }
        return nil
    }
}

/// The app a notification names (bundle id, app Apple ID, environment) and where it says so.
public struct NotificationIdentity: Sendable {
    /// The bundle id it names (nil: none).
    public let bundleId: String?
    /// The app Apple ID it names (nil: none; Sandbox notifications often carry none).
    public let appAppleId: Int64?
    /// The environment it names (nil: none).
    public let environment: AppStoreEnvironment?
    /// "data", "summary", "externalPurchaseToken" or "appData"; "caller" for values a caller passed.
    public let source: String

    /// An identity from its parts (`source`: where they come from; "caller" for values a caller passed).
    public init(bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?, source: String) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.source = source
    }

    /// {"bundleId":…,"appAppleId":…,"environment":…,"source":…}, each of the first three only when the notification
    /// carries it (the C ABI's form).
    public var json: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        if let bundleId { w.member("bundleId", bundleId) }
        if let appAppleId { w.member("appAppleId", appAppleId) }
        if let environment { w.member("environment", environment.rawValue) }
        w.member("source", source)
        w.endObject()
        return w.bytes
    }
}

extension SignedDataVerifier {
    /// Apple's verifyNotification check on its own: the bundle id, then (Production) the app Apple ID, then the
    /// environment, against this verifier's; nil when they pass.
    public func notificationIdentityFailure(_ id: NotificationIdentity) -> VerificationFailure? {
        if let f = bundleFailure(id.bundleId, what: "notification \(id.source).") { return f }
        if let f = appAppleIdFailure(id.appAppleId, what: "notification \(id.source).") { return f }
        let what = id.source == "externalPurchaseToken" ? "notification environment (from the externalPurchaseId prefix)"
            : "notification \(id.source).environment"
        return environmentFailure(id.environment, what: what)
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
