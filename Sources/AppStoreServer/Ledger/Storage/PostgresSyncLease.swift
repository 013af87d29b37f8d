/// `sync` on a fleet (docs/ledger.md, "Fleet"): of the processes sharing one PostgreSQL ledger, one at a time reads
/// the App Store Server API's history into it, and the cursor of that reading lives in the ledger's schema
/// (`sync_cursor`), so whichever process syncs next starts where the last one stopped.
///
/// - **The lock** is a session-level advisory lock (`pg_try_advisory_lock`) on a connection of the lease's own, keyed
///   by the ledger's schema (every ledger has its own; advisory locks are per database). The server releases it when
///   that connection ends: the process exits or is killed, or the connection is lost (at once for a closed socket; for
///   a silent network cut, when TCP keepalives give up: libpq's `keepalives_*` URL parameters, the server's
///   `tcp_keepalives_*`). Never taken again by a reconnection: a lease whose connection was lost is over.
/// - **Fencing**: taking the lease increments `sync_cursor.generation`, and the cursor is written only where the
///   generation is still the lease's. A process that lost its lease without noticing yet (its connection cut while
///   it read a page from Apple) fails its next write and stops; it never overwrites its successor's cursor. What it
///   stored meanwhile is in the ledger, which stores nothing twice.
public final class LedgerSyncLease: @unchecked Sendable {
    private let state: Locked<PostgresConnection?>
    private let reconnectionsAtStart: Int
    let schema: String
    /// The lease's number: one more than the previous holder's.
    public let generation: Int64
    /// The cursor as the previous holder saved it (JSON text), nil when none was saved yet.
    public let cursor: String?
    /// Where the cursor is, for messages: the URL without its password, and the table.
    public let location: String

    /// The advisory lock's key: `sync ` and the schema's name (FNV-1a, 64 bits), apart from the writers' keys.
    static func key(schema: String) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in "appstoreserver sync \(schema)".utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return Int64(bitPattern: h)
    }

    private init(db: PostgresConnection, schema: String, generation: Int64, cursor: String?) {
        state = Locked(db)
        reconnectionsAtStart = db.reconnections
        self.schema = schema
        self.generation = generation
        self.cursor = cursor
        location = "\(db.shownURL), table \(schema).sync_cursor"
    }

    deinit { release() }

    /// What `acquire` found.
    public enum Attempt: Sendable {
        case acquired(LedgerSyncLease)
        /// Another process holds the lease: who (as it said when it took it) and since when (ms since 1970), when known.
        case held(by: String?, since: Int64?)
    }

    /// Tries to take the lease of the PostgreSQL ledger at `url` (without waiting) for `holder` (e.g. "host pid 42").
    static func acquire(url: String, holder: String) throws(LedgerError) -> Attempt {
        let (pqURL, schema) = try PostgresLedgerStore.schema(of: url)
        let db = try PostgresConnection(url: pqURL, shownURL: url)
        try db.session("SET synchronous_commit = on", what: "cannot set synchronous_commit")
        let key = key(schema: schema)
        let got = try db.run("SELECT pg_try_advisory_lock($1)", [.int(key)], what: "cannot take the sync lock")
        guard PostgresConnection.scalar(got) == "t" else {
            let row = try db.run("SELECT holder, acquired_at FROM \(schema).sync_cursor WHERE singleton = 1",
                                 what: "cannot read the sync cursor").first
            return .held(by: row?.first ?? nil, since: row.flatMap { $0.count > 1 ? $0[1] : nil }.flatMap { Int64($0) })
        }
        let rows = try db.run("""
            INSERT INTO \(schema).sync_cursor AS c (singleton, generation, holder, acquired_at) VALUES (1, 1, $1, $2)
            ON CONFLICT (singleton) DO UPDATE SET generation = c.generation + 1, holder = excluded.holder,
              acquired_at = excluded.acquired_at
            RETURNING generation, cursor
            """, [.text(holder), .int(Timestamp.nowMilliseconds())], what: "cannot take the sync cursor")
        guard let row = rows.first, row.count == 2, let generation = row[0].flatMap({ Int64($0) }) else {
            throw .storage("the sync cursor table returned an unexpected row")
        }
        return .acquired(LedgerSyncLease(db: db, schema: schema, generation: generation, cursor: row[1]))
    }

    /// Whether the lease still holds: its connection never lost, and no later generation in the table.
    public func isHeld() -> Bool {
        state.withLock { db in
            guard let c = db else { return false }
            let rows = try? c.run("SELECT generation FROM \(schema).sync_cursor WHERE singleton = 1", what: "sync lease")
            guard c.reconnections == reconnectionsAtStart, PostgresConnection.scalar(rows ?? []) == String(generation) else {
                db = nil  // over: its connection (and whatever the server still holds of it) goes
                return false
            }
            return true
        }
    }

    /// Saves the cursor (durable when this returns). Throws `storage` when the lease was lost (its connection, or a
    /// later generation: another process took over), after which the lease is released.
    public func save(_ cursor: String) throws(LedgerError) {
        try state.withLock { db throws(LedgerError) in
            guard let c = db else { throw .storage("the sync lease on \(location) was released") }
            let rows = try c.run("""
                UPDATE \(schema).sync_cursor SET cursor = $1, saved_at = $2 WHERE singleton = 1 AND generation = $3
                RETURNING 1
                """, [.text(cursor), .int(Timestamp.nowMilliseconds()), .int(generation)], what: "cannot save the sync cursor")
            guard !rows.isEmpty, c.reconnections == reconnectionsAtStart else {
                db = nil
                throw .storage("the sync lease on \(location) was lost (its connection to the server, or another process "
                    + "took over): this sync stops; the process holding the lease now continues from the cursor")
            }
        }
    }

    /// Lets the lease go (another process may take it at once); idempotent.
    public func release() {
        state.withLock { db in
            guard let c = db else { return }
            _ = try? c.run("SELECT pg_advisory_unlock($1)", [.int(Self.key(schema: schema))], what: "sync unlock")
            db = nil
        }
    }
}

extension Ledger {
    /// Whether the ledger keeps `sync`'s cursor itself, with a lease for one syncing process at a time (PostgreSQL);
    /// false: the tool keeps it in a file beside the ledger (SQLite).
    public var keepsSyncCursor: Bool { url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") }

    /// Tries to take the ledger's sync lease for `holder` (a name for messages: host and process id), without
    /// waiting; `.held` when another process holds it. PostgreSQL only (`keepsSyncCursor`).
    public func acquireSyncLease(holder: String) throws(LedgerError) -> LedgerSyncLease.Attempt {
        guard keepsSyncCursor else {
            throw .configuration("a SQLite ledger keeps no sync cursor: the tool keeps it in a file beside the ledger")
        }
        return try LedgerSyncLease.acquire(url: url, holder: holder)
    }
}
