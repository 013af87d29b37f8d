import FoundationEssentials

/// Request models whose limits are checked before a request is built (generated `validate()`; the models without
/// limits conform with a no-op).
public protocol APIRequestBody: Encodable, Sendable {
    func validate() throws(ModelValidationError)
}

extension MassExtendRenewalDateRequest: APIRequestBody {}
extension ExtendRenewalDateRequest: APIRequestBody {}
extension ConsumptionRequest: APIRequestBody {}
extension ConsumptionRequestV1: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension UpdateAppAccountTokenRequest: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension NotificationHistoryRequest: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension UploadMessageRequestBody: APIRequestBody {}
extension DefaultConfigurationRequest: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension RealtimeUrlRequest: APIRequestBody {}
extension PerformanceTestRequest: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension AdvancedCommerceSubscriptionCancelRequest: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension AdvancedCommerceSubscriptionChangeMetadataRequest: APIRequestBody {}
extension AdvancedCommerceSubscriptionPriceChangeRequest: APIRequestBody {}
extension AdvancedCommerceSubscriptionMigrateRequest: APIRequestBody {}
extension AdvancedCommerceSubscriptionRevokeRequest: APIRequestBody { public func validate() throws(ModelValidationError) {} }
extension AdvancedCommerceRequestRefundRequest: APIRequestBody {}

/// Base URLs of the App Store Server API (Apple's libraries, 2026).
public enum AppStoreServerAPIBaseURL {
    public static let production = "https://api.storekit.apple.com"
    public static let sandbox = "https://api.storekit-sandbox.apple.com"
    /// Apple's libraries use this placeholder for unit tests; point `baseURL` at a local server instead.
    public static let localTesting = "https://local-testing-base-url"

    /// The base URL of an environment; Xcode (StoreKit testing in Xcode) has no server and is refused.
    public static func forEnvironment(_ environment: AppStoreEnvironment) throws(AppStoreServerAPIError) -> String {
        switch environment {
        case .production: return production
        case .sandbox: return sandbox
        case .localTesting: return localTesting
        case .xcode:
            throw .configuration("the Xcode environment has no App Store Server API: StoreKit testing in Xcode is local to "
                                 + "Xcode; use Sandbox (or LocalTesting with a base URL of your own test server)")
        default:
            throw .configuration("unknown environment \"\(environment.rawValue)\" for the App Store Server API")
        }
    }
}

/// Turns endpoint calls into HTTP requests: method, full URL (path segments percent-encoded, query rules of
/// Apple's libraries), headers (a fresh ES256 bearer token per request, User-Agent, Accept, Content-Type only with a
/// body) and body bytes. Immutable and thread-safe; sans-I/O.
public struct AppStoreServerAPIRequestBuilder: Sendable {
    public let signingKey: SigningKey
    public let keyId: String
    public let issuerId: String
    public let bundleId: String
    public let environment: AppStoreEnvironment
    /// Without a trailing slash.
    public let baseURL: String
    public let timeoutMilliseconds: UInt32

    public static let userAgent = "appstoreserver/\(AppStoreServerVersion.string)"
    public static let defaultTimeoutMilliseconds: UInt32 = 30_000

