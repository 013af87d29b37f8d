import FoundationEssentials

/// Base URLs of the App Store Server API (Apple's libraries, 2026).
public enum AppStoreServerAPIBaseURL {
    /// Apple's Production base URL.
    public static let production = "https://api.storekit.apple.com"
    /// Apple's Sandbox base URL.
    public static let sandbox = "https://api.storekit-sandbox.apple.com"
    /// Apple's libraries use this placeholder for unit tests; point `baseURL` at a local server instead.
    public static let localTesting = "https://local-testing-base-url"
    /// The Advanced Commerce API endpoints: Apple's pages for all six show these hosts (2026), not the
    /// api.storekit.apple.com hosts the App Store Server API moved to on 2026-05-05 (its changelog; the old hosts
    /// stay supported). Sources: developer.apple.com/documentation/advancedcommerceapi, each endpoint's URL lines.
    public static let advancedCommerceProduction = "https://api.storekit.itunes.apple.com"
    /// The Advanced Commerce API's Sandbox host (see `advancedCommerceProduction`).
    public static let advancedCommerceSandbox = "https://api.storekit-sandbox.itunes.apple.com"

    /// The Advanced Commerce base URL of an environment (LocalTesting: the placeholder).
    public static func advancedCommerce(_ environment: AppStoreEnvironment) -> String {
        switch environment {
        case .production: advancedCommerceProduction
        case .sandbox: advancedCommerceSandbox
        default: localTesting
        }
    }

    /// The base URL of an environment; Xcode (StoreKit testing in Xcode) has no server and is refused.
    public static func forEnvironment(_ environment: AppStoreEnvironment) throws(AppStoreServerAPIError) -> String {
        switch environment {
        case .production: return production
        case .sandbox: return sandbox
        case .localTesting: return localTesting
        case .xcode:
            throw .configuration(.unsupportedEnvironment,
                                 "the Xcode environment has no App Store Server API: StoreKit testing in Xcode is local to "
                                 + "Xcode; use Sandbox (or LocalTesting with a base URL of your own test server)")
        default:
            throw .configuration(.unsupportedEnvironment,
                                 "unknown environment \(QuotedText.quote(environment.rawValue)) for the App Store Server API")
        }
    }
}

/// Builds the HTTP request of an endpoint call: URL (base + percent-encoded path + query), headers with a fresh
/// ES256 bearer token, JSON body. Sans-I/O and thread-safe.
public struct AppStoreServerAPIRequestBuilder: Sendable {
    /// The key bearer tokens are signed with.
    public let signingKey: SigningKey
    /// The key's identifier in App Store Connect (the tokens' `kid`).
    public let keyId: String
    /// The issuer identifier in App Store Connect (the tokens' `iss`).
    public let issuerId: String
    /// The app's bundle identifier (the tokens' `bid`).
    public let bundleId: String
    /// The environment requests are for.
    public let environment: AppStoreEnvironment
    /// Where App Store Server API requests go.
    public let baseURL: String
    /// Where Advanced Commerce API requests go: the environment's Advanced Commerce host, or `baseURL` when it was
    /// given explicitly.
    public let advancedCommerceBaseURL: String
    /// The time one attempt's whole exchange may take, in milliseconds.
    public let timeoutMilliseconds: UInt32

    /// The `User-Agent` of every request.
    public static let userAgent = "appstoreserver/\(AppStoreServerVersion.string)"
    /// 30 s, as Apple's libraries.
    public static let defaultTimeoutMilliseconds: UInt32 = 30_000

