/// An HTTP header, in order of appearance. Names compare case-insensitively (`HTTPResponse.header(_:)`).
public struct HTTPHeader: Hashable, Sendable {
    /// The header's name, as sent.
    public var name: String
    /// The header's value.
    public var value: String
    /// A header with its name and value.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request the library wants sent: built by the core (API request builders, OCSP), sent by a transport.
public struct HTTPRequest: Hashable, Sendable {
    /// The HTTP method (`GET`, `POST`, ...).
    public var method: String
    /// Absolute URL, already percent-encoded.
    public var url: String
    /// The headers to send, in order.
    public var headers: [HTTPHeader]
    /// The body to send (empty: none).
    public var body: [UInt8]
    /// How long the whole exchange may take, in milliseconds: a deadline for connecting, sending and reading the
    /// whole answer together, not a limit per read.
    public var timeoutMilliseconds: UInt32
    /// The largest response body the library accepts for this exchange (after content decoding): a transport stops
    /// reading beyond it and fails (`HTTPLimits`).
    public var maxResponseBytes: Int

    /// A request; the limits default to the App Store Server API's.
    public init(method: String, url: String, headers: [HTTPHeader] = [], body: [UInt8] = [], timeoutMilliseconds: UInt32 = 30_000,
                maxResponseBytes: Int = HTTPLimits.apiResponseBytes) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maxResponseBytes = maxResponseBytes
    }
}

/// The largest response bodies the library accepts (the header's APPSTORE_LIMIT_*_RESPONSE_BYTES, checked against
/// these by the C tests). Counted after content decoding: a gzip body counts as what it inflates to.
public enum HTTPLimits {
    /// App Store Server API answers (history pages hold at most 20 transactions: a few hundred KB).
    public static let apiResponseBytes = 16 << 20
    /// OCSP answers (a few KB).
    public static let ocspResponseBytes = 1 << 20
}

/// What a transport got back.
public struct HTTPResponse: Hashable, Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The headers received, in order.
    public var headers: [HTTPHeader]
    /// The body received (after content decoding).
    public var body: [UInt8]

    /// A response with its status, headers and body.
    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header with this name (case-insensitive).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// A transport that could not deliver a request. Raw values are the C transport return codes
/// (`APPSTORE_TRANSPORT_*`).
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why no response came.
    public enum Kind: Int32, Hashable, Sendable {
        /// The exchange did not finish within the request's `timeoutMilliseconds`.
        case timeout = 1
        /// The server could not be reached.
        case unreachable = 2
        /// Anything else (the request may have reached the server).
        case failed = 3
    }
    /// Why no response came.
    public let kind: Kind
    /// What happened, in words.
    public let message: String
    /// An error of `kind` with a message.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { "transport \(kind): \(message)" }
}

/// Sends requests and blocks until the response (or failure) — what synchronous callers (the verifier's OCSP
/// checks, the C ABI) use. Implementations must be safe to call from many threads at once, must give up after
/// `request.timeoutMilliseconds` (throwing `.timeout`: nothing can interrupt them), and must not call back into the
/// verifier that is using them. Callers that wait for another thread's check of the same chain wait at most twice
/// the OCSP timeout + 1 s, then check for themselves.
public protocol BlockingHTTPTransport: Sendable {
    /// Sends `request` and returns the response, blocking the calling thread.
    func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse
}

/// Sends requests asynchronously — what the Swift async API client uses.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response.
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
}

/// Any blocking transport can serve async callers (it blocks the calling task's thread while it runs).
public struct BlockingTransportAdapter: HTTPTransport {
    /// The blocking transport that sends.
    public let transport: any BlockingHTTPTransport
    /// An async transport over `transport`.
    public init(_ transport: any BlockingHTTPTransport) { self.transport = transport }
    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        try transport.send(request)
    }
}
