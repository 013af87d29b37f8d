import FoundationEssentials

/// The purchase ledger: verified App Store data in, who is entitled to what out, durably.
///
///     let ledger = try Ledger.open("sqlite:/var/lib/app/ledger.db", verifier: verifier)
///     let result = try ledger.ingest(notification: signedPayload)   // returns once the event is durable
///     let now = try ledger.customer(appAccountToken)                  // entitlements, subscriptions, consumables
///
/// Every input is verified with the ledger's `SignedDataVerifier` (or was, by a verifier for the same app: a
/// `LedgerEvent`); a refusal throws the verifier's `VerificationFailure` and changes nothing. An accepted value is
/// stored exactly as received, indexed under the subscription and customer it is about, in one transaction committed
/// durably before `ingest` returns.
///
/// Queries are evaluated per key (docs/ledger.md, "Queries"): a subscription's or customer's events are read from
/// storage by the index, the state engine (`LedgerState`) is built from them alone and answers; a bounded cache of
/// such states (`cache_mib=N` in the URL, default `defaultCacheMiB`) saves reading them again. Opening reads no
/// events, and memory does not grow with the history. Another process's commit is seen by the next call here: the
/// keys of the events stored since the last look are read (indexed) and their cached states evicted.
///
/// Thread-safe: calls on one ledger are serialized by its lock; verification runs outside it.
public final class Ledger: Sendable {
    public let verifier: SignedDataVerifier
    /// The URL it was opened with.
    public let url: String
    let identity: LedgerIdentity
    private let core: Locked<Core>
    /// Verified events waiting for a commit (group commit: `ingest`).
    private let commits = CommitQueue<LedgerEvent, Result<LedgerIngestResult, LedgerError>>()

    /// The per-key state cache's default budget, in MiB (`cache_mib=N` in the URL sets another; 0: no cache).
    public static let defaultCacheMiB = 32

    struct Core {
        let store: any LedgerStorage
        var cache: LedgerStateCache
        /// The newest event whose keys this process has seen (stored them, or evicted them when another did).
        var lastEventId: Int64 = 0
        var dataVersion: Int64 = 0
        /// Stored events decoded so far (tests: opening reads none; a query reads its key's).
        var rowsRead = 0
        /// The store's `connectionGeneration` the cache was built under.
        var generation = 0
    }

    private init(url: String, verifier: SignedDataVerifier, store: any LedgerStorage, cacheBytes: Int) {
        self.url = url
        self.verifier = verifier
        self.identity = LedgerIdentity(verifier)
        self.core = Locked(Core(store: store, cache: LedgerStateCache(budget: cacheBytes)))
    }

    /// Opens (creating it if needed) the ledger at `url`: `sqlite:/path/ledger.db` (also `sqlite:///path`, and
    /// `sqlite::memory:` for a ledger that lives as long as the object), or `postgresql://user@host:port/database`
    /// (also `postgres://`; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The
    /// schema is created or migrated; no event is read (a database made before the index existed is indexed once).
    /// Either URL takes `?cache_mib=N` (0...65536): the per-key state cache's budget (default `defaultCacheMiB`).
    ///
    /// A ledger holds the data of one app in one environment: the verifier's bundle id, environment and app Apple ID
    /// are recorded when the ledger is created, and a verifier of another identity is refused (`configurationError`,
    /// `ledgerIdentityMismatch`) before anything is read or written. PostgreSQL: `?schema=NAME` (a lowercase SQL
    /// identifier, default `appstore_ledger`) gives each app and environment its own tables in one database.
    public static func open(_ url: String, verifier: SignedDataVerifier) throws(LedgerError) -> Ledger {
        let (storeURL, cacheBytes) = try cacheParameter(url)
        let store = try makeStore(storeURL, identity: LedgerIdentity(verifier))
        return try open(url, verifier: verifier, store: store, cacheBytes: cacheBytes)
    }

    /// Opens an existing ledger with the identity it records: `verifier` gets its bundle id, environment and app
    /// Apple ID and returns the verifier to use (for tools that only read: the values were verified when stored).
    /// A ledger that records none yet (new, or empty) is refused with `configurationError`.
    public static func open(_ url: String, recordedIdentity verifier: (_ bundleId: String, _ environment: AppStoreEnvironment,
                                                                       _ appAppleId: Int64?) throws -> SignedDataVerifier) throws(LedgerError) -> Ledger {
        let (storeURL, cacheBytes) = try cacheParameter(url)
        let store = try makeStore(storeURL, identity: nil)
        let i = store.identity
        let v: SignedDataVerifier
        do { v = try verifier(i.bundleId, i.environment, i.appAppleId) } catch {
            throw .configuration("cannot make a verifier for the ledger's identity \(i): \(error)")
        }
        guard store.identity.admits(LedgerIdentity(v)) else { throw store.identity.mismatch(LedgerIdentity(v), ledger: QuotedText.quote(url)) }
        return try open(url, verifier: v, store: store, cacheBytes: cacheBytes)
    }

