import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// How an API client talks to Apple: timeout, retries, and an optional base URL (e.g. a local test server).
public struct AppStoreServerAPIConfiguration: Hashable, Sendable {
    /// The whole exchange of one attempt; Apple's libraries use 30 s.
    public var timeoutMilliseconds: UInt32
    public var retryPolicy: APIRetryPolicy
    /// Replaces the environment's base URL when set.
    public var baseURL: String?

    public init(timeoutMilliseconds: UInt32 = AppStoreServerAPIRequestBuilder.defaultTimeoutMilliseconds,
                retryPolicy: APIRetryPolicy = .none, baseURL: String? = nil) {
        self.timeoutMilliseconds = timeoutMilliseconds
        self.retryPolicy = retryPolicy
        self.baseURL = baseURL
    }
}

/// Sends built requests through a transport, retrying per the policy. Shared by the async client and the C ABI.
public struct AppStoreServerAPICaller: Sendable {
    public let builder: AppStoreServerAPIRequestBuilder
    public let retryPolicy: APIRetryPolicy

    public init(builder: AppStoreServerAPIRequestBuilder, retryPolicy: APIRetryPolicy) {
        self.builder = builder
        self.retryPolicy = retryPolicy
    }

    /// The outcome of one attempt: a success answer, or the error to report or retry.
    private func classify(_ request: AppStoreServerAPIRequest, _ result: Result<HTTPResponse, TransportError>) -> Result<HTTPResponse, AppStoreServerAPIError> {
        switch result {
        case .failure(let t):
            return .failure(AppStoreServerAPIError(kind: .transport(t.kind), endpoint: request.endpoint,
                                                   message: "\(request.endpoint.name): \(t.description)"))
        case .success(let response):
            if (200...299).contains(response.status) { return .success(response) }
            return .failure(AppStoreServerAPIResponseDecoder.error(endpoint: request.endpoint, response: response))
        }
    }

    /// Blocking: builds (with a fresh token per attempt), sends, retries; returns the 2xx answer.
    public func send(_ request: AppStoreServerAPIRequest, transport: any BlockingHTTPTransport) throws(AppStoreServerAPIError) -> HTTPResponse {
        var retry = 0
        while true {
            let http = try builder.build(request)
            let result: Result<HTTPResponse, TransportError>
            do throws(TransportError) { result = .success(try transport.send(http)) } catch { result = .failure(error) }
            switch classify(request, result) {
            case .success(let r): return r
            case .failure(let e):
                retry += 1
                guard let delay = retryPolicy.delayMilliseconds(beforeRetry: retry, after: e) else { throw e }
                Self.sleepBlocking(milliseconds: delay)
            }
        }
    }

    /// Async: as `send(_:transport:)` with an async transport; waits with `Task.sleep` (cancellation ends the wait
    /// and returns the last error).
    public func send(_ request: AppStoreServerAPIRequest, transport: any HTTPTransport) async throws(AppStoreServerAPIError) -> HTTPResponse {
        var retry = 0
        while true {
            let http = try builder.build(request)
            let result: Result<HTTPResponse, TransportError>
            do throws(TransportError) { result = .success(try await transport.send(http)) } catch { result = .failure(error) }
            switch classify(request, result) {
            case .success(let r): return r
            case .failure(let e):
                retry += 1
                guard let delay = retryPolicy.delayMilliseconds(beforeRetry: retry, after: e) else { throw e }
                do { try await Task.sleep(nanoseconds: delay * 1_000_000) } catch { throw e }
            }
        }
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
    public let caller: AppStoreServerAPICaller
    public let transport: any HTTPTransport

    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                transport: any HTTPTransport, configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        let builder = try AppStoreServerAPIRequestBuilder(signingKey: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId,
                                                          environment: environment, baseURL: configuration.baseURL,
                                                          timeoutMilliseconds: configuration.timeoutMilliseconds)
        self.caller = AppStoreServerAPICaller(builder: builder, retryPolicy: configuration.retryPolicy)
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
