import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// How an API client talks to Apple: timeout, retries, base URLs (e.g. a local test server), the Sandbox fallback
/// of lookups, and the client-side rate limit.
public struct AppStoreServerAPIConfiguration: Hashable, Sendable {
    /// The client's timeout (Apple's libraries use 30 s): a deadline for the whole call, from the rate-limit wait and
    /// the external signer to the last byte of the last attempt (`AppStoreServerAPICall`); each exchange is given the
    /// time left.
    public var timeoutMilliseconds: UInt32
    /// Retries of Apple's retryable answers; none by default.
    public var retryPolicy: APIRetryPolicy
    /// Replaces the environment's base URLs when set (Advanced Commerce endpoints included).
    public var baseURL: String?
    /// Production clients: a lookup (`AppStoreServerAPIEndpoint.hasSandboxFallback`: transaction info, history,
    /// statuses, refund history, app transaction info) that Production answers with transactionIdNotFound (4040010)
    /// is asked again in Sandbox — Apple's advice, since App Review buys in Sandbox. `answer(_:)` says which
    /// environment answered. Off by default.
    public var sandboxFallback: Bool
    /// The Sandbox base URL for the fallback (default: Apple's Sandbox), e.g. a second test server.
    public var sandboxBaseURL: String?
    /// Client-side rate limiting with Apple's published per-endpoint limits; nil (the default) sends at once.
    public var rateLimit: APIRateLimit?

    /// A configuration; by default a 30 s timeout, Apple's base URLs and every option off.
    public init(timeoutMilliseconds: UInt32 = AppStoreServerAPIRequestBuilder.defaultTimeoutMilliseconds,
                retryPolicy: APIRetryPolicy = .none, baseURL: String? = nil, sandboxFallback: Bool = false,
                sandboxBaseURL: String? = nil, rateLimit: APIRateLimit? = nil) {
        self.timeoutMilliseconds = timeoutMilliseconds
        self.retryPolicy = retryPolicy
        self.baseURL = baseURL
        self.sandboxFallback = sandboxFallback
        self.sandboxBaseURL = sandboxBaseURL
        self.rateLimit = rateLimit
    }
}

/// A response model of an endpoint (generated conformances): what `AppStoreServerAPIClient.answer(_:as:)` decodes.
public protocol AppStoreServerAPIResponse: Sendable {}

/// A 2xx answer and the environment that gave it (Sandbox when a Production lookup fell back).
public struct APIAnswer: Sendable {
    /// The answer as received.
    public let response: HTTPResponse
    /// The environment that answered.
    public let environment: AppStoreEnvironment
}

/// Sends built requests through a transport, retrying per the policy, falling back to Sandbox and limiting the
/// rate when configured. Shared by the async client and the C ABI.
public struct AppStoreServerAPICaller: Sendable {
    /// Builds the requests for the client's environment.
    public let builder: AppStoreServerAPIRequestBuilder
    /// Retries of Apple's retryable answers.
    public let retryPolicy: APIRetryPolicy
    /// The Sandbox builder of a Production client with the Sandbox fallback; nil otherwise.
    public let fallbackBuilder: AppStoreServerAPIRequestBuilder?
    /// The client-side rate limiter; nil when there is none.
    public let rateLimiter: APIRateLimiter?

    /// A caller over the builders, retry policy and rate limiter given.
    public init(builder: AppStoreServerAPIRequestBuilder, retryPolicy: APIRetryPolicy,
                fallbackBuilder: AppStoreServerAPIRequestBuilder? = nil, rateLimiter: APIRateLimiter? = nil) {
        self.builder = builder
        self.retryPolicy = retryPolicy
        self.fallbackBuilder = fallbackBuilder
        self.rateLimiter = rateLimiter
    }

