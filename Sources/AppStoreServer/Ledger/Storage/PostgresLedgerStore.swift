/// The PostgreSQL side of a ledger (docs/ledger.md, "PostgreSQL"): the same tables as SQLite's, in the schema
/// `appstore_ledger`, shared by every process that opens the same database.
///
/// Several processes ingesting overlapping streams end in exactly the state one process would reach:
/// - **writers are serialized** by a transaction-level advisory lock taken first in every write transaction (as
///   SQLite's BEGIN IMMEDIATE): event ids are then handed out in commit order, so a process that has applied the
///   events up to id n and reads `id > n` misses none, and each writer applies what the others stored before its own
///   events;
/// - **an event is stored once** (`payload_sha256` unique; `ON CONFLICT DO NOTHING`): a payload two processes both
///   received is one row, and the second ingest answers `stored: false`;
/// - **the readable rows never go back**: their upserts update only when the incoming version is newer by the
///   engine's order (`signed_date`, then the payload's bytes: `COLLATE "C"`), so whichever process writes last, each
///   row holds the newest version, as in SQLite.
/// A commit returns once the server has flushed it (`synchronous_commit = on`, set for the session).
final class PostgresLedgerStore: LedgerStorage, @unchecked Sendable {
    let db: PostgresConnection

    /// The advisory lock of ledger writers ("LEDGER" and a version, as a 64-bit key).
    static let writeLock: Int64 = 0x4C45_4447_4552_0001
    static let schema = "appstore_ledger"

    /// Migration n brings version n-1 to n (append, never edit), as `LedgerSchema` for SQLite.
    static let migrations: [String] = [
        """
        CREATE SCHEMA IF NOT EXISTS appstore_ledger;
        CREATE TABLE appstore_ledger.schema_version (version INTEGER NOT NULL);
        INSERT INTO appstore_ledger.schema_version VALUES (0);
        CREATE TABLE appstore_ledger.events (
          id BIGSERIAL PRIMARY KEY,
          kind TEXT NOT NULL CHECK (kind IN ('NOTIFICATION', 'TRANSACTION', 'RENEWAL_INFO')),
          payload_sha256 TEXT NOT NULL UNIQUE,
          signed TEXT NOT NULL,
          signed_date BIGINT,
          received_at BIGINT NOT NULL
        );
        CREATE TABLE appstore_ledger.transactions (
          transaction_id TEXT PRIMARY KEY,
          original_transaction_id TEXT NOT NULL,
          product_id TEXT,
          product_type TEXT,
          app_account_token TEXT,
          purchase_date BIGINT,
          expires_date BIGINT,
          revocation_date BIGINT,
          signed_date BIGINT NOT NULL,
          payload TEXT NOT NULL,
          event_id BIGINT NOT NULL REFERENCES appstore_ledger.events (id)
        );
        CREATE INDEX transactions_by_original ON appstore_ledger.transactions (original_transaction_id);
        CREATE INDEX transactions_by_token ON appstore_ledger.transactions (app_account_token);
        CREATE TABLE appstore_ledger.renewal_infos (
          original_transaction_id TEXT PRIMARY KEY,
          auto_renew_status INTEGER,
          auto_renew_product_id TEXT,
          is_in_billing_retry_period INTEGER,
          grace_period_expires_date BIGINT,
          expiration_intent INTEGER,
          signed_date BIGINT NOT NULL,
          payload TEXT NOT NULL,
          event_id BIGINT NOT NULL REFERENCES appstore_ledger.events (id)
        );
        CREATE TABLE appstore_ledger.notifications (
          notification_uuid TEXT PRIMARY KEY,
          notification_type TEXT,
          subtype TEXT,
          status INTEGER,
          original_transaction_id TEXT,
          transaction_id TEXT,
          signed_date BIGINT NOT NULL,
          payload TEXT NOT NULL,
          event_id BIGINT NOT NULL REFERENCES appstore_ledger.events (id)
        );
        CREATE INDEX notifications_by_original ON appstore_ledger.notifications (original_transaction_id);
        """,
    ]
    static var version: Int64 { Int64(migrations.count) }

    init(url: String) throws(LedgerError) {
        db = try PostgresConnection(url: url)
        try db.run("SET synchronous_commit = on", what: "cannot set synchronous_commit")
        try migrate()
        try db.prepare("insert_event", """
            INSERT INTO appstore_ledger.events (kind, payload_sha256, signed, signed_date, received_at)
            VALUES ($1, $2, $3, $4, $5) ON CONFLICT (payload_sha256) DO NOTHING RETURNING id
            """, parameters: 5)
        for (name, t) in [("upsert_transaction", LedgerUpsert.transactions), ("upsert_renewal_info", LedgerUpsert.renewalInfos),
                          ("upsert_notification", LedgerUpsert.notifications)] {
            try db.prepare(name, LedgerUpsert.sql(t, into: "appstore_ledger.\(t.0) AS cur", current: "cur",
                                                  collate: " COLLATE \"C\"") { "$\($0)" }, parameters: t.1.count)
        }
        try db.prepare("events_after", """
            SELECT id, kind, signed FROM appstore_ledger.events WHERE id > $1 ORDER BY id LIMIT 1000
            """, parameters: 1)
        try db.prepare("recent_events", """
            SELECT id, kind, signed, received_at FROM appstore_ledger.events WHERE id < $1 ORDER BY id DESC LIMIT $2
            """, parameters: 2)
        try db.prepare("max_event", "SELECT coalesce(max(id), 0) FROM appstore_ledger.events", parameters: 0)
    }

