import FoundationEssentials

/// The SQLite side of a ledger: the events table and the readable tables, written in one transaction per commit.
final class LedgerStore: LedgerStorage, @unchecked Sendable {
    let db: SQLiteConnection
    let path: String
    /// The ledger's identity, as recorded in the database: only events stored with it are read.
    let identity: LedgerIdentity
    private let insertEvent: SQLiteStatement
    private let upsertTransaction: SQLiteStatement
    private let upsertRenewal: SQLiteStatement
    private let upsertNotification: SQLiteStatement
    private let eventsAfter: SQLiteStatement
    private let eventsPage: SQLiteStatement
    private let dataVersionStatement: SQLiteStatement
    private let beginStatement: SQLiteStatement
    private let recentEventsStatement: SQLiteStatement
    /// Checkpoints the WAL on its own thread (nil: in memory, or it could not start; SQLite's own then).
    private let checkpointer: WALCheckpointer?
    private let commitStatement: SQLiteStatement

    /// `path` is a file path, or ":memory:".
    /// `identity` nil: the one recorded in the file is adopted.
    init(path: String, identity opener: LedgerIdentity?) throws(LedgerError) {
        self.path = path
        db = try SQLiteConnection(path: path)
        // WAL: readers never block the writer; synchronous=FULL: every COMMIT fsyncs the WAL before it returns, so
        // an acknowledged event survives a power loss too, not only a killed process (docs/ledger.md, "Durability").
        if path != ":memory:" {
            let mode = try db.prepare("PRAGMA journal_mode = WAL")
            guard try mode.step(), mode.text(0)?.lowercased() == "wal" else {
                throw .storage("the ledger database \(QuotedText.quote(path)) cannot use write-ahead logging")
            }
        }
        try db.execute("PRAGMA synchronous = FULL", "cannot set synchronous = FULL")
        try db.execute("PRAGMA foreign_keys = ON", "cannot enable foreign keys")
        identity = try LedgerSchema.migrate(db, path: path, identity: opener)
        insertEvent = try db.prepare("""
            INSERT OR IGNORE INTO events (kind, payload_sha256, signed, signed_date, received_at, bundle_id, environment,
              app_apple_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let sqlite = { (t: (String, [String])) in LedgerUpsert.sql(t, into: t.0, current: t.0) { _ in "?" } }
        upsertTransaction = try db.prepare(sqlite(LedgerUpsert.transactions))
        upsertRenewal = try db.prepare(sqlite(LedgerUpsert.renewalInfos))
        upsertNotification = try db.prepare(sqlite(LedgerUpsert.notifications))
        eventsAfter = try db.prepare("SELECT id, kind, signed FROM events WHERE id > ? AND bundle_id = ? AND environment = ? ORDER BY id")
        eventsPage = try db.prepare(
            "SELECT id, kind, signed FROM events WHERE id > ? AND bundle_id = ? AND environment = ? ORDER BY id LIMIT ?")
        dataVersionStatement = try db.prepare("PRAGMA data_version")
        beginStatement = try db.prepare("BEGIN IMMEDIATE")
        recentEventsStatement = try db.prepare(
            "SELECT id, kind, signed, received_at FROM events WHERE id < ? AND bundle_id = ? AND environment = ? "
            + "ORDER BY id DESC LIMIT ?")
        commitStatement = try db.prepare("COMMIT")
        // Last: nothing after it throws, so a started thread always has the store (and its deinit) to stop it.
        checkpointer = path == ":memory:" ? nil : WALCheckpointer.start(path: path)
        checkpointer?.install(on: db)
    }

    deinit { checkpointer?.stop(db) }

    /// Stores `event` in the caller's transaction; its row id, or nil when the same payload is already stored.
    func insert(_ event: LedgerEvent, receivedAt: Int64) throws(LedgerError) -> Int64? {
        try insertEvent.run(LedgerRows.event(event, receivedAt: receivedAt))
        guard db.changes == 1 else { return nil }
        let id = db.lastInsertRowID
        if let t = event.transaction { try upsertTransaction.run(LedgerRows.transaction(t, eventId: id)) }
        if let r = event.renewalInfo { try upsertRenewal.run(LedgerRows.renewalInfo(r, eventId: id)) }
        if let n = event.notification { try upsertNotification.run(LedgerRows.notification(n, eventId: id)) }
        return id
    }

    /// Every stored event after `id`, in storage order.
    func events(after id: Int64, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError) {
        try eventsAfter.bind([.int(id)] + LedgerRows.identity(identity))
        defer { try? eventsAfter.bind([]) }  // reset: no read transaction left open
        while try eventsAfter.step() {
            try each(eventsAfter.int64(0), LedgerEventKind(rawValue: eventsAfter.text(1) ?? ""), eventsAfter.text(2) ?? "")
        }
    }

    func events(after id: Int64, limit: Int, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError) {
        try eventsPage.bind([.int(id)] + LedgerRows.identity(identity) + [.int(Int64(limit))])
        defer { try? eventsPage.bind([]) }  // reset: no read transaction left open
        while try eventsPage.step() {
            try each(eventsPage.int64(0), LedgerEventKind(rawValue: eventsPage.text(1) ?? ""), eventsPage.text(2) ?? "")
        }
    }

    func recentEvents(before: Int64, limit: Int) throws(LedgerError) -> [StoredEventRow] {
        let s = recentEventsStatement
        try s.bind([.int(before)] + LedgerRows.identity(identity) + [.int(Int64(limit))])
        defer { try? s.bind([]) }  // reset: no read transaction left open
        var rows: [StoredEventRow] = []
        while try s.step() {
            rows.append(StoredEventRow(id: s.int64(0), kind: LedgerEventKind(rawValue: s.text(1) ?? ""),
                                       signed: s.text(2) ?? "", receivedAt: s.int64(3)))
        }
        return rows
    }

    /// BEGIN IMMEDIATE: the database's write lock now (another process's writer waits, up to the busy timeout).
    func beginWrite() throws(LedgerError) { try beginStatement.run([], "cannot start a ledger transaction") }
    func commit() throws(LedgerError) { try commitStatement.run([], "cannot commit the ledger transaction") }
    func rollback() { try? db.execute("ROLLBACK", "rollback") }
    func changeMarker() throws(LedgerError) -> Int64 { try dataVersion() }

    /// Changes when another connection (another process) has committed since the last call.
    func dataVersion() throws(LedgerError) -> Int64 {
        try dataVersionStatement.bind([])
        guard try dataVersionStatement.step() else { throw .storage("PRAGMA data_version returned no row") }
        let v = dataVersionStatement.int64(0)
        try dataVersionStatement.bind([])
        return v
    }

    /// The number of stored events.
    func eventCount() throws(LedgerError) -> Int64 { try db.integer("SELECT count(*) FROM events") }
}
