import FoundationEssentials

/// Why an App Store Server API call failed: a bad argument or request model (nothing was sent), a configuration
/// the client refuses, an error answer from Apple (HTTP status, raw error code, its known name, Apple's message,
/// Retry-After), a success answer that does not decode, or a transport that got no answer.
public struct AppStoreServerAPIError: AppStoreServerFailure, Hashable {
    /// What kind of failure it is.
    public enum Kind: Hashable, Sendable {
        /// A parameter is missing, unknown or of the wrong type (the message names it). Nothing was sent.
        case invalidArgument
        /// A request model breaks one of Apple's limits (the message names the field). Nothing was sent.
        case invalidRequest(ModelValidationError)
        /// The client cannot be used as configured: `unsupportedEnvironment` (Xcode), `noTransport`, `invalidArgument`
        /// (a bad base URL or timeout).
        case configuration(FailureReason)
        /// Apple answered with an HTTP error status and an error payload (`rawApiError`, `errorMessage`).
        case apiError
        /// Apple answered with an HTTP error status but no App Store error payload.
        case httpError
        /// Apple answered with a success status but the body does not decode into the endpoint's model.
        case undecodableResponse
        /// No answer: the transport failed.
        case transport(TransportError.Kind)
        /// The bearer token could not be created.
        case signing
        /// An external signer (`SigningKey(signer:)`) could not sign the bearer token: INVALID_KEY / SIGNER_FAILED, as
        /// every other signature such a key fails to make.
        case signerFailed
        /// The client's own rate limiter (`APIRateLimit`) had no slot within the wait allowed; nothing was sent.
        /// `retryAfter` is the time of the next free slot.
        case rateLimitedLocally
        /// The client's timeout, a deadline for the whole call, ran out before the call finished: a wait (backoff,
        /// Retry-After, rate-limit slot) would end past it, or the external signer answered after it (its signature
        /// discarded). `retryAfter`, when set, is when the wait would have ended.
        case deadlineExceeded
    }

    /// What kind of failure it is.
    public let kind: Kind
    /// The endpoint of the failed call, when known.
    public let endpoint: AppStoreServerAPIEndpoint?
    /// What failed and why, naming the endpoint, field or HTTP status.
    public let message: String
    /// The HTTP status of Apple's answer, when there was one.
    public let httpStatusCode: Int?
    /// The `errorCode` of Apple's error payload, kept when this library does not know it.
    public let rawApiError: Int64?
    /// The `errorMessage` of Apple's error payload.
    public let errorMessage: String?
    /// The `Retry-After` header of Apple's answer (any of its three forms): when the next request may be sent.
    public let retryAfter: RetryAfter?
    /// Seconds from the answer until `retryAfter`, rounded up (0 when it has passed); nil without the header.
    public let retryAfterSeconds: Int64?
    /// The headers of Apple's answer, in order (empty when there was no answer); `header(_:)` looks one up.
    public let headers: [HTTPHeader]

    /// An error with what is known of the answer; `receivedAtMilliseconds` (default: now) is when it arrived,
    /// which a delta-seconds `retryAfter` counts from.
    public init(kind: Kind, endpoint: AppStoreServerAPIEndpoint? = nil, message: String, httpStatusCode: Int? = nil,
                rawApiError: Int64? = nil, errorMessage: String? = nil, retryAfter: RetryAfter? = nil,
                receivedAtMilliseconds: Int64? = nil, headers: [HTTPHeader] = []) {
        self.kind = kind
        self.endpoint = endpoint
        self.message = message
        self.httpStatusCode = httpStatusCode
        self.rawApiError = rawApiError
        self.errorMessage = errorMessage
        self.retryAfter = retryAfter
        self.retryAfterSeconds = retryAfter.map { $0.seconds(from: receivedAtMilliseconds ?? Timestamp.nowMilliseconds()) }
        self.headers = headers
    }

    /// The first header of Apple's answer with this name (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// The App Store Server API error code, when `rawApiError` is one this library knows.
    public var apiError: APIError? {
        guard let rawApiError else { return nil }
        let e = APIError(rawValue: rawApiError)
        return e.isKnown ? e : nil
    }

    /// The Advanced Commerce API error code, when `rawApiError` is one this library knows.
    public var advancedCommerceAPIError: AdvancedCommerceAPIError? {
        guard let rawApiError else { return nil }
        let e = AdvancedCommerceAPIError(rawValue: rawApiError)
        return e.isKnown ? e : nil
    }

    /// The name of the known error code (Advanced Commerce names first for Advanced Commerce endpoints), or nil.
    public var apiErrorName: String? {
        guard let rawApiError else { return nil }
        return Self.errorName(rawApiError, advancedCommerce: endpoint?.isAdvancedCommerce ?? false)
    }

