import FoundationEssentials

/// The purchase ledger: verified App Store data in, who is entitled to what out, durably.
///
///     let ledger = try Ledger.open("sqlite:/var/lib/app/ledger.db", verifier: verifier)
///     let result = try ledger.ingest(notification: signedPayload)   // returns once the event is durable
///     let now = try ledger.customer(appAccountToken)                  // entitlements, subscriptions, consumables
///
/// Every input is verified with the ledger's `SignedDataVerifier` (or was, by a verifier for the same app: a
/// `LedgerEvent`); a refusal throws the verifier's `VerificationFailure` and changes nothing. An accepted value is
/// stored exactly as received, in one SQLite transaction committed with synchronous=FULL before `ingest` returns, then
/// applied to the in-memory `LedgerState`, which answers queries. Opening a ledger rebuilds the state from the stored
/// events; another process writing the same database is caught up with before each call (docs/ledger.md).
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

    struct Core {
        let store: any LedgerStorage
        var state = LedgerState()
        var lastEventId: Int64 = 0
        var dataVersion: Int64 = 0
    }

    private init(url: String, verifier: SignedDataVerifier, store: any LedgerStorage) {
        self.url = url
        self.verifier = verifier
        self.identity = LedgerIdentity(verifier)
        self.core = Locked(Core(store: store))
    }

    /// Opens (creating it if needed) the ledger at `url`: `sqlite:/path/ledger.db` (also `sqlite:///path`, and
    /// `sqlite::memory:` for a ledger that lives as long as the object), or `postgresql://user@host:port/database`
    /// (also `postgres://`; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The
    /// schema is created or migrated, and the state rebuilt from the stored events.
    ///
    /// A ledger holds the data of one app in one environment: the verifier's bundle id, environment and app Apple ID
    /// are recorded when the ledger is created, and a verifier of another identity is refused (`configurationError`,
    /// `ledgerIdentityMismatch`) before anything is read or written. PostgreSQL: `?schema=NAME` (a lowercase SQL
    /// identifier, default `appstore_ledger`) gives each app and environment its own tables in one database.
    public static func open(_ url: String, verifier: SignedDataVerifier) throws(LedgerError) -> Ledger {
        let store = try makeStore(url, identity: LedgerIdentity(verifier))
        return try open(url, verifier: verifier, store: store)
    }

    /// Opens an existing ledger with the identity it records: `verifier` gets its bundle id, environment and app
    /// Apple ID and returns the verifier to use (for tools that only read: the values were verified when stored).
    /// A ledger that records none yet (new, or empty) is refused with `configurationError`.
    public static func open(_ url: String, recordedIdentity verifier: (_ bundleId: String, _ environment: AppStoreEnvironment,
                                                                       _ appAppleId: Int64?) throws -> SignedDataVerifier) throws(LedgerError) -> Ledger {
        let store = try makeStore(url, identity: nil)
        let i = store.identity
        let v: SignedDataVerifier
        do { v = try verifier(i.bundleId, i.environment, i.appAppleId) } catch {
            throw .configuration("cannot make a verifier for the ledger's identity \(i): \(error)")
        }
        guard store.identity.admits(LedgerIdentity(v)) else { throw store.identity.mismatch(LedgerIdentity(v), ledger: QuotedText.quote(url)) }
        return try open(url, verifier: v, store: store)
    }

    private static func open(_ url: String, verifier: SignedDataVerifier, store: any LedgerStorage) throws(LedgerError) -> Ledger {
        let ledger = Ledger(url: url, verifier: verifier, store: store)
        try ledger.core.withLock { c throws(LedgerError) in
            c.dataVersion = try c.store.changeMarker()
            try ledger.catchUp(&c)
        }
        return ledger
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
        return try commits.submit(event) { batch in
            core.withLock { c in commit(batch.map(\.event), &c) }
        }.get()
    }

    /// Stores `events` in one transaction (bulk import: `importJSONLines`); each event's outcome, in order.
    func commitBatch(_ events: [LedgerEvent]) -> [Result<LedgerIngestResult, LedgerError>] {
        core.withLock { c in commit(events, &c) }
    }

    /// Stores `batch` in one transaction, then applies what was stored; each event's outcome, in order.
    private func commit(_ batch: [LedgerEvent], _ c: inout Core) -> [Result<LedgerIngestResult, LedgerError>] {
        var ids: [Int64?] = []
        do throws(LedgerError) {
            // The write lock first (BEGIN IMMEDIATE), then whatever other processes stored, then these events: the
            // state always applies events in the order the database holds them.
            try c.store.beginWrite()
            do throws(LedgerError) {
                try catchUp(&c)
                // A payload already applied, or earlier in this batch (INSERT OR IGNORE), is not stored again; the
                // others in one call (PostgreSQL: one statement for the batch).
                let fresh = batch.indices.filter { !c.state.applied.contains(batch[$0].key) }
                let stored = try c.store.insert(fresh.map { batch[$0] }, receivedAt: Timestamp.nowMilliseconds())
                ids = Array(repeating: nil, count: batch.count)
                for (i, id) in zip(fresh, stored) { ids[i] = id }
                try c.store.commit()
            } catch {
                c.store.rollback()
                throw error
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
        for (event, id) in zip(batch, ids) {
            guard let id else { continue }
            c.state.apply(event)
            c.lastEventId = max(c.lastEventId, id)
        }
        return zip(batch, ids).map { event, id in .success(c.state.ingestResult(for: event, stored: id != nil)) }
    }

    /// Applies the events stored after the last one applied (by another process, or all of them on open).
    private func catchUp(_ c: inout Core) throws(LedgerError) {
        var last = c.lastEventId
        var state = c.state
        let identity = self.identity
        try c.store.events(after: last) { id, kind, signed throws(LedgerError) in
            state.apply(try LedgerEvent(stored: signed, kind: kind, identity: identity))
            last = id
        }
        c.state = state
        c.lastEventId = last
    }

    /// Catches up when another connection has committed since the last look.
    private func refresh(_ c: inout Core) throws(LedgerError) {
        let v = try c.store.changeMarker()
        guard v != c.dataVersion else { return }
        try catchUp(&c)
        c.dataVersion = v
    }

    // MARK: queries

    /// Subscription `originalTransactionId` at instant `at`, from the facts signed at or before `asOf` (both
    /// milliseconds since 1970; nil: now); nil when unknown. `asOf` = `at` answers as known then; the default (now)
    /// uses everything the ledger knows (docs/ledger.md, "Bitemporal queries"). Negative instants: `invalidArgument`.
    public func subscription(_ originalTransactionId: String, at: Int64? = nil, asOf: Int64? = nil) throws(LedgerError) -> LedgerSubscription? {
        let (t, k) = try Self.instants(at: at, asOf: asOf)
        return try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return c.state.subscription(originalTransactionId, at: t, asOf: k)
        }
    }

    /// Customer `id` (an appAccountToken, or the originalTransactionId of purchases without one) at `at`, from the
    /// facts signed at or before `asOf` (nil: now; as `subscription(_:at:asOf:)`).
    public func customer(_ id: String, at: Int64? = nil, asOf: Int64? = nil) throws(LedgerError) -> LedgerCustomer {
        let (t, k) = try Self.instants(at: at, asOf: asOf)
        return try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return c.state.customer(id, at: t, asOf: k)
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

    /// Counts, and the oracle's disagreements.
    public func summary() throws(LedgerError) -> LedgerSummary {
        try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return c.state.summary(events: Int(try c.store.eventCount()))
        }
    }

    /// Runs `body` under the lock with the state caught up with every process's commits.
    func withRefreshedState<T>(_ body: (any LedgerStorage, LedgerState) throws(LedgerError) -> T) throws(LedgerError) -> T {
        try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return try body(c.store, c.state)
        }
    }

    /// A snapshot of the state engine (a value: later ingests do not change it).
    public func state() throws(LedgerError) -> LedgerState {
        try core.withLock { c throws(LedgerError) in
            try refresh(&c)
            return c.state
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

    /// Reads the ledger's own events under the lock (in pages, so a large ledger is not held in memory at once), and
    /// verifies them outside it.
    private func reverifyAll() throws(LedgerError)
        -> (checked: Int, refused: [(eventId: Int64, kind: LedgerEventKind, failure: VerificationFailure)]) {
        var checked = 0
        var refused: [(eventId: Int64, kind: LedgerEventKind, failure: VerificationFailure)] = []
        var after: Int64 = 0
        while true {
            var page: [(Int64, LedgerEventKind, String)] = []
            try core.withLock { c throws(LedgerError) in
                try c.store.events(after: after, limit: 1000) { id, kind, signed throws(LedgerError) in page.append((id, kind, signed)) }
            }
            for (id, kind, signed) in page {
                checked += 1
                if let f = LedgerEvent.verify(kind, signed, with: verifier).failure { refused.append((id, kind, f)) }
            }
            guard let last = page.last, page.count == 1000 else { return (checked, refused) }
            after = last.0
        }
    }
}