    /// A builder for the key, app and environment given.
    /// - Parameters:
    ///   - signingKey: the key bearer tokens are signed with.
    ///   - keyId: the key's identifier in App Store Connect.
    ///   - issuerId: the issuer identifier in App Store Connect.
    ///   - bundleId: the app's bundle identifier.
    ///   - environment: the environment requests are for (Xcode has no server and is refused).
    ///   - baseURL: overrides the environment's base URLs (`http://` or `https://`, e.g. a test server), for
    ///     Advanced Commerce endpoints too.
    ///   - timeoutMilliseconds: the client's timeout: one exchange's at most, and through `AppStoreServerAPICall` a
    ///     deadline for the whole call.
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String,
                environment: AppStoreEnvironment, baseURL: String? = nil,
                timeoutMilliseconds: UInt32 = defaultTimeoutMilliseconds) throws(AppStoreServerAPIError) {
        for (value, name) in [(keyId, "keyId"), (issuerId, "issuerId"), (bundleId, "bundleId")] where value.isEmpty {
            throw .argument("\(name) must not be empty")
        }
        let base = try AppStoreServerAPIBaseURL.forEnvironment(environment)
        var chosen = baseURL ?? base
        guard chosen.hasPrefix("https://") || chosen.hasPrefix("http://") else {
            throw .configuration(.invalidArgument, "base URL must start with https:// or http://, got \(QuotedText.quote(chosen))")
        }
        while chosen.hasSuffix("/") { chosen.removeLast() }
        guard !chosen.contains("?"), !chosen.contains("#"), !chosen.contains(where: { $0 == " " || $0.isNewline }) else {
            throw .configuration(.invalidArgument, "base URL must be scheme://host[:port][/path] without query, fragment or spaces")
        }
        guard timeoutMilliseconds > 0 else { throw .configuration(.invalidArgument, "the timeout must be at least 1 ms") }
        self.signingKey = signingKey
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.environment = environment
        self.baseURL = chosen
        self.advancedCommerceBaseURL = baseURL == nil ? AppStoreServerAPIBaseURL.advancedCommerce(environment) : chosen
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Builds the request, validating request models first.
    public func build(_ request: AppStoreServerAPIRequest, issuedAt: Date = Date()) throws(AppStoreServerAPIError) -> HTTPRequest {
        try build(request, issuedAt: issuedAt, signerTimeLeftMilliseconds: nil)
    }

    /// As above; `signerTimeLeftMilliseconds`: the call's time left, passed on to an external signer.
    func build(_ request: AppStoreServerAPIRequest, issuedAt: Date = Date(),
               signerTimeLeftMilliseconds: Int64?) throws(AppStoreServerAPIError) -> HTTPRequest {
        let parts = try request.wireParts()
        var url = (request.endpoint.isAdvancedCommerce ? advancedCommerceBaseURL : baseURL) + "/" + parts.path.joined(separator: "/")
        if !parts.query.isEmpty {
            url += "?" + parts.query.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
        }
        let token: String
        do throws(SigningError) {
            token = try AppStoreServerAPIToken.create(signingKey: signingKey, keyId: keyId, issuerId: issuerId,
                                                      bundleId: bundleId, issuedAt: issuedAt,
                                                      lifetime: AppStoreServerAPIToken.defaultLifetime,
                                                      timeLeftMilliseconds: signerTimeLeftMilliseconds)
        } catch {
            throw AppStoreServerAPIError(kind: error.kind == .signerFailed ? .signerFailed : .signing, endpoint: request.endpoint,
                                         message: "bearer token: \(error.message)")
        }
        var headers = [
            HTTPHeader("Authorization", "Bearer \(token)"),
            HTTPHeader("User-Agent", Self.userAgent),
            HTTPHeader("Accept", "application/json"),
        ]
        if parts.body != nil { headers.append(HTTPHeader("Content-Type", parts.contentType)) }
        return HTTPRequest(method: request.endpoint.method, url: url, headers: headers, body: parts.body ?? [],
                           timeoutMilliseconds: timeoutMilliseconds)
    }
}

/// The path, query and body of one request, filled by the generated `AppStoreServerAPIRequest.wireParts()`.
struct APIWireParts {
    let endpoint: AppStoreServerAPIEndpoint
    /// Percent-encoded path segments after the base URL.
    private(set) var path: [String] = []
    private(set) var query: [(String, String)] = []
    private(set) var body: [UInt8]?
    private(set) var contentType = "application/json"

    init(endpoint: AppStoreServerAPIEndpoint) { self.endpoint = endpoint }

    /// Fixed segments of the path template ("inApps/v1/transactions").
    mutating func literal(_ segments: String) { path += segments.split(separator: "/").map(String.init) }

    /// The most UTF-8 bytes one path or query value may have. Apple's identifiers and tokens are far shorter; a
    /// larger value is a mistake or an attack, refused before it is encoded or signed for.
    static let maximumValueBytes = 8192
    /// The most values a list parameter may repeat (productId=a&productId=b...).
    static let maximumListCount = 1000

    private func check(_ value: String, _ name: String) throws(AppStoreServerAPIError) {
        guard value.utf8.count <= Self.maximumValueBytes else {
            throw .argument("\(name) is \(value.utf8.count) bytes; at most \(Self.maximumValueBytes) are accepted", endpoint)
        }
        guard !value.utf8.contains(0) else { throw .argument("\(name) contains a NUL character", endpoint) }
    }

