// Built only with the package trait HTTP (see Package.swift): without it this module is empty and
// AsyncHTTPClient is neither resolved nor built.
#if HTTP
import AppStoreServer
import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// The HTTP client the default transports use: AsyncHTTPClient on its shared event loops, configured never to
/// follow a redirect (Apple's API and OCSP responders do not redirect; following one would hand the bearer token
/// or a POST body to whatever host a 3xx names — the 3xx reaches the library, which fails the call naming it) and
/// never to decompress (a gzip bomb cannot grow past the body limit). Created once, never shut down.
public enum AppStoreHTTPClient {
    public static let shared = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled))
}

/// The default HTTP transport of the Swift API client: AsyncHTTPClient (`AppStoreHTTPClient.shared` unless you pass
/// your own client, e.g. one configured with a proxy: then configure it with `redirectConfiguration: .disallow`
/// too). The timeout of each request (`HTTPRequest.timeoutMilliseconds`) bounds the whole exchange, body included;
/// a body larger than the request's limit (`HTTPRequest.maxResponseBytes`) or `maxResponseBytes`, whichever is
/// smaller, fails the exchange as soon as it passes it. The client is never shut down by this type: the shared client
/// needs no shutdown, and a client you pass stays yours to shut down.
public struct AsyncHTTPClientTransport: HTTPTransport {
    public let client: HTTPClient
    /// Larger response bodies fail the exchange (the request's own limit applies too).
    public let maxResponseBytes: Int

    public init(client: HTTPClient = AppStoreHTTPClient.shared, maxResponseBytes: Int = HTTPLimits.apiResponseBytes) {
        self.client = client
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: AppStoreServer.HTTPRequest) async throws(TransportError) -> AppStoreServer.HTTPResponse {
        let timeout = TimeAmount.milliseconds(Int64(request.timeoutMilliseconds))
        let what = "\(request.method) \(request.url)"
        do {
            return try await withThrowingTaskGroup(of: AppStoreServer.HTTPResponse.self) { group in
                group.addTask { try await exchange(request, timeout: timeout) }
                group.addTask {
                    try await Task.sleep(nanoseconds: UInt64(request.timeoutMilliseconds) * 1_000_000)
                    throw TransportError(.timeout, "\(what) timed out after \(request.timeoutMilliseconds) ms")
                }
                guard let first = try await group.next() else {
                    throw TransportError(.failed, "\(what): no result")
                }
                group.cancelAll()
                return first
            }
        } catch let e as TransportError {
            throw e
        } catch {
            throw Self.map(error, what, request.timeoutMilliseconds)
        }
    }

    private func exchange(_ request: AppStoreServer.HTTPRequest, timeout: TimeAmount) async throws -> AppStoreServer.HTTPResponse {
        var r = HTTPClientRequest(url: request.url)
        r.method = HTTPMethod(rawValue: request.method)
        for h in request.headers { r.headers.add(name: h.name, value: h.value) }
        if !request.body.isEmpty { r.body = .bytes(request.body) }
        let response = try await client.execute(r, timeout: timeout)
        let body = try await response.body.collect(upTo: min(maxResponseBytes, request.maxResponseBytes))
        return AppStoreServer.HTTPResponse(status: Int(response.status.code),
                                           headers: response.headers.map { HTTPHeader($0.name, $0.value) },
                                           body: Array(buffer: body))
    }

    static func map(_ error: any Error, _ what: String, _ timeoutMs: UInt32) -> TransportError {
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .tlsHandshakeTimeout,
                 .getConnectionFromPoolTimeout, .httpProxyHandshakeTimeout, .socksHandshakeTimeout:
                return TransportError(.timeout, "\(what) timed out after \(timeoutMs) ms (\(e))")
            default:
                break
            }
        }
        if error is CancellationError { return TransportError(.failed, "\(what): cancelled") }
        let text = String(describing: error)
        let lowered = text.lowercased()
        if lowered.contains("refused") || lowered.contains("connect") || lowered.contains("resolve") || lowered.contains("unreachable") {
            return TransportError(.unreachable, "\(what): \(text)")
        }
        return TransportError(.failed, "\(what): \(text)")
    }
}

extension AppStoreServerAPIClient {
    /// Apple's initializer shape: the API client over the default transport (`AsyncHTTPClientTransport`).
    public convenience init(signingKey: String, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                            configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        try self.init(signingKey: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId, environment: environment,
                      transport: AsyncHTTPClientTransport(), configuration: configuration)
    }

    /// The API client over the default transport with a parsed key.
    public convenience init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment,
                            configuration: AppStoreServerAPIConfiguration = .init()) throws(AppStoreServerAPIError) {
        try self.init(signingKey: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId, environment: environment,
                      transport: AsyncHTTPClientTransport(), configuration: configuration)
    }
}
#endif