    /// The request builders and limiter a configuration asks for.
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                configuration: AppStoreServerAPIConfiguration) throws(AppStoreServerAPIError) {
        let builder = try AppStoreServerAPIRequestBuilder(signingKey: signingKey, keyId: keyId, issuerId: issuerId,
                                                          bundleId: bundleId, environment: environment,
                                                          baseURL: configuration.baseURL,
                                                          timeoutMilliseconds: configuration.timeoutMilliseconds)
        var fallback: AppStoreServerAPIRequestBuilder?
        if configuration.sandboxFallback {
            guard environment == .production else {
                throw .configuration(.invalidArgument, "the Sandbox fallback is for Production clients (this one is "
                                     + "\(environment.rawValue))")
            }
            fallback = try AppStoreServerAPIRequestBuilder(signingKey: signingKey, keyId: keyId, issuerId: issuerId,
                                                           bundleId: bundleId, environment: .sandbox,
                                                           baseURL: configuration.sandboxBaseURL,
                                                           timeoutMilliseconds: configuration.timeoutMilliseconds)
        } else if configuration.sandboxBaseURL != nil {
            throw .configuration(.invalidArgument, "sandboxBaseURL is used only by the Sandbox fallback, which is off")
        }
        self.init(builder: builder, retryPolicy: configuration.retryPolicy, fallbackBuilder: fallback,
                  rateLimiter: try configuration.rateLimit.map { (l) throws(AppStoreServerAPIError) in try APIRateLimiter(l) })
    }

    /// Whether a failed Production call is asked again in Sandbox: the fallback is on, the endpoint is a lookup, and
    /// Production answered transactionIdNotFound (4040010), or HTTP 401: Production refuses every call about an app
    /// that has never been released there, which is what App Review and TestFlight purchases of a new app meet.
    public func fallsBack(_ endpoint: AppStoreServerAPIEndpoint, after error: AppStoreServerAPIError) -> Bool {
        guard fallbackBuilder != nil, endpoint.hasSandboxFallback else { return false }
        return (error.kind == .apiError && error.rawApiError == APIError.transactionIdNotFound.rawValue)
            || ((error.kind == .apiError || error.kind == .httpError) && error.httpStatusCode == 401)
    }

    /// Blocking: sends the call (a fresh token per attempt), retrying and falling back as configured; the 2xx answer.
    public func send(_ request: AppStoreServerAPIRequest, transport: any BlockingHTTPTransport) throws(AppStoreServerAPIError) -> HTTPResponse {
        try answer(request, transport: transport).response
    }

    /// As `send(_:transport:)`, with the environment that answered. `environment: .sandbox` sends a fallback
    /// client's request to Sandbox directly.
    public func answer(_ request: AppStoreServerAPIRequest, transport: any BlockingHTTPTransport,
                       environment: AppStoreEnvironment? = nil) throws(AppStoreServerAPIError) -> APIAnswer {
        try drive(AppStoreServerAPICall(caller: self, request: request, environment: environment, checksBody: false),
                  transport: transport)
    }

    /// The blocking host loop of a call: sends, sleeps, and returns at the next `done` (call `drive` again for the
    /// following page).
    public func drive(_ call: AppStoreServerAPICall, transport: any BlockingHTTPTransport) throws(AppStoreServerAPIError) -> APIAnswer {
        while true {
            switch try call.next() {
            case .send(let http):
                do throws(TransportError) { call.receive(try transport.send(http)) } catch { call.receive(failure: error) }
            case .wait(let ms): Self.sleepBlocking(milliseconds: ms)
            case .done(let answer): return answer
            }
        }
    }

    /// Async: as `send(_:transport:)` with an async transport; waits with `Task.sleep` (cancellation ends the wait
    /// and throws the last error).
    public func send(_ request: AppStoreServerAPIRequest, transport: any HTTPTransport) async throws(AppStoreServerAPIError) -> HTTPResponse {
        try await answer(request, transport: transport).response
    }

    /// As `send(_:transport:)` (async), with the environment that answered; `environment` as above.
    public func answer(_ request: AppStoreServerAPIRequest, transport: any HTTPTransport,
                       environment: AppStoreEnvironment? = nil) async throws(AppStoreServerAPIError) -> APIAnswer {
        try await drive(AppStoreServerAPICall(caller: self, request: request, environment: environment, checksBody: false),
                        transport: transport)
    }

    /// The async host loop of a call, as the blocking one.
    public func drive(_ call: AppStoreServerAPICall, transport: any HTTPTransport) async throws(AppStoreServerAPIError) -> APIAnswer {
        while true {
            switch try call.next() {
            case .send(let http):
                do throws(TransportError) { call.receive(try await transport.send(http)) } catch { call.receive(failure: error) }
            case .wait(let ms):
                do { try await Task.sleep(nanoseconds: ms * 1_000_000) } catch {
                    throw call.lastError ?? AppStoreServerAPIError(kind: .transport(.failed), endpoint: call.request.endpoint,
                                                                   message: "\(call.request.endpoint.name): cancelled while waiting for the rate limit")
                }
            case .done(let answer): return answer
            }
        }
    }

    /// The Sandbox error of a lookup that neither environment answered, saying what Production said.
    static func neither(production: AppStoreServerAPIError, sandbox: AppStoreServerAPIError) -> AppStoreServerAPIError {
        let first = production.httpStatusCode == 401 && production.rawApiError != APIError.transactionIdNotFound.rawValue
            ? "Production answered HTTP 401 (an app never released there); then Sandbox: "
            : "Production answered transactionIdNotFound (4040010); then Sandbox: "
        return AppStoreServerAPIError(kind: sandbox.kind, endpoint: sandbox.endpoint, message: first + sandbox.message,
                                      httpStatusCode: sandbox.httpStatusCode, rawApiError: sandbox.rawApiError,
                                      errorMessage: sandbox.errorMessage, retryAfter: sandbox.retryAfter,
                                      receivedAtMilliseconds: sandbox.retryAfterSeconds.map { _ in Timestamp.nowMilliseconds() },
                                      headers: sandbox.headers)
    }

    static func sleepBlocking(milliseconds: UInt64) {
        var ts = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        var rest = timespec()
        while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
    }
}