    mutating func path(_ value: String, _ name: String) throws(AppStoreServerAPIError) {
        guard !value.isEmpty else { throw .argument("\(name) must not be empty", endpoint) }
        try check(value, name)
        // "." and ".." survive percent-encoding (unreserved) but would move the request to another path.
        guard value != ".", value != ".." else { throw .argument("\(name) must not be \(QuotedText.quote(value))", endpoint) }
        path.append(PercentEncoding.encode(value))
    }

    mutating func path(_ value: UUID, _ name: String) throws(AppStoreServerAPIError) {
        path.append(value.uuidString.lowercased())
    }

    mutating func query<T: APIQueryValue>(_ name: String, _ value: T?) throws(AppStoreServerAPIError) {
        guard let value else { return }
        guard let text = value.queryText else { throw .argument("\(name) is not representable in a query (\(value))", endpoint) }
        try check(text, name)
        query.append((name, text))
    }

    /// A list is a repeated key (productId=a&productId=b).
    mutating func query<T: APIQueryValue>(_ name: String, _ values: [T]?) throws(AppStoreServerAPIError) {
        guard (values?.count ?? 0) <= Self.maximumListCount else {
            throw .argument("\(name) has \(values?.count ?? 0) values; at most \(Self.maximumListCount) are accepted", endpoint)
        }
        for value in values ?? [] { try query(name, value) }
    }

    /// A request model: its limits are checked, then it is written as JSON (UUIDs lowercase, dates in ms).
    mutating func jsonBody<T: APIRequestModel>(_ model: T, _ name: String) throws(AppStoreServerAPIError) {
        do throws(ModelValidationError) { try model.validate() } catch {
            throw AppStoreServerAPIError(kind: .invalidRequest(error), endpoint: endpoint,
                                         message: "\(endpoint.name): invalid \(name): \(error)")
        }
        do throws(JSONWriteError) { body = try model.jsonBytes() } catch {
            throw .argument("\(endpoint.name): \(name) cannot be written as JSON: \(error)", endpoint)
        }
    }

    mutating func bytesBody(_ bytes: [UInt8], contentType: String, _ name: String) throws(AppStoreServerAPIError) {
        guard !bytes.isEmpty else { throw .argument("\(name) must not be empty", endpoint) }
        body = bytes
        self.contentType = contentType
    }
}

/// A request body model (every model the spec sends as a body has the generated `validate()`).
protocol APIRequestModel: JSONEncodable {
    func validate() throws(ModelValidationError)
}

/// A query parameter's text, or nil when the value cannot be sent (a date outside years 0001-9999).
protocol APIQueryValue {
    var queryText: String? { get }
}

extension String: APIQueryValue { var queryText: String? { self } }
extension Bool: APIQueryValue { var queryText: String? { self ? "true" : "false" } }
extension Int32: APIQueryValue { var queryText: String? { String(self) } }
extension Int64: APIQueryValue { var queryText: String? { String(self) } }
extension UUID: APIQueryValue { var queryText: String? { uuidString.lowercased() } }
/// Query dates round to the nearest millisecond, as Apple's libraries do (bodies truncate).
extension Date: APIQueryValue { var queryText: String? { milliseconds(rounding: .toNearestOrAwayFromZero).map(String.init) } }
extension JSONRawValueEnum where RawValue: APIQueryValue {
    var queryText: String? { rawValue.queryText }
}

/// The hand-written parts of request building that the spec names (`requestHook` in spec/endpoints.json).
enum APIRequestHooks {
    /// Send Consumption Information V1 keeps the app account token as text, always sent ("" when none); a non-empty
    /// one must be a UUID and is sent lowercase.
    static func consumptionRequestV1(_ request: ConsumptionRequestV1,
                                     endpoint: AppStoreServerAPIEndpoint) throws(AppStoreServerAPIError) -> ConsumptionRequestV1 {
        var r = request
        if let token = r.appAccountToken, !token.isEmpty {
            guard let u = UUID(uuidString: token) else {
                throw .argument("consumptionRequest.appAccountToken must be a UUID or empty, got \(QuotedText.quote(token))", endpoint)
            }
            r.appAccountToken = u.uuidString.lowercased()
        }
        return r
    }
}

/// RFC 3986 percent-encoding: everything but the unreserved characters (ALPHA DIGIT - . _ ~) is encoded, so a
/// value can never change the path structure or the query ("/", "?", "#", "&", "=", "+", "%" are all encoded).
public enum PercentEncoding {
    /// `s` with every byte but the unreserved characters percent-encoded.
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
