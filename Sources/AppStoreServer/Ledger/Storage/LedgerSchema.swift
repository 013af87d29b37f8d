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
    ]
    static var version: Int64 { Int64(migrations.count) }

    /// Brings the database to `version`, each migration in its own transaction; refuses a newer database.
    static func migrate(_ db: SQLiteConnection, path: String) throws(LedgerError) {
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
            try db.execute("COMMIT", "cannot commit the schema migration")
        } catch {
            try? db.execute("ROLLBACK", "rollback")
            throw error
        }
    }
}
