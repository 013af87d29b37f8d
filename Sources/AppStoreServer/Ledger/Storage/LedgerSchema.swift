/// The ledger's SQLite schema, versioned with `PRAGMA user_version` and migrated on open (docs/ledger.md, "Tables").
///
/// `events` is the ledger: every distinct signed value, exactly as received; the state is rebuilt from it alone. The
/// other tables are the newest version of each transaction, renewal info and notification, kept for readers in SQL
/// (upserted only by a newer signedDate, the same order the engine uses, so they never roll back either).
enum LedgerSchema {
    /// Migration n brings user_version n-1 to n. Append, never edit: a database records how far it got.
    static let migrations: [String] = [
        """
        CREATE TABLE events (
          id INTEGER PRIMARY KEY,
          kind TEXT NOT NULL CHECK (kind IN ('NOTIFICATION', 'TRANSACTION', 'RENEWAL_INFO')),
          payload_sha256 TEXT NOT NULL UNIQUE,
          signed TEXT NOT NULL,
          signed_date INTEGER,
          received_at INTEGER NOT NULL
        );
        CREATE TABLE transactions (
          transaction_id TEXT PRIMARY KEY,
          original_transaction_id TEXT NOT NULL,
          product_id TEXT,
          product_type TEXT,
          app_account_token TEXT,
          purchase_date INTEGER,
          expires_date INTEGER,
          revocation_date INTEGER,
          signed_date INTEGER NOT NULL,
          payload TEXT NOT NULL,
          event_id INTEGER NOT NULL REFERENCES events (id)
        );
        CREATE INDEX transactions_by_original ON transactions (original_transaction_id);
        CREATE INDEX transactions_by_token ON transactions (app_account_token);
        CREATE TABLE renewal_infos (
          original_transaction_id TEXT PRIMARY KEY,
          auto_renew_status INTEGER,
          auto_renew_product_id TEXT,
          is_in_billing_retry_period INTEGER,
          grace_period_expires_date INTEGER,
          expiration_intent INTEGER,
          signed_date INTEGER NOT NULL,
          payload TEXT NOT NULL,
          event_id INTEGER NOT NULL REFERENCES events (id)
        );
        CREATE TABLE notifications (
          notification_uuid TEXT PRIMARY KEY,
          notification_type TEXT,
          subtype TEXT,
          status INTEGER,
          original_transaction_id TEXT,
          transaction_id TEXT,
          signed_date INTEGER NOT NULL,
          payload TEXT NOT NULL,
          event_id INTEGER NOT NULL REFERENCES events (id)
        );
        CREATE INDEX notifications_by_original ON notifications (original_transaction_id);
        """,
        // Schema version 2: the ledger's identity (docs/ledger.md, "Identity"), and the identity each event was verified for.
        // A 0.3.0 ledger's rows are filled in by `migrate` from its events, in the same transaction.
        """
        CREATE TABLE ledger_identity (
          singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          app_apple_id INTEGER
        );
        ALTER TABLE events ADD COLUMN bundle_id TEXT;
        ALTER TABLE events ADD COLUMN environment TEXT;
        ALTER TABLE events ADD COLUMN app_apple_id INTEGER;
        """,
        // Schema version 3: each distinct JWS header (its certificate chain) stored once (docs/ledger.md, "Storage layout",
        // `StoredSigned`). The events stored before are rewritten after the migration, in batches of their own
        // (`LedgerStore.compactStoredEvents`): the cursor row says how far it got, and goes when it is done.
        """
        CREATE TABLE jws_headers (
          digest TEXT PRIMARY KEY,
          header TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE jws_compaction (
          singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
          after_id INTEGER NOT NULL,
          last_id INTEGER NOT NULL
        );
        INSERT INTO jws_compaction SELECT 1, 0, id FROM events ORDER BY id DESC LIMIT 1;
        """,
        // Per-key queries (docs/ledger.md, "Queries"): the events' index, filled by `Ledger.open` for events stored
        // before it existed.
        """
        CREATE TABLE event_keys (
          kind TEXT NOT NULL,
          key TEXT NOT NULL,
          event_id INTEGER NOT NULL,
          PRIMARY KEY (kind, key, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX event_keys_by_event ON event_keys (event_id);
        CREATE TABLE ledger_versions (
          kind TEXT NOT NULL,
          digest TEXT NOT NULL,
          PRIMARY KEY (kind, digest)
        ) WITHOUT ROWID;
        ALTER TABLE notifications ADD COLUMN verdict TEXT;
        ALTER TABLE notifications ADD COLUMN engine_status INTEGER;
        ALTER TABLE notifications ADD COLUMN missing TEXT;
        CREATE INDEX notifications_checked ON notifications (verdict) WHERE verdict IS NOT NULL;
        CREATE TABLE ledger_backfill (name TEXT PRIMARY KEY);
        INSERT INTO ledger_backfill VALUES ('event_keys');
        """,
        // The summary's counts kept by the commit that changes them (docs/ledger.md, "Scale"): triggers in the same
        // transaction as the rows, so a count is never ahead of or behind its table, and `summary` reads one row per
        // count instead of counting millions (0.5 s at 1M events). A replaced row (an upsert's update) is no new row.
        """
        CREATE TABLE ledger_counts (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO ledger_counts SELECT 'events', count(*) FROM events;
        INSERT INTO ledger_counts SELECT 'notifications', count(*) FROM notifications;
        INSERT INTO ledger_counts SELECT 'checked_notifications', count(*) FROM notifications WHERE verdict IS NOT NULL;
        INSERT INTO ledger_counts SELECT 'transactions', count(*) FROM transactions WHERE transaction_id <> '';
        INSERT INTO ledger_counts SELECT 'transaction_versions', count(*) FROM ledger_versions WHERE kind = 't';
        INSERT INTO ledger_counts SELECT 'renewal_infos', count(*) FROM ledger_versions WHERE kind = 'r';
        INSERT INTO ledger_counts SELECT 'subscriptions', count(DISTINCT key) FROM event_keys WHERE kind = 's';
        INSERT INTO ledger_counts SELECT 'customers', count(DISTINCT key) FROM event_keys WHERE kind = 'c';
        CREATE TRIGGER count_events_in AFTER INSERT ON events
          BEGIN UPDATE ledger_counts SET n = n + 1 WHERE name = 'events'; END;
        CREATE TRIGGER count_events_out AFTER DELETE ON events
          BEGIN UPDATE ledger_counts SET n = n - 1 WHERE name = 'events'; END;
        CREATE TRIGGER count_notifications_in AFTER INSERT ON notifications
          BEGIN
            UPDATE ledger_counts SET n = n + 1 WHERE name = 'notifications';
            UPDATE ledger_counts SET n = n + 1 WHERE name = 'checked_notifications' AND NEW.verdict IS NOT NULL;
          END;
        CREATE TRIGGER count_notifications_out AFTER DELETE ON notifications
          BEGIN
            UPDATE ledger_counts SET n = n - 1 WHERE name = 'notifications';
            UPDATE ledger_counts SET n = n - 1 WHERE name = 'checked_notifications' AND OLD.verdict IS NOT NULL;
          END;
        CREATE TRIGGER count_checked AFTER UPDATE OF verdict ON notifications
          WHEN (OLD.verdict IS NULL) <> (NEW.verdict IS NULL)
          BEGIN
            UPDATE ledger_counts SET n = n + CASE WHEN NEW.verdict IS NULL THEN -1 ELSE 1 END
              WHERE name = 'checked_notifications';
          END;
        CREATE TRIGGER count_transactions_in AFTER INSERT ON transactions WHEN NEW.transaction_id <> ''
          BEGIN UPDATE ledger_counts SET n = n + 1 WHERE name = 'transactions'; END;
        CREATE TRIGGER count_transactions_out AFTER DELETE ON transactions WHEN OLD.transaction_id <> ''
          BEGIN UPDATE ledger_counts SET n = n - 1 WHERE name = 'transactions'; END;
        CREATE TRIGGER count_versions_in AFTER INSERT ON ledger_versions WHEN NEW.kind IN ('t', 'r')
          BEGIN
            UPDATE ledger_counts SET n = n + 1
              WHERE name = CASE NEW.kind WHEN 't' THEN 'transaction_versions' ELSE 'renewal_infos' END;
          END;
        CREATE TRIGGER count_versions_out AFTER DELETE ON ledger_versions WHEN OLD.kind IN ('t', 'r')
          BEGIN
            UPDATE ledger_counts SET n = n - 1
              WHERE name = CASE OLD.kind WHEN 't' THEN 'transaction_versions' ELSE 'renewal_infos' END;
          END;
        CREATE TRIGGER count_keys_in AFTER INSERT ON event_keys
          WHEN NEW.kind IN ('s', 'c') AND NOT EXISTS (SELECT 1 FROM event_keys
            WHERE kind = NEW.kind AND key = NEW.key AND event_id <> NEW.event_id)
          BEGIN
            UPDATE ledger_counts SET n = n + 1 WHERE name = CASE NEW.kind WHEN 's' THEN 'subscriptions' ELSE 'customers' END;
          END;
        CREATE TRIGGER count_keys_out AFTER DELETE ON event_keys
          WHEN OLD.kind IN ('s', 'c') AND NOT EXISTS (SELECT 1 FROM event_keys WHERE kind = OLD.kind AND key = OLD.key)
          BEGIN
            UPDATE ledger_counts SET n = n - 1 WHERE name = CASE OLD.kind WHEN 's' THEN 'subscriptions' ELSE 'customers' END;
          END;
        """,
        // The summary's disagreements bounded (docs/ledger.md, "Disagreements"): each verdict counted by the commit
        // that sets it, and the list read along an index in its order, so a fresh ledger of a million subscriptions
        // (each first renewal an incomplete history until `sync`) answers with a count and the first page, not a
        // million rows. The index replaces `notifications_checked` (its prefix).
        """
        INSERT INTO ledger_counts SELECT 'contradictions', count(*) FROM notifications WHERE verdict = 'CONTRADICTION';
        INSERT INTO ledger_counts SELECT 'incomplete_histories', count(*) FROM notifications
          WHERE verdict = 'INCOMPLETE_HISTORY';
        CREATE TRIGGER count_verdicts_in AFTER INSERT ON notifications
          WHEN NEW.verdict IN ('CONTRADICTION', 'INCOMPLETE_HISTORY')
          BEGIN
            UPDATE ledger_counts SET n = n + 1
              WHERE name = CASE NEW.verdict WHEN 'CONTRADICTION' THEN 'contradictions' ELSE 'incomplete_histories' END;
          END;
        CREATE TRIGGER count_verdicts_out AFTER DELETE ON notifications
          WHEN OLD.verdict IN ('CONTRADICTION', 'INCOMPLETE_HISTORY')
          BEGIN
            UPDATE ledger_counts SET n = n - 1
              WHERE name = CASE OLD.verdict WHEN 'CONTRADICTION' THEN 'contradictions' ELSE 'incomplete_histories' END;
          END;
        CREATE TRIGGER count_verdicts_changed AFTER UPDATE OF verdict ON notifications
          WHEN OLD.verdict IS NOT NEW.verdict
          BEGIN
            UPDATE ledger_counts SET n = n - 1 WHERE name = CASE OLD.verdict
              WHEN 'CONTRADICTION' THEN 'contradictions' WHEN 'INCOMPLETE_HISTORY' THEN 'incomplete_histories' END;
            UPDATE ledger_counts SET n = n + 1 WHERE name = CASE NEW.verdict
              WHEN 'CONTRADICTION' THEN 'contradictions' WHEN 'INCOMPLETE_HISTORY' THEN 'incomplete_histories' END;
          END;
        DROP INDEX IF EXISTS notifications_checked;
        CREATE INDEX IF NOT EXISTS notifications_by_verdict ON notifications (verdict, signed_date, notification_uuid)
          WHERE verdict IS NOT NULL;
        """,
    ]
    static var version: Int64 { Int64(migrations.count) }