    /// - Parameter baseURL: overrides the environment's base URL (`http://` or `https://`, e.g. a test server).
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String,
                environment: AppStoreEnvironment, baseURL: String? = nil,
                timeoutMilliseconds: UInt32 = defaultTimeoutMilliseconds) throws(AppStoreServerAPIError) {
        for (value, name) in [(keyId, "keyId"), (issuerId, "issuerId"), (bundleId, "bundleId")] where value.isEmpty {
            throw .argument("\(name) must not be empty")
        }
        let base = try AppStoreServerAPIBaseURL.forEnvironment(environment)
        var chosen = baseURL ?? base
        guard chosen.hasPrefix("https://") || chosen.hasPrefix("http://") else {
            throw .configuration("base URL must start with https:// or http://, got \"\(chosen)\"")
        }
        while chosen.hasSuffix("/") { chosen.removeLast() }
        guard !chosen.contains("?"), !chosen.contains("#"), !chosen.contains(where: { $0 == " " || $0.isNewline }) else {
            throw .configuration("base URL must be scheme://host[:port][/path] without query, fragment or spaces")
        }
        guard timeoutMilliseconds > 0 else { throw .configuration("the timeout must be at least 1 ms") }
        self.signingKey = signingKey
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.environment = environment
        self.baseURL = chosen
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Builds the request, validating request models first.
    public func build(_ request: AppStoreServerAPIRequest, issuedAt: Date = Date()) throws(AppStoreServerAPIError) -> HTTPRequest {
        let endpoint = request.endpoint
        var path: [String] = []  // percent-encoded segments after the base URL
        var query: [(String, String)] = []
        var body: [UInt8]? = nil
        var contentType = "application/json"
        func segments(_ fixed: String) { path += fixed.split(separator: "/").map(String.init) }
        func id(_ s: String, _ name: String) throws(AppStoreServerAPIError) -> String {
            guard !s.isEmpty else { throw .argument("\(name) must not be empty", endpoint) }
            // "." and ".." survive percent-encoding (unreserved) but would move the request to another path.
            guard s != ".", s != ".." else { throw .argument("\(name) must not be \"\(s)\"", endpoint) }
            return PercentEncoding.encode(s)
        }
        func uuid(_ u: UUID) -> String { u.uuidString.lowercased() }
        func json<T: APIRequestBody>(_ model: T, _ name: String) throws(AppStoreServerAPIError) {
            do throws(ModelValidationError) { try model.validate() } catch {
                throw AppStoreServerAPIError(kind: .invalidRequest(error), endpoint: endpoint,
                                             message: "\(endpoint.name): invalid \(name): \(error)")
            }
            body = try APIJSON.encode(model, endpoint: endpoint, what: name)
        }

        switch request {
        case .getTransactionInfo(let tid):
            segments("inApps/v1/transactions"); path.append(try id(tid, "transactionId"))
        case .getTransactionHistory(let tid, let revision, let filters, let version):
            segments("inApps/\(version.rawValue)/history"); path.append(try id(tid, "anyTransactionId"))
            if let revision { query.append(("revision", revision)) }
            if let d = filters.startDate { query.append(("startDate", String(try APIJSON.queryMilliseconds(d, "startDate", endpoint)))) }
            if let d = filters.endDate { query.append(("endDate", String(try APIJSON.queryMilliseconds(d, "endDate", endpoint)))) }
            for p in filters.productIds ?? [] { query.append(("productId", p)) }
            for t in filters.productTypes ?? [] { query.append(("productType", t.rawValue)) }
            if let s = filters.sort { query.append(("sort", s.rawValue)) }
            for g in filters.subscriptionGroupIdentifiers ?? [] { query.append(("subscriptionGroupIdentifier", g)) }
            if let o = filters.inAppOwnershipType { query.append(("inAppOwnershipType", o.rawValue)) }
            if let r = filters.revoked { query.append(("revoked", r ? "true" : "false")) }
        case .getAllSubscriptionStatuses(let tid, let status):
            segments("inApps/v1/subscriptions"); path.append(try id(tid, "anyTransactionId"))
            for s in status ?? [] { query.append(("status", String(s.rawValue))) }
        case .getRefundHistory(let tid, let revision):
            segments("inApps/v2/refund/lookup"); path.append(try id(tid, "anyTransactionId"))
            if let revision { query.append(("revision", revision)) }
        case .lookUpOrderId(let orderId):
            segments("inApps/v1/lookup"); path.append(try id(orderId, "orderId"))
        case .getAppTransactionInfo(let tid):
            segments("inApps/v1/transactions/appTransactions"); path.append(try id(tid, "anyTransactionId"))
        case .finishTransaction(let tid):
            segments("inApps/v1/transactions"); path.append(try id(tid, "transactionId")); path.append("finish")
        case .sendConsumptionData(let tid, var r):
            segments("inApps/v1/transactions/consumption"); path.append(try id(tid, "transactionId"))
            // V1 keeps the token as text (always sent, "" when none); a non-empty one must be a UUID, lowercase.
            if let token = r.appAccountToken, !token.isEmpty {
                guard let u = UUID(uuidString: token) else {
                    throw .argument("consumptionRequest.appAccountToken must be a UUID or empty, got \"\(token)\"", endpoint)
                }
                r.appAccountToken = u.uuidString.lowercased()
            }
            try json(r, "consumptionRequest")
        case .sendConsumptionInformation(let tid, let r):
            segments("inApps/v2/transactions/consumption"); path.append(try id(tid, "transactionId"))
            try json(r, "consumptionRequest")
        case .setAppAccountToken(let otid, let r):
            segments("inApps/v1/transactions"); path.append(try id(otid, "originalTransactionId")); path.append("appAccountToken")
            try json(r, "updateAppAccountTokenRequest")
        case .extendSubscriptionRenewalDate(let otid, let r):
            segments("inApps/v1/subscriptions/extend"); path.append(try id(otid, "originalTransactionId"))
            try json(r, "extendRenewalDateRequest")
        case .extendRenewalDateForAllActiveSubscribers(let r):
            segments("inApps/v1/subscriptions/extend/mass")
            try json(r, "massExtendRenewalDateRequest")
        case .getStatusOfSubscriptionRenewalDateExtensions(let requestIdentifier, let productId):
            segments("inApps/v1/subscriptions/extend/mass")
            path.append(try id(productId, "productId")); path.append(try id(requestIdentifier, "requestIdentifier"))
        case .requestTestNotification:
            segments("inApps/v1/notifications/test")
        case .getTestNotificationStatus(let token):
            segments("inApps/v1/notifications/test"); path.append(try id(token, "testNotificationToken"))
        case .getNotificationHistory(let token, let r):
            segments("inApps/v1/notifications/history")
            if let token { query.append(("paginationToken", token)) }
            try json(r, "notificationHistoryRequest")
        case .uploadImage(let imageId, let image, let size):
            segments("inApps/v1/messaging/image"); path.append(uuid(imageId))
            if let size { query.append(("imageSize", size.rawValue)) }
            guard !image.isEmpty else { throw .argument("image must not be empty", endpoint) }
            body = image
            contentType = "image/png"
        case .deleteImage(let imageId):
            segments("inApps/v1/messaging/image"); path.append(uuid(imageId))
        case .getImageList:
            segments("inApps/v1/messaging/image/list")
        case .uploadMessage(let messageId, let r):
            segments("inApps/v1/messaging/message"); path.append(uuid(messageId))
            try json(r, "uploadMessageRequestBody")
        case .deleteMessage(let messageId):
            segments("inApps/v1/messaging/message"); path.append(uuid(messageId))
        case .getMessageList:
            segments("inApps/v1/messaging/message/list")
        case .configureDefaultMessage(let productId, let locale, let r):
            segments("inApps/v1/messaging/default"); path.append(try id(productId, "productId")); path.append(try id(locale, "locale"))
            try json(r, "defaultConfigurationRequest")
        case .deleteDefaultMessage(let productId, let locale), .getDefaultMessage(let productId, let locale):
            segments("inApps/v1/messaging/default"); path.append(try id(productId, "productId")); path.append(try id(locale, "locale"))
        case .configureRealtimeURL(let r):
            segments("inApps/v1/messaging/realtime/url")
            try json(r, "realtimeUrlRequest")
        case .deleteRealtimeURL, .getRealtimeURL:
            segments("inApps/v1/messaging/realtime/url")
        case .initiatePerformanceTest(let r):
            segments("inApps/v1/messaging/performanceTest")
            try json(r, "performanceTestRequest")
        case .getPerformanceTestResults(let requestId):
            segments("inApps/v1/messaging/performanceTest/result"); path.append(try id(requestId, "requestId"))
        case .cancelSubscription(let tid, let r):
            segments("advancedCommerce/v1/subscription/cancel"); path.append(try id(tid, "transactionId")); try json(r, "request")
        case .changeSubscriptionMetadata(let tid, let r):
            segments("advancedCommerce/v1/subscription/changeMetadata"); path.append(try id(tid, "transactionId")); try json(r, "request")
        case .changeSubscriptionPrice(let tid, let r):
            segments("advancedCommerce/v1/subscription/changePrice"); path.append(try id(tid, "transactionId")); try json(r, "request")
        case .migrateSubscription(let tid, let r):
            segments("advancedCommerce/v1/subscription/migrate"); path.append(try id(tid, "transactionId")); try json(r, "request")
        case .revokeSubscription(let tid, let r):
            segments("advancedCommerce/v1/subscription/revoke"); path.append(try id(tid, "transactionId")); try json(r, "request")
        case .requestTransactionRefund(let tid, let r):
            segments("advancedCommerce/v1/transaction/requestRefund"); path.append(try id(tid, "transactionId")); try json(r, "request")
        }

        var url = baseURL + "/" + path.joined(separator: "/")
        if !query.isEmpty {
            url += "?" + query.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
        }
        let token: String
        do throws(SigningError) {
            token = try AppStoreServerAPIToken.create(signingKey: signingKey, keyId: keyId, issuerId: issuerId,
                                                      bundleId: bundleId, issuedAt: issuedAt)
        } catch {
            throw AppStoreServerAPIError(kind: .signing, endpoint: endpoint, message: "bearer token: \(error.message)")
        }
        var headers = [
            HTTPHeader("Authorization", "Bearer \(token)"),
            HTTPHeader("User-Agent", Self.userAgent),
            HTTPHeader("Accept", "application/json"),
        ]
        if body != nil { headers.append(HTTPHeader("Content-Type", contentType)) }
        return HTTPRequest(method: endpoint.method, url: url, headers: headers, body: body ?? [],
                           timeoutMilliseconds: timeoutMilliseconds)
    }
}

