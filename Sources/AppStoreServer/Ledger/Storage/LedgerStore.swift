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
    private let insertHeader: SQLiteStatement
    private let selectHeader: SQLiteStatement
    private let storedRowsStatement: SQLiteStatement
    private let payloadStored: SQLiteStatement
    /// The JWS headers read back (`StoredSigned`).
    private let headers = StoredHeaderCache()
    private let eventsKeyed: SQLiteStatement
    private let keysAfter: SQLiteStatement
    private let insertKey: SQLiteStatement
    private let insertVersion: SQLiteStatement
    private let verdictsOf: SQLiteStatement
    private let updateVerdict: SQLiteStatement
    private let keyPageFirst: SQLiteStatement
    private let keyPageAfter: SQLiteStatement
    private let maxEvent: SQLiteStatement
    private let countOf: SQLiteStatement

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
        eventsKeyed = try db.prepare(
            "SELECT e.id, e.kind, e.payload_sha256, e.signed FROM event_keys k JOIN events e ON e.id = k.event_id "
            + "WHERE k.kind = ? AND k.key = ? AND e.bundle_id = ? AND e.environment = ?")
        keysAfter = try db.prepare("SELECT DISTINCT kind, key FROM event_keys WHERE event_id > ? AND event_id <= ?")
        countOf = try db.prepare("SELECT n FROM ledger_counts WHERE name = ?")
        insertKey = try db.prepare("INSERT OR IGNORE INTO event_keys (kind, key, event_id) VALUES (?, ?, ?)")
        insertVersion = try db.prepare("INSERT OR IGNORE INTO ledger_versions (kind, digest) VALUES (?, ?)")
        verdictsOf = try db.prepare(
            "SELECT notification_uuid, verdict, engine_status, missing FROM notifications WHERE original_transaction_id = ?")
        updateVerdict = try db.prepare(
            "UPDATE notifications SET verdict = ?, engine_status = ?, missing = ? WHERE notification_uuid = ?")
        keyPageFirst = try db.prepare("SELECT DISTINCT key FROM event_keys WHERE kind = ? ORDER BY key LIMIT ?")
        keyPageAfter = try db.prepare("SELECT DISTINCT key FROM event_keys WHERE kind = ? AND key > ? ORDER BY key LIMIT ?")
        maxEvent = try db.prepare("SELECT coalesce(max(id), 0) FROM events")
        insertHeader = try db.prepare("INSERT OR IGNORE INTO jws_headers (digest, header) VALUES (?, ?)")
        selectHeader = try db.prepare("SELECT header FROM jws_headers WHERE digest = ?")
        storedRowsStatement = try db.prepare("SELECT id, kind, signed FROM events WHERE id > ? ORDER BY id LIMIT ?")
        payloadStored = try db.prepare("SELECT signed FROM events WHERE payload_sha256 = ?")
        try Self.compactStoredEvents(db)
        // Last: nothing after it throws, so a started thread always has the store (and its deinit) to stop it.
        checkpointer = path == ":memory:" ? nil : WALCheckpointer.start(path: path)
        checkpointer?.install(on: db)
    }

    deinit { checkpointer?.stop(db) }

    /// Stores `event` in the caller's transaction; its row id, or nil when the same payload is already stored.
    func insert(_ event: LedgerEvent, receivedAt: Int64) throws(LedgerError) -> Int64? {
        let (signed, jwsHeaders) = event.storedForm
        for h in jwsHeaders { try insertHeader.run([.text(h.digest), .text(h.text)], "cannot store a JWS header") }
        try insertEvent.run(LedgerRows.event(event, receivedAt: receivedAt, signed: signed))
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
            let id = eventsAfter.int64(0)
            try each(id, LedgerEventKind(rawValue: eventsAfter.text(1) ?? ""), try expand(eventsAfter.text(2) ?? "", id))
        }
    }

    func events(after id: Int64, limit: Int, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError) {
        try eventsPage.bind([.int(id)] + LedgerRows.identity(identity) + [.int(Int64(limit))])
        defer { try? eventsPage.bind([]) }  // reset: no read transaction left open
        while try eventsPage.step() {
            let id = eventsPage.int64(0)
            try each(id, LedgerEventKind(rawValue: eventsPage.text(1) ?? ""), try expand(eventsPage.text(2) ?? "", id))
        }
    }

    func recentEvents(before: Int64, limit: Int) throws(LedgerError) -> [StoredEventRow] {
        let s = recentEventsStatement
        try s.bind([.int(before)] + LedgerRows.identity(identity) + [.int(Int64(limit))])
        defer { try? s.bind([]) }  // reset: no read transaction left open
        var rows: [StoredEventRow] = []
        while try s.step() {
            let id = s.int64(0)
            rows.append(StoredEventRow(id: id, kind: LedgerEventKind(rawValue: s.text(1) ?? ""),
                                       signed: try expand(s.text(2) ?? "", id), receivedAt: s.int64(3)))
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
    func eventCount() throws(LedgerError) -> Int64 { try count("events") }

    /// A count the commits keep (`ledger_counts`, schema migration 5).
    private func count(_ name: String) throws(LedgerError) -> Int64 {
        try countOf.bind([.text(name)])
        defer { try? countOf.bind([]) }  // reset: no read transaction left open
        guard try countOf.step() else { throw .storage("the ledger's count \(QuotedText.quote(name)) is missing") }
        return countOf.int64(0)
    }

    /// The JWS an `events.signed` text holds (`StoredSigned`).
    func expand(_ stored: String, _ id: Int64) throws(LedgerError) -> String {
        try StoredSigned.expand(stored, eventId: id) { digest throws(LedgerError) in
            try headers.text(digest, eventId: id) { d throws(LedgerError) in try storedHeader(d) }
        }
    }

    func header(_ digest: String, _ id: Int64) throws(LedgerError) -> String? {
        try headers.text(digest, eventId: id) { d throws(LedgerError) in try storedHeader(d) }
    }

    func storedPayloads(_ digests: Set<String>) throws(LedgerError) -> [String: Substring] {
        defer { try? payloadStored.bind([]) }  // reset: no read transaction left open
        var found: [String: Substring] = [:]
        for d in digests {
            try payloadStored.bind([.text(d)])
            if try payloadStored.step() { found[d] = StoredSigned.signature(ofStored: payloadStored.text(0) ?? "") }
        }
        return found
    }

    func storedHeader(_ digest: String) throws(LedgerError) -> String? {
        try selectHeader.bind([.text(digest)])
        defer { try? selectHeader.bind([]) }  // reset: no read transaction left open
        return try selectHeader.step() ? selectHeader.text(0) : nil
    }

    func storedRows(after id: Int64, limit: Int) throws(LedgerError) -> [(id: Int64, kind: String, stored: String)] {
        let s = storedRowsStatement
        try s.bind([.int(id), .int(Int64(limit))])
        defer { try? s.bind([]) }  // reset: no read transaction left open
        var rows: [(id: Int64, kind: String, stored: String)] = []
        while try s.step() { rows.append((s.int64(0), s.text(1) ?? "", s.text(2) ?? "")) }
        return rows
    }

    /// Rewrites the events stored before `jws_headers` existed into `StoredSigned`'s form, 500 per transaction, from
    /// the cursor in `jws_compaction` (a killed process resumes where it stopped; another process's open helps).
    private static func compactStoredEvents(_ db: SQLiteConnection) throws(LedgerError) {
        let insertHeader = try db.prepare("INSERT OR IGNORE INTO jws_headers (digest, header) VALUES (?, ?)")
        let cursor = try db.prepare("SELECT after_id, last_id FROM jws_compaction")
        let page = try db.prepare("SELECT id, signed FROM events WHERE id > ? AND id <= ? ORDER BY id LIMIT 500")
        let update = try db.prepare("UPDATE events SET signed = ? WHERE id = ?")
        let advance = try db.prepare("UPDATE jws_compaction SET after_id = ?")
        // Nothing to rewrite (the usual open): no write lock taken.
        guard try db.integer("SELECT count(*) FROM jws_compaction") > 0 else { return }
        while true {
            try db.execute("BEGIN IMMEDIATE", "cannot start rewriting the stored events")
            do throws(LedgerError) {
                try cursor.bind([])
                guard try cursor.step() else { try cursor.bind([]); try db.execute("ROLLBACK", "rollback"); return }
                let (after, last) = (cursor.int64(0), cursor.int64(1))
                try cursor.bind([])
                var rows: [(Int64, String)] = []
                try page.bind([.int(after), .int(last)])
                while try page.step() { rows.append((page.int64(0), page.text(1) ?? "")) }
                try page.bind([])
                for (id, signed) in rows {
                    let (text, jwsHeaders) = StoredSigned.compact(signed)
                    guard text != signed else { continue }
                    for h in jwsHeaders { try insertHeader.run([.text(h.digest), .text(h.text)], "cannot store a JWS header") }
                    try update.run([.text(text), .int(id)], "cannot rewrite event \(id)")
                }
                if let end = rows.last?.0, end < last {
                    try advance.run([.int(end)], "cannot record the rewrite's progress")
                } else {
                    try db.execute("DELETE FROM jws_compaction", "cannot record the rewrite's end")
                }
                try db.execute("COMMIT", "cannot commit the rewritten events")
            } catch {
                try? db.execute("ROLLBACK", "rollback")
                throw error
            }
        }
    }

    func lastEventId() throws(LedgerError) -> Int64 {
        try maxEvent.bind([])
        defer { try? maxEvent.bind([]) }
        guard try maxEvent.step() else { throw .storage("max(id) returned no row") }
        return maxEvent.int64(0)
    }

    func events(keyed key: LedgerKey, _ each: (Int64, LedgerEventKind, String, String) throws(LedgerError) -> Void) throws(LedgerError) {
        let s = eventsKeyed
        try s.bind([.text(key.kind), .text(key.value)] + LedgerRows.identity(identity))
        defer { try? s.bind([]) }  // reset: no read transaction left open
        while try s.step() {
            try each(s.int64(0), LedgerEventKind(rawValue: s.text(1) ?? ""), s.text(2) ?? "", s.text(3) ?? "")
        }
    }

    func keys(after id: Int64) throws(LedgerError) -> (keys: Set<LedgerKey>, last: Int64) {
        // The mark first: an event committed meanwhile is found by the next look, not skipped.
        let last = max(id, try lastEventId())
        guard last > id else { return ([], id) }
        let s = keysAfter
        try s.bind([.int(id), .int(last)])
        defer { try? s.bind([]) }
        var keys: Set<LedgerKey> = []
        while try s.step() { keys.insert(LedgerKey(kind: s.text(0) ?? "", value: s.text(1) ?? "")) }
        return (keys, last)
    }

    func index(_ eventId: Int64, keys: [LedgerKey], versions: [(kind: String, digest: String)]) throws(LedgerError) {
        for k in keys { try insertKey.run([.text(k.kind), .text(k.value), .int(eventId)]) }
        for v in versions { try insertVersion.run([.text(v.kind), .text(v.digest)]) }
    }

    func verdicts(ofSubscription originalTransactionId: String) throws(LedgerError) -> [String: StoredVerdict] {
        let s = verdictsOf
        try s.bind([.text(originalTransactionId)])
        defer { try? s.bind([]) }
        var out: [String: StoredVerdict] = [:]
        while try s.step() {
            out[s.text(0) ?? ""] = StoredVerdict(verdict: s.text(1), engineStatus: s.isNull(2) ? nil : s.int64(2), missing: s.text(3))
        }
        return out
    }

    func setVerdict(_ uuid: String, _ v: StoredVerdict) throws(LedgerError) {
        try updateVerdict.run([v.verdict.sql, v.engineStatus.sql, v.missing.sql, .text(uuid)])
    }

    func counts() throws(LedgerError) -> LedgerCounts {
        var c = LedgerCounts()
        c.notifications = try count("notifications")
        c.transactions = try count("transactions")
        c.transactionVersions = try count("transaction_versions")
        c.renewalInfos = try count("renewal_infos")
        c.subscriptions = try count("subscriptions")
        c.customers = try count("customers")
        c.checkedNotifications = try count("checked_notifications")
        c.contradictions = try count("contradictions")
        c.incompleteHistories = try count("incomplete_histories")
        return c
    }

    func disagreements(after cursor: LedgerDisagreementCursor?, limit: Int) throws(LedgerError) -> [LedgerDisagreement] {
        let rest = try db.prepare(LedgerStoredRows.disagreementsSQL(table: "notifications", collate: "", placeholders: ("?", "?")))
        var out: [LedgerDisagreement] = []
        for verdict in LedgerStoredRows.verdicts(after: cursor) where out.count < limit {
            let left = SQLiteValue.int(Int64(limit - out.count))
            let s: SQLiteStatement
            if let cursor, verdict == cursor.verdict {
                // The cursor's own verdict: after its row.
                s = try db.prepare(LedgerStoredRows.disagreementsAfterSQL(table: "notifications", collate: "",
                                                                          placeholders: ["?", "?", "?", "?"]))
                try s.bind([.text(verdict.rawValue), .int(cursor.signedDate), .text(cursor.notificationUUID), left])
            } else {
                s = rest
                try s.bind([.text(verdict.rawValue), left])
            }
            defer { try? s.bind([]) }  // reset: no read transaction left open
            while try s.step() {
                out.append(try LedgerStoredRows.disagreement((0..<9).map { s.text(Int32($0)) }))
            }
        }
        return out
    }

    func keyPage(kind: String, after: String?, limit: Int) throws(LedgerError) -> [String] {
        let s = after == nil ? keyPageFirst : keyPageAfter
        try s.bind([.text(kind)] + (after.map { [.text($0)] } ?? []) + [.int(Int64(limit))])
        defer { try? s.bind([]) }
        var out: [String] = []
        while try s.step() { out.append(s.text(0) ?? "") }
        return out
    }

    func backfillPending() throws(LedgerError) -> Bool {
        try db.integer("SELECT count(*) FROM ledger_backfill WHERE name = 'event_keys'") > 0
    }

    func backfillDone() throws(LedgerError) {
        try db.execute("DELETE FROM ledger_backfill WHERE name = 'event_keys'", "cannot record the index as built")
    }
}