    /// Brings the database to `version` in one transaction and checks its identity against the opener's; refuses a
    /// newer database, and a database of another identity (rolled back: nothing written).
    /// `opener` nil: the recorded identity is adopted (`Ledger.open(_:recordedIdentity:)`). Returns the identity.
    static func migrate(_ db: SQLiteConnection, path: String, identity opener: LedgerIdentity?) throws(LedgerError) -> LedgerIdentity {
        try db.execute("BEGIN IMMEDIATE", "cannot start the schema migration")
        do throws(LedgerError) {
            let current = try db.integer("PRAGMA user_version")
            guard current <= version else {
                throw .configuration("the ledger database \(QuotedText.quote(path)) has schema version \(current); "
                    + "this library knows versions up to \(version): use a newer library")
            }
            if current < version {
                for n in Int(current)..<migrations.count {
                    try db.execute(migrations[n], "schema migration \(n + 1) failed")
                }
                try db.execute("PRAGMA user_version = \(version)", "cannot record the schema version")
            }
            let identity = try checkIdentity(db, path: path, opener: opener)
            try db.execute("COMMIT", "cannot commit the schema migration")
            return identity
        } catch {
            try? db.execute("ROLLBACK", "rollback")
            throw error
        }
    }

    /// The recorded identity must admit the opener's; a database without one (new, or 0.3.0) records it.
    private static func checkIdentity(_ db: SQLiteConnection, path: String, opener: LedgerIdentity?) throws(LedgerError) -> LedgerIdentity {
        let shown = QuotedText.quote(path)
        let read = try db.prepare("SELECT bundle_id, environment, app_apple_id FROM ledger_identity")
        if try read.step() {
            let recorded = LedgerIdentity(bundleId: read.text(0) ?? "", appAppleId: read.isNull(2) ? nil : read.int64(2),
                                          environment: AppStoreEnvironment(rawValue: read.text(1) ?? ""))
            guard let opener else { return recorded }
            guard recorded.admits(opener) else { throw recorded.mismatch(opener, ledger: shown) }
            return opener
        }
        var events: [(id: Int64, kind: LedgerEventKind, signed: String)] = []
        let legacy = try db.prepare("SELECT id, kind, signed FROM events WHERE bundle_id IS NULL ORDER BY id")
        while try legacy.step() {
            events.append((legacy.int64(0), LedgerEventKind(rawValue: legacy.text(1) ?? ""), legacy.text(2) ?? ""))
        }
        let identity = try LedgerIdentityMigration.identity(ofEvents: events, opener: opener, ledger: shown)
        let values: [SQLiteValue?] = [.text(identity.bundleId), .text(identity.environment.rawValue), identity.appAppleId.sql]
        try db.prepare("INSERT INTO ledger_identity (singleton, bundle_id, environment, app_apple_id) VALUES (1, ?, ?, ?)")
            .run(values, "cannot record the ledger's identity")
        try db.prepare("UPDATE events SET bundle_id = ?, environment = ?, app_apple_id = ? WHERE bundle_id IS NULL")
            .run(values, "cannot record the events' identity")
        return identity
    }
}