/// RFC 3986 percent-encoding: everything but the unreserved characters (ALPHA DIGIT - . _ ~) is encoded, so a
/// value can never change the path structure or the query ("/", "?", "#", "&", "=", "+", "%" are all encoded).
public enum PercentEncoding {
    public static func encode(_ s: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// JSON coding of the API: dates are integer milliseconds since 1970 (bodies truncate toward zero, query values
/// round to nearest, as Apple's libraries do); UUIDs are written lowercase by the generated encoders.
enum APIJSON {
    static let maxMilliseconds = 253_402_300_799_999.0  // 9999-12-31T23:59:59.999Z
    static func milliseconds(_ date: Date, rule: FloatingPointRoundingRule) -> Int64? {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(rule)
        guard ms.isFinite, abs(ms) <= maxMilliseconds else { return nil }
        return Int64(ms)
    }

    static func queryMilliseconds(_ date: Date, _ name: String, _ endpoint: AppStoreServerAPIEndpoint) throws(AppStoreServerAPIError) -> Int64 {
        guard let ms = milliseconds(date, rule: .toNearestOrAwayFromZero) else {
            throw .argument("\(name) is not a representable date", endpoint)
        }
        return ms
    }

    static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, encoder in
            guard let ms = milliseconds(date, rule: .towardZero) else {
                throw EncodingError.invalidValue(date, EncodingError.Context(codingPath: encoder.codingPath,
                                                                            debugDescription: "date out of range"))
            }
            var c = encoder.singleValueContainer()
            try c.encode(ms)
        }
        return e
    }

    static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .millisecondsSince1970
        return d
    }

    static func encode<T: Encodable>(_ value: T, endpoint: AppStoreServerAPIEndpoint, what: String) throws(AppStoreServerAPIError) -> [UInt8] {
        do {
            return [UInt8](try encoder().encode(value))
        } catch {
            throw .argument("\(endpoint.name): \(what) cannot be encoded as JSON: \(error)", endpoint)
        }
    }
}
