// Built only with the package trait HTTP (see Package.swift): without it this module is empty and
// AsyncHTTPClient is neither resolved nor built.
#if HTTP
import AppStoreServer
import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOHTTP1

/// The default blocking transport: what the verifier's online (OCSP) checks use when this product is imported and
/// no transport is given. AsyncHTTPClient on its own event loops (`AppStoreHTTPClient.shared` unless you pass a client), the
/// calling thread waiting for the answer; the request's timeout bounds the whole exchange, and its body limit
/// (`HTTPRequest.maxResponseBytes`, or `maxResponseBytes` when smaller) the body. Redirects are not followed (see
/// `AppStoreHTTPClient`). Called on an event loop thread it fails at once instead of waiting for itself (verify from
/// another thread or task there).
public struct AsyncHTTPClientBlockingTransport: BlockingHTTPTransport {
    public let client: HTTPClient
    /// Larger response bodies fail the exchange (the request's own limit applies too: 1 MiB for OCSP).
    public let maxResponseBytes: Int

    public init(client: HTTPClient = AppStoreHTTPClient.shared, maxResponseBytes: Int = HTTPLimits.apiResponseBytes) {
        self.client = client
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: AppStoreServer.HTTPRequest) throws(TransportError) -> AppStoreServer.HTTPResponse {
        let what = "\(request.method) \(request.url)"
        guard !client.eventLoopGroup.makeIterator().contains(where: \.inEventLoop) else {
            throw TransportError(.failed, "\(what): called on an event loop thread, where waiting for the answer would "
                                 + "block the loop that delivers it")
        }
        do {
            var headers = HTTPHeaders()
            for h in request.headers { headers.add(name: h.name, value: h.value) }
            let r = try HTTPClient.Request(url: request.url, method: HTTPMethod(rawValue: request.method), headers: headers,
                                           body: request.body.isEmpty ? nil : .bytes(request.body))
            let deadline = NIODeadline.now() + .milliseconds(Int64(request.timeoutMilliseconds))
            let response = try client.execute(request: r, delegate: ResponseAccumulator(request: r, maxBodySize: min(maxResponseBytes, request.maxResponseBytes)),
                                              deadline: deadline).wait()
            return AppStoreServer.HTTPResponse(status: Int(response.status.code),
                                               headers: response.headers.map { HTTPHeader($0.name, $0.value) },
                                               body: response.body.map { Array(buffer: $0) } ?? [])
        } catch {
            throw AsyncHTTPClientTransport.map(error, what, request.timeoutMilliseconds)
        }
    }
}

extension SignedDataVerifier {
    /// Apple's initializer, with online checks that work out of the box: when `enableOnlineChecks` is true and no
    /// transport is given, OCSP requests go through `AsyncHTTPClientBlockingTransport`. (Pass `transport:` to the
    /// core initializer to use another one; `transport: nil` there keeps online checks a configuration error.)
    public convenience init(rootCertificates: [Data], bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment,
                            enableOnlineChecks: Bool, chainCache: ChainCacheConfiguration = .default,
                            ocspTimeoutMilliseconds: UInt32 = SignedDataVerifier.defaultOCSPTimeoutMilliseconds,
                            maxJWSBytes: Int = SignedDataVerifier.defaultMaxJWSBytes) throws(ConfigurationError) {
        try self.init(rootCertificates: rootCertificates.map { [UInt8]($0) }, bundleId: bundleId, appAppleId: appAppleId,
                      environment: environment, enableOnlineChecks: enableOnlineChecks, chainCache: chainCache,
                      ocspTimeoutMilliseconds: ocspTimeoutMilliseconds, maxJWSBytes: maxJWSBytes)
    }

    /// The same with DER roots as byte arrays.
    public convenience init(rootCertificates: [[UInt8]], bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment,
                            enableOnlineChecks: Bool, chainCache: ChainCacheConfiguration = .default,
                            ocspTimeoutMilliseconds: UInt32 = SignedDataVerifier.defaultOCSPTimeoutMilliseconds,
                            maxJWSBytes: Int = SignedDataVerifier.defaultMaxJWSBytes) throws(ConfigurationError) {
        try self.init(rootCertificates: rootCertificates, bundleId: bundleId, appAppleId: appAppleId, environment: environment,
                      enableOnlineChecks: enableOnlineChecks, chainCache: chainCache,
                      transport: enableOnlineChecks ? AsyncHTTPClientBlockingTransport() : nil,
                      ocspTimeoutMilliseconds: ocspTimeoutMilliseconds, maxJWSBytes: maxJWSBytes)
    }
}
#endif