/// The App Store Server API client (Apple's `AppStoreServerAPIClient` method names), async over a pluggable
/// transport. Failures throw `AppStoreServerAPIError` (Apple's Swift library returns `APIResult` instead).
/// Immutable and thread-safe; make one per key and environment and share it.
///
/// The default transport (AsyncHTTPClient) is in the separate product `AppStoreServerHTTP`, which also adds an
/// initializer without a transport argument.
public final class AppStoreServerAPIClient: Sendable {
    /// Builds each call's requests and judges the answers (retries, Sandbox fallback, rate limit).
    public let caller: AppStoreServerAPICaller
    /// The transport requests go through.
    public let transport: any HTTPTransport

    /// A client for `bundleId` in `environment`, signing its bearer tokens with `signingKey` (App Store Connect
    /// key `keyId` of issuer `issuerId`) and sending through `transport`. Throws for the Xcode environment and for a
    /// configuration it cannot use.
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                transport: any HTTPTransport, configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        self.caller = try AppStoreServerAPICaller(signingKey: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId,
                                                  environment: environment, configuration: configuration)
        self.transport = transport
    }

    /// Apple's initializer shape: the `.p8` PEM text (parsed here; prefer sharing one `SigningKey`).
    public convenience init(signingKey: String, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                            transport: any HTTPTransport, configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        let key: SigningKey
        do throws(SigningKeyError) { key = try SigningKey(pem: signingKey) } catch {
            throw .configuration(.invalidArgument, "signing key: \(error.message)")
        }
        try self.init(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId, environment: environment,
                      transport: transport, configuration: configuration)
    }

    /// Sends any endpoint call and returns the 2xx answer (retrying per the policy).
    public func send(_ request: AppStoreServerAPIRequest) async throws(AppStoreServerAPIError) -> HTTPResponse {
        try await caller.send(request, transport: transport)
    }

    /// Sends any endpoint call and returns the 2xx answer with the environment that gave it (Sandbox when a
    /// Production lookup fell back, see `AppStoreServerAPIConfiguration.sandboxFallback`).
    public func answer(_ request: AppStoreServerAPIRequest) async throws(AppStoreServerAPIError) -> APIAnswer {
        try await caller.answer(request, transport: transport)
    }

    /// A call decoded into its response model, with the environment that answered:
    /// `let (info, env) = try await client.answer(.getTransactionInfo(transactionId: id), as: TransactionInfoResponse.self)`.
    public func answer<T: AppStoreServerAPIResponse>(_ request: AppStoreServerAPIRequest, as type: T.Type) async throws(AppStoreServerAPIError) -> (value: T, environment: AppStoreEnvironment) {
        let a = try await answer(request)
        guard let model = T.self as? any JSONDecodable.Type else {
            throw .argument("\(T.self) has no JSON decoding", request.endpoint)
        }
        func decode<D: JSONDecodable>(_ d: D.Type) throws(AppStoreServerAPIError) -> Any {
            try AppStoreServerAPIResponseDecoder.decodeBody(D.self, endpoint: request.endpoint, response: a.response)
        }
        guard let value = try decode(model) as? T else { throw .argument("\(T.self) decoded as another type", request.endpoint) }
        return (value, a.environment)
    }

    func call<T: JSONDecodable>(_ request: AppStoreServerAPIRequest, _ type: T.Type) async throws(AppStoreServerAPIError) -> T {
        let response = try await send(request)
        return try AppStoreServerAPIResponseDecoder.decodeBody(T.self, endpoint: request.endpoint, response: response)
    }

    func callVoid(_ request: AppStoreServerAPIRequest) async throws(AppStoreServerAPIError) {
        _ = try await send(request)
    }

    // The endpoint methods (Apple's names) are generated from spec/endpoints.json: Generated/ClientMethods.swift; the
    // hand-written ones are in APIClient+History.swift.
}