    /// `open(_:verifier:)` with a cache budget in bytes (tests: budgets below a MiB).
    static func open(_ url: String, verifier: SignedDataVerifier, cacheBytes: Int) throws(LedgerError) -> Ledger {
        let store = try makeStore(try cacheParameter(url).url, identity: LedgerIdentity(verifier))
        return try open(url, verifier: verifier, store: store, cacheBytes: cacheBytes)
    }

    private static func open(_ url: String, verifier: SignedDataVerifier, store: any LedgerStorage,
                             cacheBytes: Int) throws(LedgerError) -> Ledger {
        let ledger = Ledger(url: url, verifier: verifier, store: store, cacheBytes: cacheBytes)
        try ledger.core.withLock { c throws(LedgerError) in
            try ledger.buildIndexIfNeeded(&c)
            // The marker before the mark: a commit between the two is looked at again by the next call.
            c.dataVersion = try c.store.changeMarker()
            c.lastEventId = try c.store.lastEventId()
        }
        return ledger
    }

    /// Splits `cache_mib=N` off the URL's parameters: the URL for the store, and the budget in bytes.
    static func cacheParameter(_ url: String) throws(LedgerError) -> (url: String, bytes: Int) {
        let fallback = defaultCacheMiB << 20
        guard let q = url.lastIndex(of: "?") else { return (url, fallback) }
        var mib: Int?
        var kept: [Substring] = []
        for p in url[url.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false) {
            guard p.hasPrefix("cache_mib=") else { kept.append(p); continue }
            guard let n = Int(p.dropFirst("cache_mib=".count)), (0...65536).contains(n) else {
                throw .argument("the ledger URL's cache_mib \(QuotedText.quote(String(p.dropFirst("cache_mib=".count)))) "
                    + "is not a number of MiB in 0...65536")
            }
            mib = n
        }
        guard let mib else { return (url, fallback) }
        let base = String(url[..<q])
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&"), mib << 20)
    }

    static func makeStore(_ url: String, identity: LedgerIdentity?) throws(LedgerError) -> any LedgerStorage {
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            guard !url.utf8.contains(0) else { throw .argument("the ledger URL contains a NUL byte") }
            return try PostgresLedgerStore(url: url, identity: identity)
        } else if url.hasPrefix("sqlite:") {
            var path = String(url.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty, !path.utf8.contains(0) else { throw .argument("the ledger URL names no file: \(QuotedText.quote(url))") }
            return try LedgerStore(path: path, identity: identity)
        }
        let scheme = url.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        throw .argument("unsupported ledger URL scheme \(QuotedText.quote(scheme)): use sqlite:/path/to/ledger.db "
            + "or postgresql://user@host/database")
    }

    // MARK: ingest

    /// Verifies a notification deeply (its transaction and renewal info too) and records it.
    public func ingest(notification signedPayload: String) throws -> LedgerIngestResult {
        try ingest(LedgerEvent.verify(notification: signedPayload, with: verifier).get())
    }

    /// Verifies a signed transaction (from the app, Get Transaction History, Get All Subscription Statuses) and records it.
    public func ingest(transaction signedTransaction: String) throws -> LedgerIngestResult {
        try ingest(LedgerEvent.verify(transaction: signedTransaction, with: verifier).get())
    }

    /// Verifies a signed renewal info (Get All Subscription Statuses) and records it.
    public func ingest(renewalInfo signedRenewalInfo: String) throws -> LedgerIngestResult {
        try ingest(LedgerEvent.verify(renewalInfo: signedRenewalInfo, with: verifier).get())
    }

    /// Records an event already verified by a verifier for the same app (bundle id, app Apple ID, environment).
    /// Returns after the event is durable; `stored` is false when the same payload was already in the ledger.
    ///
    /// Group commit (`CommitQueue`): callers that arrive while another caller's commit waits for the disk queue their
    /// events, and the next commit stores all of them in one transaction (one fsync); each caller returns once the
    /// transaction holding its event has committed. A caller alone is one event per transaction. A batch that fails
    /// fails every event in it (none is acknowledged).
    public func ingest(_ event: LedgerEvent) throws(LedgerError) -> LedgerIngestResult {
        guard event.identity == identity else {
            throw .argument("the event was verified for \(event.identity.bundleId) (\(event.identity.environment.rawValue)); "
                + "this ledger's verifier accepts \(identity.bundleId) (\(identity.environment.rawValue))")
        }
        // The event's own share of storing it, made here by each caller rather than by the one that commits.
        var event = event
        event.prepare()
        return try commits.submit(event) { batch in
            let (results, flush) = core.withLock { c in commit(batch.map(\.event), &c) }
            // PostgreSQL: the flush is awaited outside the ledger's lock and the commit slot, so the next batch is
            // committed meanwhile; none of this batch's callers is answered before it (a failed one fails them all).
            return (results, flush.map { flush in { results in Self.afterFlush(results, flush) } })
        }.get()
    }

