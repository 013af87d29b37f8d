/// Opt-in client-side rate limiting with Apple's published per-endpoint limits (`spec/endpoints.json`,
/// `AppStoreServerAPIEndpoint.rateLimitPerSecond`; Sandbox a tenth), so a busy service slows itself down instead of
/// collecting HTTP 429s. One bucket per endpoint and environment per client, shared by every thread and task using
/// the client: at most ⌊rate⌋ requests in any one second, as a server counting requests sees them (rates below one:
/// one request per 1/rate seconds). Every attempt takes a slot (retries and the Sandbox fallback's requests too).
/// LocalTesting (a test server) is limited like Production.
public struct APIRateLimit: Hashable, Sendable {
    /// How long a call may wait for its endpoint's next free slot. When the slot is further away the call fails at
    /// once (status `rateLimited`, reason `localRateLimit`, `retryAfter` = the slot), so 0 means "fail fast".
    public var maxWaitMilliseconds: UInt32
    /// Applied to Apple's limits, e.g. 0.5 when two processes share one key; in (0, 1].
    public var share: Double

    /// A limit that waits up to `maxWaitMilliseconds` for a slot, with `share` of Apple's limits.
    public init(maxWaitMilliseconds: UInt32, share: Double = 1) {
        self.maxWaitMilliseconds = maxWaitMilliseconds
        self.share = share
    }

    /// Never wait: a call whose slot is not free fails at once.
    public static let failFast = APIRateLimit(maxWaitMilliseconds: 0)
    /// Wait up to `milliseconds` for a slot.
    public static func wait(upTo milliseconds: UInt32) -> APIRateLimit { APIRateLimit(maxWaitMilliseconds: milliseconds) }
}

/// The buckets of one client: a sliding-window log per bucket, the times of its last ⌊rate⌋ requests (at most 50).
/// A call reserves the earliest slot at which the window holds room, so waiting callers are served in the order
/// they asked, and the limit holds in every window, not just on average.
public final class APIRateLimiter: Sendable {
    /// The limit applied.
    public let limit: APIRateLimit
    private let buckets = Locked([Key: [Int64]]())

    private struct Key: Hashable {
        let endpoint: AppStoreServerAPIEndpoint
        let sandbox: Bool
    }

    /// A limiter applying `limit`; throws a configuration error when its share is not in (0, 1].
    public init(_ limit: APIRateLimit) throws(AppStoreServerAPIError) {
        guard limit.share > 0, limit.share <= 1 else {
            throw .configuration(.invalidArgument, "the rate limit share must be in (0, 1], got \(limit.share)")
        }
        self.limit = limit
    }

    /// Requests per second allowed for the endpoint in the environment, or nil when Apple publishes no limit.
    public func rate(_ endpoint: AppStoreServerAPIEndpoint, environment: AppStoreEnvironment) -> Double? {
        guard let perSecond = endpoint.rateLimitPerSecond else { return nil }
        return Double(perSecond) * limit.share * (environment == .sandbox ? Self.sandboxFactor : 1)
    }

    /// Apple's Sandbox allows a tenth of the Production limits (spec/endpoints.json `rateLimits.sandboxFactor`).
    public static let sandboxFactor = AppStoreServerAPIEndpoint.sandboxRateFactor

    /// Reserves the next slot for one request and returns how long to wait for it (0: now). Throws
    /// `localRateLimit` when the wait would exceed `maxWaitMilliseconds`; nothing is reserved then.
    public func reserve(_ endpoint: AppStoreServerAPIEndpoint, environment: AppStoreEnvironment,
                        nowMilliseconds now: Int64 = Timestamp.nowMilliseconds()) throws(AppStoreServerAPIError) -> UInt64 {
        try reserve(endpoint, environment: environment, nowMilliseconds: now, before: nil).wait
    }

    /// As above; a slot at or after `deadline` (an API call's) is not reserved either: `late` then, and `slot` says
    /// when it is.
    func reserve(_ endpoint: AppStoreServerAPIEndpoint, environment: AppStoreEnvironment, nowMilliseconds now: Int64,
                 before deadline: Int64?) throws(AppStoreServerAPIError) -> (wait: UInt64, late: Bool, slot: Int64) {
        guard let rate = rate(endpoint, environment: environment) else { return (0, false, now) }
        // n requests per window: ⌊rate⌋ per second, or one per 1/rate seconds.
        let n = rate >= 1 ? Int(rate) : 1
        let window = rate >= 1 ? Int64(1000) : Int64((1000 / rate).rounded(.up))
        let key = Key(endpoint: endpoint, sandbox: environment == .sandbox)
        var late = false
        let (slot, admitted) = buckets.withLock { b -> (Int64, Bool) in
            var log = b[key] ?? []
            var slot = log.count < n ? now : max(now, log[log.count - n] + window)
            slot = max(slot, log.last ?? slot)  // in the order asked
            guard slot - now <= Int64(limit.maxWaitMilliseconds) else { return (slot, false) }
            if let deadline, slot > now, slot >= deadline {
                late = true
                return (slot, true)
            }
            log.append(slot)
            if log.count > n { log.removeFirst(log.count - n) }
            b[key] = log
            return (slot, true)
        }
        guard admitted else {
            throw Self.refusal(endpoint, environment: environment, rate: rate, atMilliseconds: slot, now: now)
        }
        return (late ? 0 : UInt64(slot - now), late, slot)
    }

    private static func refusal(_ endpoint: AppStoreServerAPIEndpoint, environment: AppStoreEnvironment, rate: Double,
                                atMilliseconds: Int64, now: Int64) -> AppStoreServerAPIError {
        let text = rate >= 1 ? "\(Int(rate)) requests per second" : "one request every \(Int((1 / rate).rounded())) s"
        return AppStoreServerAPIError(kind: .rateLimitedLocally, endpoint: endpoint,
            message: "\(endpoint.name): the client's rate limit (\(text) in \(environment.rawValue)) has no free slot "
                + "for \(atMilliseconds - now) ms, longer than the call may wait; nothing was sent",
            retryAfter: RetryAfter(atMilliseconds: atMilliseconds), receivedAtMilliseconds: now)
    }
}