    /// Creates or migrates the schema, under the writers' lock (two processes opening a new database at once: one
    /// creates, the other finds it made); refuses a newer schema.
    private func migrate() throws(LedgerError) {
        try db.run("BEGIN", what: "cannot start the schema migration")
        do throws(LedgerError) {
            try db.run("SELECT pg_advisory_xact_lock($1)", [.int(Self.writeLock)], what: "cannot lock the ledger")
            let exists = try db.run("SELECT to_regclass('appstore_ledger.schema_version') IS NOT NULL",
                                    what: "cannot read the ledger's schema")
            var current: Int64 = 0
            if PostgresConnection.scalar(exists) == "t" {
                let v = try db.run("SELECT version FROM appstore_ledger.schema_version", what: "cannot read the ledger's schema version")
                current = PostgresConnection.scalar(v).flatMap { Int64($0) } ?? 0
            }
            guard current <= Self.version else {
                throw .configuration("the PostgreSQL ledger \(db.shownURL) has schema version \(current); this library "
                    + "knows versions up to \(Self.version): use a newer library")
            }
            if current < Self.version {
                for n in Int(current)..<Self.migrations.count {
                    // A multi-statement migration goes as one simple query (no parameters).
                    try db.run(Self.migrations[n], what: "schema migration \(n + 1) failed")
                }
                try db.run("UPDATE appstore_ledger.schema_version SET version = $1", [.int(Self.version)],
                           what: "cannot record the schema version")
            }
            try db.run("COMMIT", what: "cannot commit the schema migration")
        } catch {
            rollback()
            throw error
        }
    }

    func beginWrite() throws(LedgerError) {
        try db.run("BEGIN", what: "cannot start a ledger transaction")
        do throws(LedgerError) {
            try db.run("SELECT pg_advisory_xact_lock($1)", [.int(Self.writeLock)], what: "cannot lock the ledger for writing")
        } catch {
            rollback()
            throw error
        }
    }

    func commit() throws(LedgerError) { try db.run("COMMIT", what: "cannot commit the ledger transaction") }

    func rollback() { _ = try? db.run("ROLLBACK", what: "rollback") }

    func insert(_ event: LedgerEvent, receivedAt: Int64) throws(LedgerError) -> Int64? {
        let rows = try db.run("insert_event", LedgerRows.event(event, receivedAt: receivedAt), prepared: true,
                              what: "cannot store the event")
        guard let id = PostgresConnection.scalar(rows).flatMap({ Int64($0) }) else { return nil }
        if let t = event.transaction {
            try db.run("upsert_transaction", LedgerRows.transaction(t, eventId: id), prepared: true, what: "cannot store the transaction")
        }
        if let r = event.renewalInfo {
            try db.run("upsert_renewal_info", LedgerRows.renewalInfo(r, eventId: id), prepared: true, what: "cannot store the renewal info")
        }
        if let n = event.notification {
            try db.run("upsert_notification", LedgerRows.notification(n, eventId: id), prepared: true, what: "cannot store the notification")
        }
        return id
    }

    func events(after id: Int64, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError) {
        var last = id
        while true {
            let rows = try db.run("events_after", [.int(last)], prepared: true, what: "cannot read the ledger's events")
            for row in rows {
                guard row.count == 3, let i = row[0].flatMap({ Int64($0) }), let kind = row[1], let signed = row[2] else {
                    throw .storage("the ledger's events table returned an unexpected row")
                }
                try each(i, LedgerEventKind(rawValue: kind), signed)
                last = i
            }
            if rows.count < 1000 { return }
        }
    }

    func recentEvents(before: Int64, limit: Int) throws(LedgerError) -> [StoredEventRow] {
        let rows = try db.run("recent_events", [.int(before), .int(Int64(limit))], prepared: true,
                              what: "cannot read the ledger's events")
        return try rows.map { row throws(LedgerError) in
            guard row.count == 4, let id = row[0].flatMap({ Int64($0) }), let kind = row[1], let signed = row[2],
                  let at = row[3].flatMap({ Int64($0) }) else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            return StoredEventRow(id: id, kind: LedgerEventKind(rawValue: kind), signed: signed, receivedAt: at)
        }
    }

    /// The newest event id: it changes when anyone (another process) has committed an event.
    func changeMarker() throws(LedgerError) -> Int64 {
        let rows = try db.run("max_event", prepared: true, what: "cannot read the ledger's events")
        return PostgresConnection.scalar(rows).flatMap { Int64($0) } ?? 0
    }

    func eventCount() throws(LedgerError) -> Int64 {
        let rows = try db.run("SELECT count(*) FROM appstore_ledger.events", what: "cannot count the ledger's events")
        return PostgresConnection.scalar(rows).flatMap { Int64($0) } ?? 0
    }
}