    /// `results` once `flush` has confirmed their commit is durable; every one failed when it has not.
    private static func afterFlush(_ results: [Result<LedgerIngestResult, LedgerError>],
                                   _ flush: () throws(LedgerError) -> Void) -> [Result<LedgerIngestResult, LedgerError>] {
        do throws(LedgerError) {
            try flush()
            return results
        } catch {
            return results.map { _ in .failure(error) }
        }
    }

    /// Stores `events` in one transaction (bulk import: `importJSONLines`); each event's outcome, in order, once durable.
    func commitBatch(_ events: [LedgerEvent]) -> [Result<LedgerIngestResult, LedgerError>] {
        let (results, flush) = core.withLock { c in commit(events, &c) }
        return flush.map { Self.afterFlush(results, $0) } ?? results
    }

    /// Stores `batch` in one transaction (each event, its index rows, and the verdicts of the notifications of every
    /// subscription it changes); each event's outcome, in order. The storage's UNIQUE payload digest de-duplicates.
    /// `flush`: nil when the transaction is durable already (SQLite), else the wait for it (PostgreSQL), to be run
    /// without the ledger's lock before any outcome is given to a caller.
    private func commit(_ batch: [LedgerEvent], _ c: inout Core)
        -> (results: [Result<LedgerIngestResult, LedgerError>], flush: (() throws(LedgerError) -> Void)?) {
        if c.store.canCommitInOneTrip(batch), let done = commitInOneTrip(batch, &c) { return done }
        var ids: [Int64?] = []
        var flush: (() throws(LedgerError) -> Void)?
        var keys: [[LedgerKey]] = []
        var states: [String: LedgerState] = [:]
        do throws(LedgerError) {
            // The write lock first (BEGIN IMMEDIATE), then the keys of whatever other processes stored (their cached
            // states evicted; looked for only when the change marker moved), then these events. The subscriptions
            // the batch is about, when not cached or evicted by the catch-up, are read with the lock where the store
            // can (PostgreSQL: in the same round trip).
            var about: Set<LedgerKey> = []
            for event in batch {
                for k in LedgerKey.keys(of: event) where k.kind == "s" { about.insert(k) }
                if let n = event.notification, n.isSubscription, let o = n.originalTransactionId { about.insert(.subscription(o)) }
            }
            let sorted = about.sorted { $0.value < $1.value }
            // The cached ones as they are before the catch-up: one it evicts is this state and the events after it.
            var before: [String: LedgerState] = [:]
            for k in sorted { if let s = c.cache.peek(k) { before[k.value] = s } }
            // The batch statement's parameters made before the lock (PostgreSQL: the other processes' writers wait
            // while this one holds it).
            let receivedAt = Timestamp.nowMilliseconds()
            c.store.stage(batch, receivedAt: receivedAt)
            try c.store.beginWrite(reading: sorted.filter { before[$0.value] == nil }, ifChanged: sorted.filter { before[$0.value] != nil })
            do throws(LedgerError) {
                try refresh(&c)
                // One call for the batch, indexed too (PostgreSQL: one statement); nil: stored before (or earlier
                // in the batch).
                let stored = try c.store.insert(batch, receivedAt: receivedAt)
                for (event, id) in zip(batch, stored) {
                    ids.append(id)
                    keys.append(id == nil ? [] : LedgerKey.keys(of: event))
                }
                // The subscriptions this batch changed (their verdicts are evaluated again: an incomplete history can
                // become complete), and those its notifications are about (their results).
                var changed: Set<String> = []
                var asked: Set<String> = []
                for (event, k) in zip(batch, keys) {
                    for key in k where key.kind == "s" { changed.insert(key.value) }
                    if let n = event.notification, n.isSubscription, let o = n.originalTransactionId { asked.insert(o) }
                }
                for o in changed.union(asked).sorted() {
                    let key = LedgerKey.subscription(o)
                    // Cached (nothing newer than it was committed: `catchUp`), or read in this transaction (with
                    // the batch's events or, read with the lock, without); applying an event twice changes nothing.
                    let cached = c.cache.get(key)
                    var s: LedgerState
                    if let cached {
                        s = cached
                    } else if let old = before[o], let newer = try c.store.newEvents(keyed: key) {
                        // Evicted by the catch-up: the state before it and the events stored since (the state is a
                        // function of the set of events).
                        s = old
                        for e in newer { s.apply(try storedFacts(e.id, e.kind, e.digest, e.stored, c.store)) }
                        c.rowsRead += newer.count
                    } else {
                        s = try load([key], &c)
                    }
                    var since = Int64.max
                    for (event, k) in zip(batch, keys) where k.contains(key) {
                        s.apply(event)
                        since = min(since, event.earliestSignedDate)
                    }
                    if changed.contains(o) { try storeVerdicts(of: o, s, before: cached, since: since, c.store) }
                    states[o] = s
                }
                flush = try c.store.commitAwaitingFlush()
            } catch {
                c.store.rollback()
                throw error
            }
        } catch {
            return (batch.map { _ in .failure(error) }, nil)
        }
        return (Self.committed(batch, ids: ids, keys: keys, states: states, &c), flush)
    }

