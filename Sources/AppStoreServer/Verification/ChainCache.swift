#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Sizing of the verified-chain cache.
public struct ChainCacheConfiguration: Hashable, Sendable {
    /// Most chains remembered at once (0 disables the cache). Apple's libraries use 32.
    public var maxEntries: Int
    /// How long a verified chain is reused, in seconds. Apple's libraries use 15 minutes.
    public var timeToLive: Int64

    /// A cache of at most `maxEntries` chains, each reused for `timeToLive` seconds (negative values count as 0).
    public init(maxEntries: Int = 32, timeToLive: Int64 = 15 * 60) {
        self.maxEntries = max(0, maxEntries)
        self.timeToLive = max(0, timeToLive)
    }

    /// 32 chains for 15 minutes, as Apple's libraries.
    public static let `default` = ChainCacheConfiguration()
    /// No cache: every call validates the chain (and, with online checks, asks the responders).
    public static let disabled = ChainCacheConfiguration(maxEntries: 0, timeToLive: 0)
}

/// Counters of cache use, for tests and monitoring.
public struct ChainCacheStatistics: Hashable, Sendable {
    /// Calls that found their chain in the cache.
    public var hits: UInt64 = 0
    /// Calls that validated their chain.
    public var misses: UInt64 = 0
    /// Chains in the cache now.
    public var entries: Int = 0
    /// Chains stored so far (only chains of correctly signed payloads are).
    public var insertions: UInt64 = 0
}