    static func errorName(_ code: Int64, advancedCommerce: Bool) -> String? {
        let general = APIError(rawValue: code).caseName
        let ac = AdvancedCommerceAPIError(rawValue: code).caseName
        return advancedCommerce ? (ac ?? general) : (general ?? ac)
    }

    /// Apple's retryable answers: HTTP 429, and the error codes spec/errors.json marks retryable.
    public var isRetryable: Bool {
        if httpStatusCode == 429 || kind == .rateLimitedLocally { return true }
        guard let rawApiError else { return false }
        return Self.retryableCodes.contains(rawApiError)
    }

    /// Apple's retryable error codes; HTTP 429 is retried by status, whatever its code.
    public static let retryableCodes: Set<Int64> = Set(APIError.retryable.map(\.rawValue) + AdvancedCommerceAPIError.retryable.map(\.rawValue))


    public var statusCode: AppStoreStatus {
        switch kind {
        case .invalidArgument, .invalidRequest: .invalidArgument
        case .configuration: .configurationError
        case .apiError, .httpError: .apiError
        case .undecodableResponse: .invalidResponse
        case .transport: .transportError
        case .signing: .internalError
        case .signerFailed: .invalidKey
        case .rateLimitedLocally: .rateLimited
        case .deadlineExceeded: .transportError
        }
    }

    public var reason: FailureReason {
        switch kind {
        case .invalidArgument: .invalidParameters
        case .invalidRequest: .invalidRequest
        case .configuration(let reason): reason
        case .apiError, .httpError: httpStatusCode == 429 ? .rateLimited : (kind == .apiError ? .apiError : .httpError)
        case .undecodableResponse: .undecodableResponse
        case .transport(.timeout): .transportTimeout
        case .transport(.unreachable): .transportUnreachable
        case .transport(.failed): .transportFailed
        case .signing: .signingFailed
        case .signerFailed: .signerFailed
        case .rateLimitedLocally: .localRateLimit
        case .deadlineExceeded: .deadlineExceeded
        }
    }

    static func argument(_ message: String, _ endpoint: AppStoreServerAPIEndpoint? = nil) -> AppStoreServerAPIError {
        AppStoreServerAPIError(kind: .invalidArgument, endpoint: endpoint, message: message)
    }
    static func configuration(_ reason: FailureReason, _ message: String) -> AppStoreServerAPIError {
        AppStoreServerAPIError(kind: .configuration(reason), message: message)
    }
}

/// Opt-in retries of Apple's retryable answers (HTTP 429; the error codes spec/errors.json marks retryable) with
/// exponential backoff. A `Retry-After` header is honoured: the retry waits until the time it names, and when that
/// is further away than `maxBackoffMilliseconds` the call is not retried (the error carries the time). Transport
/// failures are not retried (a request may have reached Apple).
public struct APIRetryPolicy: Hashable, Sendable {
    /// Retries after the first attempt; 0 disables retrying.
    public var maxRetries: Int
    /// The wait before the first retry; doubled for each further retry.
    public var initialBackoffMilliseconds: UInt32
    /// The longest wait between two attempts, Retry-After included.
    public var maxBackoffMilliseconds: UInt32

    /// Up to `maxRetries` retries (negative counts as 0), waiting `initialBackoffMilliseconds` first, doubled for
    /// each further retry up to `maxBackoffMilliseconds`.
    public init(maxRetries: Int, initialBackoffMilliseconds: UInt32 = 500, maxBackoffMilliseconds: UInt32 = 30_000) {
        self.maxRetries = max(0, maxRetries)
        self.initialBackoffMilliseconds = initialBackoffMilliseconds
        self.maxBackoffMilliseconds = max(initialBackoffMilliseconds, maxBackoffMilliseconds)
    }

    /// No retries (the default).
    public static let none = APIRetryPolicy(maxRetries: 0)

    /// How long to wait before retry number `retry` (1-based) after `error`, or nil to give up. The sans-I/O form of
    /// the client's retry loop (`appstore_api_client_retry_delay_ms` at the C ABI).
    public func delayMilliseconds(beforeRetry retry: Int, after error: AppStoreServerAPIError,
                                  nowMilliseconds: Int64 = Timestamp.nowMilliseconds()) -> UInt64? {
        guard retry >= 1, retry <= maxRetries, error.isRetryable else { return nil }
        let shift = UInt64(min(retry - 1, 30))
        var delay = min(UInt64(initialBackoffMilliseconds) << shift, UInt64(maxBackoffMilliseconds))
        if let at = error.retryAfter?.atMilliseconds {
            let wanted = at > nowMilliseconds ? UInt64(at - nowMilliseconds) : 0
            guard wanted <= UInt64(maxBackoffMilliseconds) else { return nil }
            delay = max(delay, wanted)
        }
        return delay
    }
}