    /// After a commit: the cached states built from the keys of the events it stored evicted, the subscriptions it
    /// evaluated cached, this process's look moved past its events, and each event's outcome (what it means now).
    /// `keys`: each event's keys, empty for one stored before.
    private static func committed(_ batch: [LedgerEvent], ids: [Int64?], keys: [[LedgerKey]], states: [String: LedgerState],
                                  _ c: inout Core) -> [Result<LedgerIngestResult, LedgerError>] {
        c.cache.invalidate(keys.joined())
        for (o, s) in states {
            c.cache.put(.subscription(o), s, keys: [.subscription(o)], bytes: LedgerKey.estimatedBytes(s))
        }
        c.lastEventId = max(c.lastEventId, ids.compactMap { $0 }.max() ?? 0)
        return zip(batch, ids).map { event, id in
            let s = event.notification?.originalTransactionId.flatMap { states[$0] } ?? LedgerState()
            return .success(s.ingestResult(for: event, stored: id != nil))
        }
    }

    /// `commit` in one round trip (PostgreSQL: `commitInOneTrip`), so the writers' lock is held for the server's work
    /// alone, not across this process's turns on a busy CPU between round trips: the batch's subscriptions are
    /// evaluated before the write, from their cached states (current up to `lastEventId`) or, for the others, read in
    /// one snapshot first (`readSubscriptions`), and the write commits only if no event was stored under them since
    /// (else it writes nothing: nil, and the batch is committed as usual). Each event of the batch is applied whether
    /// or not its payload turns out to be stored already: one stored before those reads is in the state (applying it
    /// again changes nothing), one stored after is a change. nil, too, when the store cannot.
    private func commitInOneTrip(_ batch: [LedgerEvent], _ c: inout Core)
        -> (results: [Result<LedgerIngestResult, LedgerError>], flush: (() throws(LedgerError) -> Void)?)? {
        // A re-established connection: the usual write drops what was cached.
        guard c.store.connectionGeneration == c.generation else { return nil }
        var about: Set<String> = []
        let eventKeys = batch.map { LedgerKey.keys(of: $0) }
        for (event, keys) in zip(batch, eventKeys) {
            for k in keys where k.kind == "s" { about.insert(k.value) }
            if let n = event.notification, n.isSubscription, let o = n.originalTransactionId { about.insert(o) }
        }
        let subscriptions = about.sorted()
        var base: [String: LedgerState] = [:]
        var unchanged: [(key: LedgerKey, after: Int64)] = []
        var unread: [LedgerKey] = []
        for o in subscriptions {
            if let s = c.cache.peek(.subscription(o)) {
                base[o] = s
                unchanged.append((.subscription(o), c.lastEventId))
            } else {
                unread.append(.subscription(o))
            }
        }
        do throws(LedgerError) {
            var stored: [String: [String: StoredVerdict]] = [:]
            if !unread.isEmpty {
                guard let read = try c.store.readSubscriptions(unread),
                      // Read on a connection made since (a lost one re-established): the cache is not trusted.
                      c.store.connectionGeneration == c.generation else { return nil }
                for k in unread {
                    var s = LedgerState()
                    var seen: Set<Int64> = []
                    for (id, kind, digest, text) in read.events[k] ?? [] where seen.insert(id).inserted {
                        s.apply(try storedFacts(id, kind, digest, text, c.store))
                    }
                    c.rowsRead += seen.count
                    base[k.value] = s
                    stored[k.value] = read.verdicts[k.value] ?? [:]
                    unchanged.append((k, read.newest))
                }
            }
            var states: [String: LedgerState] = [:]
            var verdicts: [String: StoredVerdict] = [:]
            for o in subscriptions {
                let key = LedgerKey.subscription(o)
                var s = base[o] ?? LedgerState()
                var since = Int64.max
                for (event, keys) in zip(batch, eventKeys) where keys.contains(key) {
                    s.apply(event)
                    since = min(since, event.earliestSignedDate)
                }
                if since != .max {
                    let before = stored[o] == nil ? base[o] : nil
                    verdicts.merge(Self.verdictChanges(of: o, s, before: before, stored: stored[o] ?? [:], since: since)) { a, _ in a }
                }
                states[o] = s
            }
            let receivedAt = Timestamp.nowMilliseconds()
            c.store.stage(batch, receivedAt: receivedAt)
            guard let outcome = try c.store.commitInOneTrip(batch, receivedAt: receivedAt, after: c.lastEventId,
                                                           unchanged: unchanged, verdicts: verdicts, generation: c.generation),
                  case .committed(let ids, let others, let newest, let flush) = outcome else { return nil }
            // The catch-up (as `refresh`): other processes' events up to `newest`, none of them under these subscriptions.
            c.cache.invalidate(others)
            c.dataVersion = newest
            c.lastEventId = max(c.lastEventId, newest)
            let storedKeys = zip(ids, eventKeys).map { id, keys in id == nil ? [] : keys }
            return (Self.committed(batch, ids: ids, keys: storedKeys, states: states, &c), flush)
        } catch {
            return (batch.map { _ in .failure(error) }, nil)
        }
    }