/// A bounded, thread-safe map from the exact JWS header segment (base64url text: it fixes `alg` and the exact DER
/// bytes of every x5c certificate) to a chain already verified against this verifier's roots. Only successes are
/// stored. An entry expires after the TTL, or earlier when its insertion says so (with online checks on: when the
/// first of the OCSP answers stops being current). A hit still requires the payload's own effective date to fall
/// inside the chain's validity window; the signature is always checked.
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        let header: [UInt8]
        // Array's own hashing feeds the hasher one byte at a time; a header is ~3 KB, so hash it in bulk.
        func hash(into hasher: inout Hasher) {
            header.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
        static func == (a: Key, b: Key) -> Bool {
            a.header.count == b.header.count && a.header.withUnsafeBytes { x in
                b.header.withUnsafeBytes { y in
                    guard let p = x.baseAddress, let q = y.baseAddress else { return true }  // both empty
                    return memcmp(p, q, x.count) == 0
                }
            }
        }
    }
    private struct Entry {
        let chain: VerifiedChain
        /// Last second (since 1970) at which the entry may be used: insertion + TTL, or earlier.
        let expiresAt: Int64
        var lastUsed: UInt64
    }
    private struct State {
        var entries: [Key: Entry] = [:]
        var stats = ChainCacheStatistics()
        var tick: UInt64 = 0
        var flights: [Key: Flight] = [:]
    }

    let configuration: ChainCacheConfiguration
    private let state = Locked(State())

    init(configuration: ChainCacheConfiguration) {
        self.configuration = configuration
    }

    /// The cached chain if present and not expired; counts a hit or a miss.
    func lookup(_ key: Key, now: Int64) -> VerifiedChain? {
        guard configuration.maxEntries > 0 else {
            state.withLock { $0.stats.misses &+= 1 }
            return nil
        }
        return state.withLock { s in Self.hit(&s, key, now: now) }
    }

    /// The live entry for `key`, counted as a hit, or nil (an expired entry is dropped), counted as a miss.
    private static func hit(_ s: inout State, _ key: Key, now: Int64) -> VerifiedChain? {
        s.tick &+= 1
        if var e = s.entries[key] {
            if now <= e.expiresAt {
                e.lastUsed = s.tick
                s.entries[key] = e
                s.stats.hits &+= 1
                return e.chain
            }
            s.entries[key] = nil
        }
        s.stats.misses &+= 1
        return nil
    }

    /// Stores a verified chain for the TTL from `now`, or only until `validUntil` when that is earlier.
    /// What a caller with online checks does next: use a cached chain, verify it (and be waited for by concurrent
    /// callers of the same key), or wait for the caller already verifying it. Nil when the cache is disabled.
    enum Claim {
        case cached(VerifiedChain)
        case lead(Flight)
        case follow(Flight)
    }

    /// After a `lookup` miss (which counted it), coalesces concurrent first sightings of one key, so that a burst of
    /// payloads under a new chain costs one chain verification and one round of OCSP exchanges instead of one per
    /// thread. Followers wait a bounded time (`Flight.wait(milliseconds:)`), then verify for themselves. Counts
    /// nothing; nil when the cache is disabled.
    func lookupOrJoin(_ key: Key, now: Int64) -> Claim? {
        guard configuration.maxEntries > 0 else { return nil }
        return state.withLock { s in
            if let e = s.entries[key], now <= e.expiresAt { return .cached(e.chain) }
            if let f = s.flights[key] { return .follow(f) }
            let f = Flight()
            s.flights[key] = f
            return .lead(f)
        }
    }

    /// Ends a flight the caller leads: stores a verified chain (nil: the verification failed, nothing is stored),
    /// then wakes the callers waiting for it.
    func settle(_ key: Key, _ flight: Flight, _ chain: VerifiedChain?, now: Int64, validUntil: Int64?) {
        if let chain { insert(key, chain, now: now, validUntil: validUntil) }
        state.withLock { s in
            if s.flights[key] === flight { s.flights[key] = nil }
        }
        flight.finish(chain)
    }

    func insert(_ key: Key, _ chain: VerifiedChain, now: Int64, validUntil: Int64? = nil) {
        guard configuration.maxEntries > 0 else { return }
        let (sum, overflow) = now.addingReportingOverflow(configuration.timeToLive)
        let expiresAt = min(overflow ? Int64.max : sum, validUntil ?? Int64.max)
        guard expiresAt >= now else { return }  // already past its validity: nothing to reuse
        state.withLock { s in
            s.tick &+= 1
            if s.entries[key] == nil && s.entries.count >= configuration.maxEntries {
                // Drop expired entries first, then the least recently used one.
                s.entries = s.entries.filter { now <= $0.value.expiresAt }
                if s.entries.count >= configuration.maxEntries,
                   let victim = s.entries.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
                    s.entries[victim] = nil
                }
            }
            s.entries[key] = Entry(chain: chain, expiresAt: expiresAt, lastUsed: s.tick)
            s.stats.insertions &+= 1
        }
    }

    var statistics: ChainCacheStatistics {
        state.withLock { s in
            var stats = s.stats
            stats.entries = s.entries.count
            return stats
        }
    }
}

/// One verification in progress that other callers wait for: the chain when it succeeded, nil when it failed (each
/// waiter then verifies for itself, so a failure is never handed on). Waits are bounded: a leader stuck in a transport
/// that ignores its timeout (or one that calls back into the verifier) must not hold every caller of that chain.
final class Flight: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var finished = false
    private var chain: VerifiedChain?

    init() {
        pthread_mutex_init(mutex, nil)
        // Deadlines on the monotonic clock: setting the wall clock neither shortens nor stretches a wait.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func finish(_ chain: VerifiedChain?) {
        pthread_mutex_lock(mutex)
        self.chain = chain
        finished = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until the leader finishes, but at most `milliseconds`: the leader's chain, or nil when it failed or
    /// has not finished in time (the caller then verifies for itself).
    func wait(milliseconds: UInt64) -> VerifiedChain? {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let bounded = min(milliseconds, 100 * 365 * 86_400 * 1000)  // a century: no overflow below
        let nanoseconds = Int(deadline.tv_nsec) + Int(bounded % 1000) * 1_000_000
        deadline.tv_sec += Int(bounded / 1000) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_mutex_lock(mutex)
        while !finished {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        let result = finished ? chain : nil
        pthread_mutex_unlock(mutex)
        return result
    }
}