    /// Records the oracle's verdict of each notification about subscription `o` that changed. `before`: the cached
    /// state of `o` before this batch, whose verdicts are the stored ones (the commit that made it wrote them, and
    /// any later commit about `o` evicted it); nil: the stored verdicts are read. `since`: the earliest signedDate of
    /// the facts this batch added to `o`. A verdict is the status at the notification's signedDate as known then
    /// (only facts signed by then count: `oracleCheck`), so no notification signed before `since` can change: only
    /// the newer ones are evaluated again (in order of delivery, the new notification alone, not the whole history).
    private func storeVerdicts(of o: String, _ s: LedgerState, before: LedgerState? = nil, since: Int64 = .min,
                               _ store: any LedgerStorage) throws(LedgerError) {
        let stored = before == nil ? try store.verdicts(ofSubscription: o) : [:]
        for (uuid, v) in Self.verdictChanges(of: o, s, before: before, stored: stored, since: since) { try store.setVerdict(uuid, v) }
    }

    /// The verdicts of `o`'s notifications signed at or after `since` that `s` changes (`storeVerdicts`): against
    /// those `before` gives, or, without it, the `stored` ones.
    private static func verdictChanges(of o: String, _ s: LedgerState, before: LedgerState?, stored: [String: StoredVerdict],
                                       since: Int64) -> [String: StoredVerdict] {
        func verdict(_ state: LedgerState, _ n: NotificationFacts) -> StoredVerdict {
            let check = state.oracleCheck(n)
            return StoredVerdict(verdict: check?.verdict.rawValue, engineStatus: check.flatMap { $0.engine }.map { Int64($0.rawValue) },
                                 missing: check?.missing)
        }
        let none = StoredVerdict(verdict: nil, engineStatus: nil, missing: nil)
        var stored = stored
        if let before {
            stored = [:]
            for n in before.notifications.values where n.originalTransactionId == o && n.signedDate >= since {
                stored[n.uuid] = verdict(before, n)
            }
        }
        var changes: [String: StoredVerdict] = [:]
        for n in s.notifications.values where n.originalTransactionId == o && n.signedDate >= since {
            let now = verdict(s, n)
            if now != stored[n.uuid] ?? none { changes[n.uuid] = now }
        }
        return changes
    }

    /// Evicts the cached states of the keys of the events stored (by another process) since the last look.
    private func catchUp(_ c: inout Core) throws(LedgerError) {
        let (keys, last) = try c.store.keys(after: c.lastEventId)
        c.cache.invalidate(keys)
        c.lastEventId = last
    }

    /// Catches up when another connection has committed since the last look.
    private func refresh(_ c: inout Core) throws(LedgerError) {
        let v = try c.store.changeMarker()
        // A re-established PostgreSQL connection: nothing cached is trusted, and the catch-up starts at the newest
        // event (read on the new connection; ids a lost server handed out may be handed out again).
        if c.store.connectionGeneration != c.generation {
            c.generation = c.store.connectionGeneration
            c.cache.removeAll()
            c.lastEventId = v
            c.dataVersion = v
            return
        }
        guard v != c.dataVersion else { return }
        try catchUp(&c)
        c.dataVersion = v
    }

    /// Runs `body` under the lock with the store, after other processes' commits were looked for (bulk import's
    /// probe for payloads stored already).
    func withRefreshedStore<T>(_ body: (any LedgerStorage) throws(LedgerError) -> T) throws(LedgerError) -> T {
        try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return try body(c.store)
        }
    }

    /// A stored event, decoded (it was verified when stored); a row that does not decode is a storage error naming it.
    private func decode(_ id: Int64, _ kind: LedgerEventKind, _ signed: String) throws(LedgerError) -> LedgerEvent {
        do {
            return try LedgerEvent(stored: signed, kind: kind, identity: identity)
        } catch {
            throw LedgerError(statusCode: error.statusCode, reason: error.reason, message: "stored event \(id): \(error.message)")
        }
    }

    /// A stored event's facts, read from its stored text (`EventFacts(stored:)`).
    private func storedFacts(_ id: Int64, _ kind: LedgerEventKind, _ digest: String, _ stored: String,
                             _ store: any LedgerStorage) throws(LedgerError) -> EventFacts {
        try EventFacts(stored: stored, id: id, kind: kind, digest: digest, identity: identity,
                       header: { d throws(LedgerError) in try store.header(d, id) },
                       expand: { s throws(LedgerError) in try store.expand(s, id) })
    }

    /// The state of the events indexed under `keys` (each event decoded once), starting from `state`, which holds
    /// the events `seen`.
    private func load(_ keys: [LedgerKey], into state: LedgerState = LedgerState(), seen: inout Set<Int64>,
                      _ c: inout Core) throws(LedgerError) -> LedgerState {
        var state = state
        var read = 0
        var ids = seen
        let store = c.store
        for key in keys {
            try store.events(keyed: key) { id, kind, digest, stored throws(LedgerError) in
                guard ids.insert(id).inserted else { return }
                read += 1
                state.apply(try storedFacts(id, kind, digest, stored, store))
            }
        }
        seen = ids
        c.rowsRead += read
        return state
    }

    /// `state` with the stored events `rows` not `seen` yet applied (`load`'s step, for rows read already).
    private func apply(_ rows: [StoredKeyedEvent], to state: LedgerState, seen: inout Set<Int64>,
                       _ c: inout Core) throws(LedgerError) -> LedgerState {
        var state = state
        for e in rows where seen.insert(e.id).inserted {
            state.apply(try storedFacts(e.id, e.kind, e.digest, e.stored, c.store))
            c.rowsRead += 1
        }
        return state
    }

    private func load(_ keys: [LedgerKey], _ c: inout Core) throws(LedgerError) -> LedgerState {
        var seen: Set<Int64> = []
        return try load(keys, seen: &seen, &c)
    }

    /// Subscription `o`'s state, cached.
    private func subscriptionState(_ o: String, _ c: inout Core) throws(LedgerError) -> LedgerState {
        let key = LedgerKey.subscription(o)
        if let s = c.cache.get(key) { return s }
        let s = try load([key], &c)
        c.cache.put(key, s, keys: [key], bytes: LedgerKey.estimatedBytes(s))
        return s
    }

    /// Customer `id`'s state (normalized id), cached: the events that name it, and every event of the original
    /// transactions they name.
    private func customerState(_ id: String, _ c: inout Core) throws(LedgerError) -> LedgerState {
        let key = LedgerKey.customer(id)
        if let s = c.cache.get(key) { return s }
        var seen: Set<Int64> = []
        // PostgreSQL: the customer's events and its originals' in one round trip; an original they name that the
        // read did not find (none expected) is read on its own.
        let read = try c.store.customerEvents(key)
        let own = if let read { try apply(read[key] ?? [], to: LedgerState(), seen: &seen, &c) } else {
            try load([key], seen: &seen, &c)
        }
        let originals = LedgerKey.originals(in: own)
        var s = own
        var unread: [LedgerKey] = []
        for o in originals {
            guard let rows = read?[o] else { unread.append(o); continue }
            s = try apply(rows, to: s, seen: &seen, &c)
        }
        s = try load(unread, into: s, seen: &seen, &c)
        c.cache.put(key, s, keys: [key] + originals, bytes: LedgerKey.estimatedBytes(s))
        return s
    }

    /// What ingesting `event` means now (the oracle's check against its subscription's state).
    private func resultNow(_ event: LedgerEvent, stored: Bool, _ c: inout Core) throws(LedgerError) -> LedgerIngestResult {
        guard let n = event.notification, n.isSubscription, let o = n.originalTransactionId else {
            return LedgerState().ingestResult(for: event, stored: stored)
        }
        return try subscriptionState(o, &c).ingestResult(for: event, stored: stored)
    }

    /// Indexes the events of a database made before the index existed (once, under the write lock: a second opener
    /// finds it done), and records the verdicts of their notifications.
    private func buildIndexIfNeeded(_ c: inout Core) throws(LedgerError) {
        let store = c.store
        guard try store.backfillPending() else { return }
        try store.beginWrite()
        do throws(LedgerError) {
            if try store.backfillPending() {
                var subscriptions: Set<String> = []
                var after: Int64 = 0
                while true {
                    var page: [(Int64, LedgerEventKind, String)] = []
                    try store.events(after: after, limit: 1000) { id, kind, signed throws(LedgerError) in page.append((id, kind, signed)) }
                    for (id, kind, signed) in page {
                        let event = try decode(id, kind, signed)
                        let keys = LedgerKey.keys(of: event)
                        try store.index(id, keys: keys, versions: LedgerKey.versions(of: event))
                        for k in keys where k.kind == "s" { subscriptions.insert(k.value) }
                    }
                    guard let last = page.last, page.count == 1000 else { break }
                    after = last.0
                }
                for o in subscriptions.sorted() { try storeVerdicts(of: o, try load([.subscription(o)], &c), store) }
                try store.backfillDone()
            }
            try store.commit()
        } catch {
            store.rollback()
            throw error
        }
    }

    // MARK: queries

    /// Subscription `originalTransactionId` at instant `at`, from the facts signed at or before `asOf` (both
    /// milliseconds since 1970; nil: now); nil when unknown. `asOf` = `at` answers as known then; the default (now)
    /// uses everything the ledger knows (docs/ledger.md, "Bitemporal queries"). Negative instants: `invalidArgument`.
    public func subscription(_ originalTransactionId: String, at: Int64? = nil, asOf: Int64? = nil) throws(LedgerError) -> LedgerSubscription? {
        let (t, k) = try Self.instants(at: at, asOf: asOf)
        return try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return try subscriptionState(originalTransactionId, &c).subscription(originalTransactionId, at: t, asOf: k)
        }
    }

    /// Customer `id` (an appAccountToken, or the originalTransactionId of purchases without one) at `at`, from the
    /// facts signed at or before `asOf` (nil: now; as `subscription(_:at:asOf:)`).
    public func customer(_ id: String, at: Int64? = nil, asOf: Int64? = nil) throws(LedgerError) -> LedgerCustomer {
        let (t, k) = try Self.instants(at: at, asOf: asOf)
        let key = LedgerCustomerKey.normalize(id)
        return try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return try customerState(key, &c).customer(key, at: t, asOf: k)
        }
    }

    /// A query's instant and knowledge time: nil is now (one clock reading for both, so the default is exactly
    /// `asOf` = `at` = now); an `asOf` before `at` is allowed (what was believed then about a later instant).
    static func instants(at: Int64?, asOf: Int64?) throws(LedgerError) -> (at: Int64, asOf: Int64) {
        if let at, at < 0 { throw .argument("at must be >= 0 (milliseconds since 1970), got \(at)") }
        if let asOf, asOf < 0 { throw .argument("asOf must be >= 0 (milliseconds since 1970), got \(asOf)") }
        let now = at == nil || asOf == nil ? Timestamp.nowMilliseconds() : 0
        return (at ?? now, asOf ?? now)
    }

    /// How many disagreements a summary lists unless asked otherwise (the C ABI and the bindings: always).
    public static let summaryDisagreementLimit = 1000

    /// Counts, and the oracle's disagreements: read from storage (counts the commits keep, and the verdicts recorded
    /// on the notifications' rows when their subscription last changed). The list holds at most `disagreementLimit`
    /// (0...1,000,000): every contradiction first, then the incomplete histories, each by signedDate; `contradictions`
    /// and `incompleteHistories` count them all.
    public func summary(disagreementLimit: Int = Ledger.summaryDisagreementLimit) throws(LedgerError) -> LedgerSummary {
        guard (0...1_000_000).contains(disagreementLimit) else {
            throw .argument("disagreementLimit must be in 0...1000000, got \(disagreementLimit)")
        }
        return try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            let events = try c.store.eventCount()
            let n = try c.store.counts()
            return LedgerSummary(
                events: events, notifications: n.notifications, transactions: n.transactions,
                transactionVersions: n.transactionVersions, renewalInfos: n.renewalInfos, subscriptions: n.subscriptions,
                customers: n.customers, checkedNotifications: n.checkedNotifications,
                disagreements: try c.store.disagreements(after: nil, limit: disagreementLimit),
                contradictions: n.contradictions, incompleteHistories: n.incompleteHistories)
        }
    }

    /// Every disagreement of the oracle a page at a time, in the summary's order (every contradiction first, then the
    /// incomplete histories, each by signedDate, then notificationUUID; C: appstore_ledger_query_disagreements): at
    /// most `limit` (1...10000) after `after` (the `next` of the previous page; nil or "": the first page). `next` is
    /// nil after the last page. Each page is read along an index, so it costs its own rows at any size; a verdict that
    /// changes between two pages (a catch-up turning an incomplete history into AGREES) is listed at most once.
    public func disagreements(after: String? = nil, limit: Int = 1000) throws(LedgerError) -> LedgerDisagreementPage {
        guard (1...10000).contains(limit) else { throw .argument("limit must be 1...10000, got \(limit)") }
        let cursor = try after.flatMap { text throws(LedgerError) in
            text.isEmpty ? nil : try LedgerDisagreementCursor(text)
        }
        return try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            // One row more than the page: whether another page follows, without an empty last one.
            var rows = try c.store.disagreements(after: cursor, limit: limit + 1)
            var next: String?
            if rows.count > limit {
                rows.removeLast(rows.count - limit)
                next = rows.last.map { LedgerDisagreementCursor($0).text }
            }
            return LedgerDisagreementPage(disagreements: rows, next: next)
        }
    }

    /// Subscription ids (originalTransactionIds of auto-renewable subscriptions) a page at a time, in the database's
    /// order (bytes on SQLite; the database's collation on PostgreSQL) (C: appstore_ledger_query_subscription_ids): at most `limit` (1...10000) after `after` (the `next` of the previous
    /// page, which is its last id; nil or "": the first page). `next` is nil after the last page. Read along the
    /// storage's index: a page costs its own rows at any size, and nothing is held between pages.
    public func subscriptionIds(after: String? = nil, limit: Int = 1000) throws(LedgerError) -> LedgerIdPage {
        try keyPage("s", after: after, limit: limit)
    }

    /// Customer ids (appAccountTokens in lowercase, else originalTransactionIds), as `subscriptionIds` (C:
    /// appstore_ledger_query_customer_ids): each is what `customer(_:)` answers for.
    public func customerIds(after: String? = nil, limit: Int = 1000) throws(LedgerError) -> LedgerIdPage {
        try keyPage("c", after: after, limit: limit)
    }

    private func keyPage(_ kind: String, after: String?, limit: Int) throws(LedgerError) -> LedgerIdPage {
        guard (1...10000).contains(limit) else { throw .argument("limit must be 1...10000, got \(limit)") }
        return try core.withLock { c throws(LedgerError) in
            // One row more than the page: whether another page follows, without an empty last one.
            var ids = try c.store.keyPage(kind: kind, after: after?.isEmpty == false ? after : nil, limit: limit + 1)
            var next: String?
            if ids.count > limit {
                ids.removeLast(ids.count - limit)
                next = ids.last
            }
            return LedgerIdPage(ids: ids, next: next)
        }
    }

    /// The newest stored events with an id below `before`, as records (`recentEvents`).
    func recentRecords(before: Int64, limit: Int) throws(LedgerError) -> [LedgerEventRecord] {
        try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            var out: [LedgerEventRecord] = []
            for row in try c.store.recentEvents(before: before, limit: limit) {
                let event = try decode(row.id, row.kind, row.signed)
                out.append(LedgerEventRecord(eventId: row.id, receivedAt: row.receivedAt, result: try resultNow(event, stored: true, &c)))
            }
            return out
        }
    }

    /// Stored events decoded by this object so far (tests: opening reads none).
    var storedEventsRead: Int { core.withLock { $0.rowsRead } }

    /// The cache's entries, bytes, hits and evictions (tests).
    var cacheStatistics: (entries: Int, bytes: Int, hits: Int, evictions: Int) {
        core.withLock { c in (c.cache.count, c.cache.bytes, c.cache.hits, c.cache.evictions) }
    }

    /// The whole history's state engine (a value: later ingests do not change it), built by reading every stored
    /// event: O(history) in time and memory, for tests and tools; `serve`, `sync` and the queries never use it.
    public func state() throws(LedgerError) -> LedgerState {
        try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            var state = LedgerState()
            var read = 0
            try c.store.events(after: 0) { id, kind, signed throws(LedgerError) in
                read += 1
                state.apply(try decode(id, kind, signed))
            }
            c.rowsRead += read
            return state
        }
    }

    /// Verifies every stored event again with the ledger's verifier; the ids and failures of those it refuses now.
    /// (With online checks off, verification happens at each payload's own signedDate, so the answer does not change
    /// with time; with them on, a certificate revoked since is found.)
    public func reverify() throws(LedgerError) -> [(eventId: Int64, failure: VerificationFailure)] {
        try reverifyAll().refused.map { ($0.eventId, $0.failure) }
    }

    /// The same, as the spec's model (C: appstore_ledger_reverify): how many were checked, and the refused ones.
    public func reverifyReport() throws(LedgerError) -> LedgerReverifyResult {
        let (checked, refused) = try reverifyAll()
        return LedgerReverifyResult(checked: Int64(checked), refused: refused.map {
            LedgerRefusedEvent(eventId: $0.eventId, kind: $0.kind, status: $0.failure.statusCode.name,
                               reason: $0.failure.reason.name, message: $0.failure.message)
        })
    }

    /// The ledger's own stored values (its identity's) with an id after `after`, at most 1,000, each as the JWS it was
    /// given: read under the lock a page at a time, so a large ledger is never held in memory at once (`reverify`,
    /// export).
    func storedPage(after: Int64) throws(LedgerError) -> [(id: Int64, kind: LedgerEventKind, signed: String)] {
        var page: [(id: Int64, kind: LedgerEventKind, signed: String)] = []
        try core.withLock { c throws(LedgerError) in
            try c.store.events(after: after, limit: 1000) { id, kind, signed throws(LedgerError) in page.append((id, kind, signed)) }
        }
        return page
    }

    /// Reads the ledger's own events (`storedPage`), and verifies them outside the lock.
    private func reverifyAll() throws(LedgerError)
        -> (checked: Int, refused: [(eventId: Int64, kind: LedgerEventKind, failure: VerificationFailure)]) {
        var checked = 0
        var refused: [(eventId: Int64, kind: LedgerEventKind, failure: VerificationFailure)] = []
        var after: Int64 = 0
        while true {
            let page = try storedPage(after: after)
            for (id, kind, signed) in page {
                checked += 1
                if let f = LedgerEvent.verify(kind, signed, with: verifier).failure { refused.append((id, kind, f)) }
            }
            guard let last = page.last, page.count == 1000 else { return (checked, refused) }
            after = last.0
        }
    }
}
