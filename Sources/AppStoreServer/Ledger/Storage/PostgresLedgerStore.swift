/// The PostgreSQL side of a ledger (docs/ledger.md, "PostgreSQL"): the same tables as SQLite's, in the schema
/// `appstore_ledger` or the one the URL names (`?schema=NAME`: one schema per app and environment), shared by every
/// process that opens the same database and schema.
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
/// A batch whose subscriptions the ledger could evaluate beforehand is written in one round trip (`commitInOneTrip`:
/// the lock, a check that nothing was stored under them since, the rows, the verdicts, COMMIT), so the writers' lock
/// is held for the server's work alone; the others as before (`beginWrite` ... `commit`).
/// A commit returns once the server has flushed it: the transaction commits asynchronously (visible, and the writers'
/// lock released, once its commit record is in the WAL), then a statement of the session's `synchronous_commit = on`
/// waits for the flush (`commit`), or, for the ledger's batches, one on the flush connection, awaited outside the
/// ledger's lock (`commitAwaitingFlush`, `PostgresFlusher`; docs/ledger.md "Fleet").
final class PostgresLedgerStore: LedgerStorage, @unchecked Sendable {
    let db: PostgresConnection
    /// The schema holding the tables (validated: an unquoted lowercase identifier).
    let schema: String
    /// The ledger's identity, as recorded in the schema: only events stored with it are read.
    private(set) var identity: LedgerIdentity
    /// This schema's writers' advisory lock.
    let writeLock: Int64
    /// The JWS headers read back (`StoredSigned`).
    private let headers = StoredHeaderCache()
    /// The flushes a batch's commit waits for, on a connection of their own (`commitAwaitingFlush`).
    let flusher: PostgresFlusher

    // Round trips saved under the writers' lock (every call is made under the ledger's lock, one at a time):
    /// Inside `beginWrite` ... `commit`/`rollback`.
    private var writing = false
    /// The newest event id, read by `beginWrite` under the lock: no other writer can commit until this one ends, so it
    /// is the change marker for the whole transaction.
    private var writeMax: Int64 = 0
    /// The id up to which the ledger has looked for other processes' events (as `Ledger`'s `lastEventId`: what
    /// `keys(after:)` returned, and this process's commits); nil until it opened. `beginWrite` reads the keys stored
    /// after it in the same round trip as the lock, for the catch-up that usually follows.
    private var mark: Int64?
    private var prefetched: (after: Int64, keys: Set<LedgerKey>, last: Int64)?
    /// The marker `changeMarker` read last, outside a write: the bound of the `keys(after:)` that follows it.
    private var lastMarker: Int64?
    /// The verdicts `setVerdict` recorded in this write, sent with its COMMIT (one round trip for all).
    private var pendingVerdicts: [String: StoredVerdict] = [:]
    /// The largest id the batch statement handed out in this write.
    var batchLastId: Int64 = 0
    /// The batch statement's parameters, made by `stage` before the writers' lock for the `insert` that follows.
    var staged: (digests: [String], receivedAt: Int64, parameters: BatchParameters)?
    /// The rows of the batch statement `beginWrite` sent with the lock (for the staged batch), for `insert`.
    var insertedRows: [[String?]]?
    /// What `beginWrite(reading:ifChanged:)` read for the write's loads: the subscriptions' stored events, and their
    /// notifications' verdicts (each used once).
    private var readEvents: [LedgerKey: [(Int64, LedgerEventKind, String, String)]] = [:]
    private var readVerdicts: [String: [String: StoredVerdict]] = [:]
    /// The events after the mark of the `ifChanged` subscriptions, usable once the catch-up started from the mark.
    private var readNewer: [LedgerKey: [(id: Int64, kind: LedgerEventKind, digest: String, stored: String)]] = [:]
    private var newerUsable = false

    /// The advisory lock of ledger writers ("LEDGER" and a version, as a 64-bit key) in the default schema; another
    /// schema's writers take a key of their own (mixed with the schema's name), so two ledgers never wait for each other.
    static let defaultWriteLock: Int64 = 0x4C45_4447_4552_0001
    static let defaultSchema = "appstore_ledger"

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
        // Schema version 2: the ledger's identity and each event's (as migration 2 of `LedgerSchema`).
        """
        CREATE TABLE appstore_ledger.ledger_identity (
          singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          app_apple_id BIGINT
        );
        ALTER TABLE appstore_ledger.events ADD COLUMN bundle_id TEXT, ADD COLUMN environment TEXT,
          ADD COLUMN app_apple_id BIGINT;
        """,
        // Schema version 3 (PostgreSQL only): `sync`'s cursor, kept in the database for every process of a fleet
        // (PostgresSyncLease.swift): the cursor's JSON (the format of a SQLite ledger's .sync.json file), the lease's
        // generation (fencing: a process that lost its lease cannot overwrite its successor's cursor), and who holds
        // it (for messages).
        """
        CREATE TABLE appstore_ledger.sync_cursor (
          singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
          generation BIGINT NOT NULL,
          holder TEXT,
          acquired_at BIGINT,
          cursor TEXT,
          saved_at BIGINT
        );
        """,
        // Schema version 4 here: each distinct JWS header stored once (as migration 3 of `LedgerSchema`; the stored
        // events are rewritten after it, in batches: `compactStoredEvents`).
        """
        CREATE TABLE appstore_ledger.jws_headers (
          digest TEXT PRIMARY KEY,
          header TEXT NOT NULL
        );
        CREATE TABLE appstore_ledger.jws_compaction (
          singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
          after_id BIGINT NOT NULL,
          last_id BIGINT NOT NULL
        );
        INSERT INTO appstore_ledger.jws_compaction SELECT 1, 0, id FROM appstore_ledger.events ORDER BY id DESC LIMIT 1;
        """,
        // Per-key queries (as `LedgerSchema`'s).
        """
        CREATE TABLE appstore_ledger.event_keys (
          kind TEXT NOT NULL,
          key TEXT NOT NULL,
          event_id BIGINT NOT NULL,
          PRIMARY KEY (kind, key, event_id)
        );
        CREATE INDEX event_keys_by_event ON appstore_ledger.event_keys (event_id);
        CREATE TABLE appstore_ledger.ledger_versions (
          kind TEXT NOT NULL,
          digest TEXT NOT NULL,
          PRIMARY KEY (kind, digest)
        );
        ALTER TABLE appstore_ledger.notifications ADD COLUMN verdict TEXT, ADD COLUMN engine_status INTEGER,
          ADD COLUMN missing TEXT;
        CREATE INDEX notifications_checked ON appstore_ledger.notifications (verdict) WHERE verdict IS NOT NULL;
        CREATE TABLE appstore_ledger.ledger_backfill (name TEXT PRIMARY KEY);
        INSERT INTO appstore_ledger.ledger_backfill VALUES ('event_keys');
        """,
        // The summary's disagreements read along an index in the list's order (as `LedgerSchema`'s).
        """
        DROP INDEX IF EXISTS appstore_ledger.notifications_checked;
        CREATE INDEX IF NOT EXISTS notifications_by_verdict ON appstore_ledger.notifications
          (verdict, signed_date, notification_uuid COLLATE "C") WHERE verdict IS NOT NULL;
        """,
    ]
    static var version: Int64 { Int64(migrations.count) }

    /// Splits `schema=NAME` off the URL's parameters (libpq does not know it): the URL for libpq, and the schema.
    static func schema(of url: String) throws(LedgerError) -> (url: String, schema: String) {
        guard let q = url.firstIndex(of: "?") else { return (url, defaultSchema) }
        var schema = defaultSchema
        var kept: [Substring] = []
        for p in url[url.index(after: q)...].split(separator: "&") {
            guard p.hasPrefix("schema=") else { kept.append(p); continue }
            let name = p.dropFirst("schema=".count)
            guard let first = name.utf8.first, name.utf8.count <= 63, first == UInt8(ascii: "_") || (97...122).contains(first),
                  name.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (97...122).contains($0) || (48...57).contains($0) }) else {
                throw .argument("the ledger URL's schema \(QuotedText.quote(String(name))) is not a lowercase SQL "
                    + "identifier (a-z, 0-9 and _, not starting with a digit, at most 63 characters)")
            }
            schema = String(name)
        }
        let base = String(url[..<q])
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&"), schema)
    }

    /// `sql` for this store's schema (the statements are written for the default one).
    func inSchema(_ sql: String) -> String {
        guard schema != Self.defaultSchema else { return sql }
        // Byte-wise (the generic `replacing` compares Characters: a measurable share of a batch's client time).
        let needle = Array(Self.defaultSchema.utf8), name = Array(schema.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(sql.utf8.count + 64)
        sql.utf8.withContiguousStorageIfAvailable { b in
            var i = 0
            while i < b.count {
                if b[i] == needle[0], i + needle.count <= b.count, b[i..<i + needle.count].elementsEqual(needle) {
                    out += name
                    i += needle.count
                } else {
                    out.append(b[i])
                    i += 1
                }
            }
        } ?? { out = Array(sql.replacing(Self.defaultSchema, with: schema).utf8) }()
        return String(decoding: out, as: UTF8.self)
    }

    /// `identity` nil: the one recorded in the schema is adopted.
    init(url: String, identity opener: LedgerIdentity?) throws(LedgerError) {
        let (pqURL, schema) = try Self.schema(of: url)
        self.schema = schema
        self.identity = opener ?? LedgerIdentity(bundleId: "", appAppleId: nil, environment: .sandbox)  // set by migrate
        var key = Self.defaultWriteLock
        if schema != Self.defaultSchema {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a of the name
            for b in schema.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            key ^= Int64(bitPattern: h & 0x0000_FFFF_FFFF_FFFF)
        }
        writeLock = key
        db = try PostgresConnection(url: pqURL, shownURL: url)
        flusher = PostgresFlusher(url: pqURL, shownURL: url)
        // Set again on every reconnection, with the statements below (docs/ledger.md, "Reconnecting").
        try db.session("SET synchronous_commit = on", what: "cannot set synchronous_commit")
        identity = try migrate(opener)
        try db.prepare("insert_event", inSchema("""
            INSERT INTO appstore_ledger.events (kind, payload_sha256, signed, signed_date, received_at, bundle_id,
              environment, app_apple_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (payload_sha256) DO NOTHING RETURNING id
            """), parameters: 8)
        for (name, t) in [("upsert_transaction", LedgerUpsert.transactions), ("upsert_renewal_info", LedgerUpsert.renewalInfos),
                          ("upsert_notification", LedgerUpsert.notifications)] {
            try db.prepare(name, LedgerUpsert.sql(t, into: "\(schema).\(t.0) AS cur", current: "cur",
                                                  collate: " COLLATE \"C\"") { "$\($0)" }, parameters: t.1.count)
        }
        try db.prepare("events_after", inSchema("""
            SELECT id, kind, signed FROM appstore_ledger.events WHERE id > $1 AND bundle_id = $2 AND environment = $3
            ORDER BY id LIMIT 1000
            """), parameters: 3)
        try db.prepare("events_page", inSchema("""
            SELECT id, kind, signed FROM appstore_ledger.events WHERE id > $1 AND bundle_id = $2 AND environment = $3
            ORDER BY id LIMIT $4
            """), parameters: 4)
        try db.prepare("recent_events", inSchema("""
            SELECT id, kind, signed, received_at FROM appstore_ledger.events WHERE id < $1 AND bundle_id = $2
            AND environment = $3 ORDER BY id DESC LIMIT $4
            """), parameters: 4)
        try db.prepare("max_event", inSchema("SELECT coalesce(max(id), 0) FROM appstore_ledger.events"), parameters: 0)
        // A customer's events and its originals' (`customerEvents`): tagged rows, `k` naming each original found.
        try db.prepare("customer_events", inSchema("""
            WITH own AS (SELECT event_id FROM appstore_ledger.event_keys WHERE kind = 'c' AND key = $1),
            originals AS (SELECT DISTINCT k.kind, k.key FROM appstore_ledger.event_keys k JOIN own USING (event_id)
              WHERE k.kind IN ('s', 'p'))
            SELECT 'e'::text, 'c'::text, $1::text, e.id, e.kind, e.payload_sha256, e.signed
              FROM own JOIN appstore_ledger.events e ON e.id = own.event_id WHERE e.bundle_id = $2 AND e.environment = $3
            UNION ALL SELECT 'e', o.kind, o.key, e.id, e.kind, e.payload_sha256, e.signed FROM originals o
              JOIN appstore_ledger.event_keys k ON k.kind = o.kind AND k.key = o.key
              JOIN appstore_ledger.events e ON e.id = k.event_id
              WHERE e.bundle_id = $2 AND e.environment = $3 AND NOT EXISTS (SELECT FROM own WHERE own.event_id = k.event_id)
            UNION ALL SELECT 'k', o.kind, o.key, NULL, NULL, NULL, NULL FROM originals o
            """), parameters: 3)
        try db.prepare("events_keyed", inSchema("""
            SELECT e.id, e.kind, e.payload_sha256, e.signed FROM appstore_ledger.event_keys k JOIN appstore_ledger.events e
            ON e.id = k.event_id WHERE k.kind = $1 AND k.key = $2 AND e.bundle_id = $3 AND e.environment = $4
            """), parameters: 4)
        try db.prepare("keys_after", inSchema(
            "SELECT DISTINCT kind, key FROM appstore_ledger.event_keys WHERE event_id > $1 AND event_id <= $2"), parameters: 2)
        try db.prepare("insert_key", inSchema(
            "INSERT INTO appstore_ledger.event_keys (kind, key, event_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"),
            parameters: 3)
        try db.prepare("insert_version", inSchema(
            "INSERT INTO appstore_ledger.ledger_versions (kind, digest) VALUES ($1, $2) ON CONFLICT DO NOTHING"), parameters: 2)
        try db.prepare("verdicts_of", inSchema("""
            SELECT notification_uuid, verdict, engine_status, missing FROM appstore_ledger.notifications
            WHERE original_transaction_id = $1
            """), parameters: 1)
        try db.prepare("update_verdict", inSchema(
            "UPDATE appstore_ledger.notifications SET verdict = $1, engine_status = $2, missing = $3 WHERE notification_uuid = $4"),
            parameters: 4)
        try db.prepare("key_page", inSchema("""
            SELECT key FROM appstore_ledger.event_keys WHERE kind = $1 AND key > $2 GROUP BY key ORDER BY key LIMIT $3
            """), parameters: 3)
        try db.prepare("insert_header", inSchema(
            "INSERT INTO appstore_ledger.jws_headers (digest, header) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING"),
            parameters: 2)
        try db.prepare("select_header", inSchema("SELECT header FROM appstore_ledger.jws_headers WHERE digest = $1"),
                       parameters: 1)
        try db.prepare("stored_rows", inSchema("SELECT id, kind, signed FROM appstore_ledger.events WHERE id > $1 ORDER BY id LIMIT $2"),
                       parameters: 2)
        try db.prepare("payloads_stored", inSchema(
            "SELECT payload_sha256, signed FROM appstore_ledger.events WHERE payload_sha256 = ANY($1::text[])"), parameters: 1)
        try db.prepare("batch_insert", batchStatement(), parameters: 7)
        try db.prepare("update_verdicts", inSchema(Self.verdictUpdateSQL), parameters: 1)
        try compactStoredEvents()
    }

    /// Creates or migrates the schema, under the writers' lock (two processes opening a new database at once: one
    /// creates, the other finds it made), and checks the ledger's identity; refuses a newer schema and another
    /// identity (rolled back: nothing written).
    private func migrate(_ opener: LedgerIdentity?) throws(LedgerError) -> LedgerIdentity {
        try db.run("BEGIN ISOLATION LEVEL READ COMMITTED", what: "cannot start the schema migration")
        do throws(LedgerError) {
            try db.run("SELECT pg_advisory_xact_lock($1)", [.int(writeLock)], what: "cannot lock the ledger")
            let exists = try db.run("SELECT to_regclass($1) IS NOT NULL", [.text("\(schema).schema_version")],
                                    what: "cannot read the ledger's schema")
            var current: Int64 = 0
            if PostgresConnection.scalar(exists) == "t" {
                let v = try db.run(inSchema("SELECT version FROM appstore_ledger.schema_version"),
                                   what: "cannot read the ledger's schema version")
                current = PostgresConnection.scalar(v).flatMap { Int64($0) } ?? 0
            }
            guard current <= Self.version else {
                throw .configuration("the PostgreSQL ledger \(db.shownURL) has schema version \(current); this library "
                    + "knows versions up to \(Self.version): use a newer library")
            }
            if current < Self.version {
                for n in Int(current)..<Self.migrations.count {
                    // A multi-statement migration goes as one simple query (no parameters).
                    try db.run(inSchema(Self.migrations[n]), what: "schema migration \(n + 1) failed")
                }
                try db.run(inSchema("UPDATE appstore_ledger.schema_version SET version = $1"), [.int(Self.version)],
                           what: "cannot record the schema version")
            }
            let identity = try checkIdentity(opener)
            try db.run("COMMIT", what: "cannot commit the schema migration")
            return identity
        } catch {
            rollback()
            throw error
        }
    }

    /// As `LedgerSchema.checkIdentity`: the recorded identity must admit the opener's; a schema without one (new,
    /// or 0.3.0) records it, a 0.3.0 one from its events.
    private func checkIdentity(_ opener: LedgerIdentity?) throws(LedgerError) -> LedgerIdentity {
        let shown = db.shownURL + (schema == Self.defaultSchema ? "" : " (schema \(schema))")
        let rows = try db.run(inSchema("SELECT bundle_id, environment, app_apple_id FROM appstore_ledger.ledger_identity"),
                              what: "cannot read the ledger's identity")
        if let row = rows.first, row.count == 3 {
            let recorded = LedgerIdentity(bundleId: row[0] ?? "", appAppleId: row[2].flatMap { Int64($0) },
                                          environment: AppStoreEnvironment(rawValue: row[1] ?? ""))
            guard let opener else { return recorded }
            guard recorded.admits(opener) else { throw recorded.mismatch(opener, ledger: shown) }
            return opener
        }
        let legacy = try db.run(inSchema("SELECT id, kind, signed FROM appstore_ledger.events WHERE bundle_id IS NULL ORDER BY id"),
                                what: "cannot read the ledger's events")
        let events = legacy.map { r in (id: r[0].flatMap { Int64($0) } ?? 0, kind: LedgerEventKind(rawValue: r[1] ?? ""), signed: r[2] ?? "") }
        let found = try LedgerIdentityMigration.identity(ofEvents: events, opener: opener, ledger: shown)
        let values: [SQLiteValue?] = [.text(found.bundleId), .text(found.environment.rawValue), found.appAppleId.sql]
        try db.run(inSchema("INSERT INTO appstore_ledger.ledger_identity (singleton, bundle_id, environment, app_apple_id) "
            + "VALUES (1, $1, $2, $3)"), values, what: "cannot record the ledger's identity")
        try db.run(inSchema("UPDATE appstore_ledger.events SET bundle_id = $1, environment = $2, app_apple_id = $3 "
            + "WHERE bundle_id IS NULL"), values, what: "cannot record the events' identity")
        return found
    }

    func beginWrite() throws(LedgerError) { try beginWrite(reading: [], ifChanged: []) }

    /// One round trip: a simple query of three statements (BEGIN, the lock, then one SELECT whose rows are tagged by
    /// their first column, all in one snapshot taken under the lock): `m` the newest event id; `k` the keys of the
    /// events stored after the mark (the catch-up that usually follows); `e` the stored events of the subscriptions
    /// `reading`, `n` those stored after the mark of the subscriptions `ifChanged` (the catch-up evicts them; their
    /// cached states hold the others), and `v` the notifications' verdicts of both (the loads and verdict reads of the
    /// commit). The numbers are this store's own; the texts are dollar-quoted (`literal`). When `stage` made the
    /// batch statement's parameters, the statement follows in the same query (`EXECUTE batch_insert`), its rows kept
    /// for `insert`.
    func beginWrite(reading: [LedgerKey], ifChanged: [LedgerKey]) throws(LedgerError) {
        var sql = writeStart
            + inSchema("SELECT 'm'::text, NULL::text, NULL::text, coalesce(max(id), 0)::text, NULL::text, NULL::text FROM appstore_ledger.events")
        if let mark {
            sql += inSchema(" UNION ALL (SELECT DISTINCT 'k', kind, key, NULL::text, NULL::text, NULL::text FROM appstore_ledger.event_keys "
                + "WHERE event_id > \(mark))")
        }
        let usable = { (k: LedgerKey) in k.kind == "s" && !k.value.utf8.contains(0) }
        let read = reading.filter(usable)
        let changed = mark == nil ? [] : ifChanged.filter(usable)
        let list = { (keys: [LedgerKey]) in "(" + keys.map { Self.literal($0.value) }.joined(separator: ", ") + ")" }
        let mine = " AND e.bundle_id = " + Self.literal(identity.bundleId) + " AND e.environment = "
            + Self.literal(identity.environment.rawValue)
        if !read.isEmpty {
            sql += inSchema(" UNION ALL SELECT 'e', k.key, e.kind, e.id::text, e.signed, e.payload_sha256 FROM appstore_ledger.event_keys k "
                + "JOIN appstore_ledger.events e ON e.id = k.event_id WHERE k.kind = 's' AND k.key IN ") + list(read) + mine
                + inSchema(" UNION ALL SELECT 'v', original_transaction_id, notification_uuid, engine_status::text, verdict, "
                    + "missing FROM appstore_ledger.notifications WHERE original_transaction_id IN ") + list(read)
        }
        if !changed.isEmpty, let mark {
            // Only the events after the mark (the cached state holds the others), and the verdicts of those with any.
            sql += inSchema(" UNION ALL SELECT 'n', k.key, e.kind, e.id::text, e.signed, e.payload_sha256 FROM appstore_ledger.event_keys k "
                + "JOIN appstore_ledger.events e ON e.id = k.event_id WHERE k.kind = 's' AND k.event_id > \(mark) AND k.key IN ")
                + list(changed) + mine
                + inSchema(" UNION ALL SELECT 'v', original_transaction_id, notification_uuid, engine_status::text, verdict, "
                    + "missing FROM appstore_ledger.notifications WHERE original_transaction_id IN ") + list(changed)
                + inSchema(" AND EXISTS (SELECT 1 FROM appstore_ledger.event_keys c WHERE c.kind = 's' "
                    + "AND c.key = original_transaction_id AND c.event_id > \(mark))")
        }
        // The batch statement too, when `stage` made it for this write (one statement's worth): it does not depend
        // on what the SELECT reads (which, run first, does not see what it stores), so it costs no round trip of
        // its own under the lock.
        let inserting = staged.map { $0.parameters.statements.count == 1 } ?? false
        if inserting, let parameters = staged?.parameters.statements.first {
            sql += "; EXECUTE batch_insert(" + parameters.map { Self.literal($0) }.joined(separator: ", ") + ")"
        }
        do throws(LedgerError) {
            let results = try db.runAll(sql, what: "cannot lock the ledger for writing")
            guard results.count == (inserting ? 5 : 4), let rows = results.dropLast(inserting ? 1 : 0).last else {
                throw LedgerError.storage("the ledger's lock and read returned \(results.count) results")
            }
            insertedRows = inserting ? results.last : nil
            var newest: Int64?
            var keys: Set<LedgerKey> = []
            var events: [LedgerKey: [(Int64, LedgerEventKind, String, String)]] = [:]
            var verdicts: [String: [String: StoredVerdict]] = [:]
            var newer: [LedgerKey: [(id: Int64, kind: LedgerEventKind, digest: String, stored: String)]] = [:]
            for k in read {
                events[k] = []
                verdicts[k.value] = [:]
            }
            for r in rows where r.count == 6 {
                switch r[0] {
                case "m": newest = r[3].flatMap { Int64($0) }
                case "k": keys.insert(LedgerKey(kind: r[1] ?? "", value: r[2] ?? ""))
                case "e":
                    let (o, event) = try Self.eventRow(r)
                    events[.subscription(o), default: []].append(event)
                case "n":
                    let (o, event) = try Self.eventRow(r)
                    newer[.subscription(o), default: []].append((id: event.0, kind: event.1, digest: event.2, stored: event.3))
                    verdicts[o] = verdicts[o] ?? [:]  // every verdict of a subscription with new events is read
                case "v":
                    guard let o = r[1], let uuid = r[2] else { continue }
                    verdicts[o, default: [:]][uuid] = StoredVerdict(verdict: r[4], engineStatus: r[3].flatMap { Int64($0) },
                                                                  missing: r[5])
                default: break
                }
            }
            guard let newest else { throw LedgerError.storage("the ledger's events table returned an unexpected row") }
            writing = true
            writeMax = newest
            prefetched = mark.map { (after: $0, keys: keys, last: max($0, newest)) }
            readEvents = events
            readVerdicts = verdicts
            readNewer = newer
        } catch {
            rollback()
            throw error
        }
    }

    func canCommitInOneTrip(_ batch: [LedgerEvent]) -> Bool {
        !writing && !db.reconnectPending && Set(batch.lazy.map(\.payloadDigest)).count <= Self.batchRows
            && flusher.prepare() != nil
    }

    /// How a write transaction starts: its COMMIT asynchronous (`commit`), the writers' lock, and no sequential scans.
    /// Every statement of a write finds its rows by an index; but a new ledger's tables are not analyzed yet, and a
    /// prepared statement's generic plan made then (a scan of a table of ten rows) is kept as the table grows (the
    /// verdicts' UPDATE scanned every notification under the lock until autovacuum analyzed the table).
    private var writeStart: String {
        // READ COMMITTED whatever the server's default: under REPEATABLE READ or SERIALIZABLE the transaction's
        // snapshot would be taken by the lock's statement, before the lock is granted, and miss the commit of the
        // writer it waited for (its events, the catch-up's keys, the verdicts it wrote).
        "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit = off; SELECT pg_advisory_xact_lock(\(writeLock)), "
            + "set_config('enable_seqscan', 'off', true); "
    }

    /// One statement (one snapshot), outside a write: the newest event id (`m`), the subscriptions' events (`e`)
    /// and their notifications' verdicts (`v`), tagged as `beginWrite`'s rows.
    func readSubscriptions(_ keys: [LedgerKey]) throws(LedgerError) -> SubscriptionsRead? {
        guard !writing, !keys.isEmpty, keys.allSatisfy({ $0.kind == "s" && !$0.value.utf8.contains(0) }) else { return nil }
        let list = "(" + keys.map { Self.literal($0.value) }.joined(separator: ", ") + ")"
        let sql = inSchema("SELECT 'm'::text, NULL::text, NULL::text, coalesce(max(id), 0)::text, NULL::text, NULL::text "
            + "FROM appstore_ledger.events UNION ALL SELECT 'e', k.key, e.kind, e.id::text, e.signed, e.payload_sha256 "
            + "FROM appstore_ledger.event_keys k JOIN appstore_ledger.events e ON e.id = k.event_id WHERE k.kind = 's' AND k.key IN ")
            + list + " AND e.bundle_id = " + Self.literal(identity.bundleId) + " AND e.environment = "
            + Self.literal(identity.environment.rawValue)
            + inSchema(" UNION ALL SELECT 'v', original_transaction_id, notification_uuid, engine_status::text, verdict, "
                + "missing FROM appstore_ledger.notifications WHERE original_transaction_id IN ") + list
        var read = SubscriptionsRead()
        var newest: Int64?
        for r in try db.run(sql, what: "cannot read the ledger's events") where r.count == 6 {
            switch r[0] {
            case "m": newest = r[3].flatMap { Int64($0) }
            case "e":
                let (o, event) = try Self.eventRow(r)
                read.events[.subscription(o), default: []].append(event)
            case "v":
                guard let o = r[1], let uuid = r[2] else { continue }
                read.verdicts[o, default: [:]][uuid] = StoredVerdict(verdict: r[4], engineStatus: r[3].flatMap { Int64($0) }, missing: r[5])
            default: break
            }
        }
        guard let newest else { throw .storage("the ledger's events table returned an unexpected row") }
        read.newest = newest
        return read
    }

    /// An `e`/`n` row of a tagged read (`beginWrite`, `readSubscriptions`): the subscription, and the event as
    /// `events(keyed:)` gives it (id, kind, payload digest, `signed` as stored).
    static func eventRow(_ r: [String?]) throws(LedgerError) -> (String, (Int64, LedgerEventKind, String, String)) {
        guard r.count == 6, let o = r[1], let kind = r[2], let id = r[3].flatMap({ Int64($0) }), let signed = r[4],
              let digest = r[5] else {
            throw .storage("the ledger's events table returned an unexpected row")
        }
        return (o, (id, LedgerEventKind(rawValue: kind), digest, signed))
    }

    /// The transaction's setting that says a one-trip write found a change (`commitInOneTrip`): while it is set,
    /// `batch_insert` and `update_verdicts` write nothing (a prepared statement cannot be skipped within one query).
    static let changedFlag = "appstoreserver.batch_changed"
    /// The condition `batch_insert` and `update_verdicts` write under.
    static let unchanged = "coalesce(current_setting('\(changedFlag)', true), '') = ''"

    /// One simple query: BEGIN; the lock; one SELECT that sets `changedFlag` when `event_keys` has a row under one
    /// of `unchanged`'s keys after its id, and reads the newest id and the keys stored after `after`; the staged batch
    /// statement; the verdicts; COMMIT (asynchronous: the flush is awaited on the flusher's connection, as
    /// `commitAwaitingFlush`). With the flag set the statements write nothing and the COMMIT ends an empty
    /// transaction: no error (a server logs every failed statement, this one with the whole batch in it). The lock
    /// is released by the server's COMMIT, so no writer of any process waits for this process to be scheduled
    /// between round trips.
    func commitInOneTrip(_ batch: [LedgerEvent], receivedAt: Int64, after: Int64, unchanged: [(key: LedgerKey, after: Int64)],
                         verdicts: [String: StoredVerdict], generation expected: Int) throws(LedgerError) -> OneTripOutcome? {
        guard !writing, !db.reconnectPending, connectionGeneration == expected, let s = staged, s.receivedAt == receivedAt, s.digests.elementsEqual(batch.lazy.map(\.payloadDigest)),
              s.parameters.statements.count == 1, let parameters = s.parameters.statements.first,
              unchanged.allSatisfy({ $0.key.kind == "s" && !$0.key.value.utf8.contains(0) }),
              let generation = flusher.prepare() else { return nil }
        staged = nil
        var changed = "false"
        if !unchanged.isEmpty {
            var since: [Int64: [String]] = [:]
            for u in unchanged { since[u.after, default: []].append(Self.literal(u.key.value)) }
            changed = inSchema("EXISTS (SELECT 1 FROM appstore_ledger.event_keys WHERE kind = 's' AND (")
                + since.sorted { $0.key < $1.key }.map { after, keys in
                    "(key IN (" + keys.joined(separator: ", ") + ") AND event_id > \(after))"
                }.joined(separator: " OR ") + "))"
        }
        var sql = writeStart + "SELECT 'c'::text, NULL::text, set_config('\(Self.changedFlag)', CASE WHEN " + changed
            + " THEN 'yes' ELSE '' END, true) UNION ALL "
            + inSchema("SELECT 'm', NULL, coalesce(max(id), 0)::text FROM appstore_ledger.events UNION ALL "
                + "(SELECT DISTINCT 'k', kind, key FROM appstore_ledger.event_keys WHERE event_id > \(after))")
        sql += "; EXECUTE batch_insert(" + parameters.map { Self.literal($0) }.joined(separator: ", ") + ")"
        if !verdicts.isEmpty {
            pendingVerdicts = verdicts
            sql += "; " + verdictUpdate()
        }
        sql += "; COMMIT"
        let results: [[[String?]]]
        do throws(LedgerError) {
            results = try db.runAll(sql, what: "cannot store the events", commits: true)
        } catch {
            pendingVerdicts = [:]
            _ = try? db.run("ROLLBACK", what: "rollback")
            throw error
        }
        // BEGIN, SET, the lock, the SELECT, the batch, [the verdicts], COMMIT.
        let select = 3
        guard results.count == select + (verdicts.isEmpty ? 3 : 4) else {
            throw .storage("the ledger's write returned \(results.count) results")
        }
        var newest: Int64?
        var flag: String?
        var keys: Set<LedgerKey> = []
        for r in results[select] where r.count == 3 {
            switch r[0] {
            case "c": flag = r[2]
            case "m": newest = r[2].flatMap { Int64($0) }
            default: keys.insert(LedgerKey(kind: r[1] ?? "", value: r[2] ?? ""))
            }
        }
        guard let newest, let flag else { throw .storage("the ledger's events table returned an unexpected row") }
        guard flag.isEmpty else { return .changed }
        var ids = [Int64?](repeating: nil, count: batch.count)
        for row in results[select + 1] {
            guard row.count == 2, let id = row[0].flatMap({ Int64($0) }), let digest = row[1], let i = s.parameters.first[digest] else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            ids[i] = id
        }
        mark = max(mark ?? after, newest, ids.compactMap { $0 }.max() ?? 0)
        let ticket = flusher.committed(generation: generation)
        return .committed(ids: ids, othersKeys: keys, newest: newest, flush: { [flusher] () throws(LedgerError) in try flusher.wait(ticket) })
    }

    /// `text` as a dollar-quoted literal whose tag it does not contain (no escaping to get wrong; no NUL: a C string).
    /// The tag is `$q$`, `$q1$`, `$q2$`... the first the text does not hold, nor end with all but its last `$` of
    /// (the server ends the literal at the first whole tag, which would then straddle the text's end).
    static func literal(_ text: String) -> String {
        // The tags the text holds, found in one pass over its bytes (a stored JWS holds `$` wherever a member name's
        // code is one: a search per tag was a twentieth of a batch's client time). -1 stands for `$q$`; a number with
        // leading zeros is counted as its value (a tag it is not, so only ever one more skipped).
        let used: Set<Int>? = text.utf8.withContiguousStorageIfAvailable { b -> Set<Int> in
            var used: Set<Int> = []
            var i = 0
            while i + 1 < b.count {
                if b[i] == UInt8(ascii: "$"), b[i + 1] == UInt8(ascii: "q") {
                    var j = i + 2, n = 0
                    while j < b.count, (48...57).contains(b[j]) { n = min(n * 10 + Int(b[j] - 48), 100_000_000); j += 1 }
                    // Too many digits to be a tag chosen here (at most one per `$` of the text, far below that).
                    if j - (i + 2) <= 8, j == b.count || b[j] == UInt8(ascii: "$") { used.insert(j == i + 2 ? -1 : n) }
                }
                i += 1
            }
            return used
        }
        guard let used else {
            var tag = "$q$", n = 0
            while text.contains(tag) || text.hasSuffix(String(tag.dropLast())) { n += 1; tag = "$q\(n)$" }
            return tag + text + tag
        }
        var n = -1
        while used.contains(n) { n = n == -1 ? 1 : n + 1 }
        let tag = n == -1 ? "$q$" : "$q\(n)$"
        return tag + text + tag
    }

    /// The COMMIT is asynchronous (`SET LOCAL synchronous_commit = off` in `beginWrite`): it returns once the commit
    /// is in the server's WAL and visible, which ends the writers' lock; then, with the lock released, one statement
    /// waits for the server's flush (`flush`). So the next writer, of any process, works while this one's WAL is
    /// flushed, and two processes' commits can share a flush; nothing is acknowledged before it is durable.
    func commit() throws(LedgerError) {
        defer { endWrite() }
        guard !pendingVerdicts.isEmpty else {
            try db.run("COMMIT", what: "cannot commit the ledger transaction")
            try flush()
            noteCommitted()
            return
        }
        // The verdicts sent with the COMMIT in one simple query (one round trip).
        try db.run(verdictUpdate() + "; COMMIT", what: "cannot commit the ledger transaction", commits: true)
        try flush()
        noteCommitted()
    }

    /// The batch statement's parameters for `events`, made before the writers' lock (`insert` uses them).
    func stage(_ events: [LedgerEvent], receivedAt: Int64) {
        staged = (events.map(\.payloadDigest), receivedAt, batchParameters(events, receivedAt: receivedAt))
    }

    /// `commit`, but the flush awaited by the returned wait, on the flusher's connection (`PostgresFlusher`): the
    /// ledger's connection is free for the next write as soon as the COMMIT returns. Where the flusher's connection
    /// cannot be opened, `commit` (the flush on this connection) and nil.
    func commitAwaitingFlush() throws(LedgerError) -> (() throws(LedgerError) -> Void)? {
        guard let generation = flusher.prepare() else {
            try commit()
            return nil
        }
        defer { endWrite() }
        if pendingVerdicts.isEmpty {
            try db.run("COMMIT", what: "cannot commit the ledger transaction")
        } else {
            try db.run(verdictUpdate() + "; COMMIT", what: "cannot commit the ledger transaction", commits: true)
        }
        noteCommitted()
        let ticket = flusher.committed(generation: generation)
        return { [flusher] () throws(LedgerError) in try flusher.wait(ticket) }
    }

    /// The pending verdicts as one UPDATE from a JSON array (a dollar-quoted literal, to the statement prepared as
    /// `update_verdicts`: sent in a simple query with the COMMIT, one round trip, and planned once), and none pending
    /// any more.
    private func verdictUpdate() -> String {
        var w = JSONWriter()
        w.beginArray()
        for (uuid, v) in pendingVerdicts {
            w.beginObject()
            w.member("u", uuid)
            w.key("v"); if let x = v.verdict { w.string(x) } else { w.null() }
            w.key("e"); if let x = v.engineStatus { w.int(x) } else { w.null() }
            w.key("m"); if let x = v.missing { w.string(x) } else { w.null() }
            w.endObject()
        }
        w.endArray()
        pendingVerdicts = [:]
        return "EXECUTE update_verdicts(\(Self.literal(String(decoding: w.bytes, as: UTF8.self))))"
    }

    /// `update_verdicts`: the rows found by their key's index (`= ANY` of an array), whatever the planner estimates
    /// for the JSON's rows (a function's 100): a join alone was planned as a scan of the whole table, the longest
    /// statement of a batch under the writers' lock. Nothing while the transaction's `changedFlag` is set.
    static let verdictUpdateSQL = """
        UPDATE appstore_ledger.notifications AS n SET verdict = v.v, engine_status = v.e, missing = v.m
        FROM json_to_recordset($1::json) AS v (u text, v text, e bigint, m text) WHERE n.notification_uuid = v.u
        AND n.notification_uuid = ANY (ARRAY(SELECT x->>'u' FROM json_array_elements($1::json) AS x))
        AND \(unchanged)
        """

    /// Returns once the server's WAL is flushed past the asynchronous COMMIT just made: a transaction of its own that
    /// writes one WAL record (a transactional logical message: an xid, no table, any wal_level, no privilege) commits
    /// with this session's `synchronous_commit = on`, so it returns after the flush of its commit record, which the
    /// WAL holds after ours (and after a synchronous standby's confirmation, where there is one). Never sent again on
    /// a new connection: there a flush says nothing about a commit the lost server may not have flushed.
    private func flush() throws(LedgerError) {
        do throws(LedgerError) {
            try db.run("SELECT pg_logical_emit_message(true, 'appstoreserver', '')", what: "flush", once: true)
        } catch {
            throw .storage("the ledger transaction was committed but its flush was not confirmed, so it may or may not "
                + "be durable; nothing was acknowledged, and a value given again is stored once (\(error.message))")
        }
    }

    /// Reconnections of this store's connection, and flushes not confirmed: after one, what was read before may be
    /// gone (a commit seen before its flush, lost with the server), so the ledger trusts nothing it cached
    /// (`Ledger.refresh`).
    var connectionGeneration: Int { db.reconnections + flusher.failures }

    func rollback() {
        endWrite()
        _ = try? db.run("ROLLBACK", what: "rollback")
    }

    /// This process has seen its own events (as `Ledger` moves its mark past them).
    private func noteCommitted() {
        if let m = mark { mark = max(m, batchLastId) }
    }

    private func endWrite() {
        writing = false
        prefetched = nil
        readEvents = [:]
        readVerdicts = [:]
        readNewer = [:]
        newerUsable = false
        pendingVerdicts = [:]
        batchLastId = 0
        staged = nil
        insertedRows = nil
    }

    func insert(_ event: LedgerEvent, receivedAt: Int64) throws(LedgerError) -> Int64? {
        let (signed, jwsHeaders) = event.storedForm
        for h in jwsHeaders {
            _ = try db.run("insert_header", [.text(h.digest), .text(h.text)], prepared: true, what: "cannot store a JWS header")
        }
        let rows = try db.run("insert_event", LedgerRows.event(event, receivedAt: receivedAt, signed: signed), prepared: true,
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
            let rows = try db.run("events_after", [.int(last)] + LedgerRows.identity(identity), prepared: true,
                                  what: "cannot read the ledger's events")
            for row in rows {
                guard row.count == 3, let i = row[0].flatMap({ Int64($0) }), let kind = row[1], let signed = row[2] else {
                    throw .storage("the ledger's events table returned an unexpected row")
                }
                try each(i, LedgerEventKind(rawValue: kind), try expand(signed, i))
                last = i
            }
            if rows.count < 1000 { return }
        }
    }

    func events(after id: Int64, limit: Int, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError) {
        let rows = try db.run("events_page", [.int(id)] + LedgerRows.identity(identity) + [.int(Int64(limit))], prepared: true,
                              what: "cannot read the ledger's events")
        for row in rows {
            guard row.count == 3, let i = row[0].flatMap({ Int64($0) }), let kind = row[1], let signed = row[2] else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            try each(i, LedgerEventKind(rawValue: kind), try expand(signed, i))
        }
    }

    func recentEvents(before: Int64, limit: Int) throws(LedgerError) -> [StoredEventRow] {
        let rows = try db.run("recent_events", [.int(before)] + LedgerRows.identity(identity) + [.int(Int64(limit))], prepared: true,
                              what: "cannot read the ledger's events")
        return try rows.map { row throws(LedgerError) in
            guard row.count == 4, let id = row[0].flatMap({ Int64($0) }), let kind = row[1], let signed = row[2],
                  let at = row[3].flatMap({ Int64($0) }) else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            return StoredEventRow(id: id, kind: LedgerEventKind(rawValue: kind), signed: try expand(signed, id), receivedAt: at)
        }
    }

    /// The newest event id: it changes when anyone (another process) has committed an event. In a write, the one
    /// `beginWrite` read under the lock (no writer can commit meanwhile).
    func changeMarker() throws(LedgerError) -> Int64 {
        if writing { return writeMax }
        let rows = try db.run("max_event", prepared: true, what: "cannot read the ledger's events")
        let newest = PostgresConnection.scalar(rows).flatMap { Int64($0) } ?? 0
        lastMarker = newest
        return newest
    }

    func eventCount() throws(LedgerError) -> Int64 {
        let rows = try db.run(inSchema("SELECT count(*) FROM appstore_ledger.events"), what: "cannot count the ledger's events")
        return PostgresConnection.scalar(rows).flatMap { Int64($0) } ?? 0
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
        guard !digests.isEmpty else { return [:] }
        // One round trip: the digests as a text array literal (hex: no quoting needed).
        let rows = try db.run("payloads_stored", [.text("{" + digests.joined(separator: ",") + "}")], prepared: true,
                              what: "cannot read the ledger's events")
        var found: [String: Substring] = [:]
        for r in rows where r.count == 2 {
            if let d = r[0] { found[d] = StoredSigned.signature(ofStored: r[1] ?? "") }
        }
        return found
    }

    func storedHeader(_ digest: String) throws(LedgerError) -> String? {
        PostgresConnection.scalar(try db.run("select_header", [.text(digest)], prepared: true, what: "cannot read a JWS header"))
    }

    func storedRows(after id: Int64, limit: Int) throws(LedgerError) -> [(id: Int64, kind: String, stored: String)] {
        try db.run("stored_rows", [.int(id), .int(Int64(limit))], prepared: true, what: "cannot read the ledger's events")
            .map { r throws(LedgerError) in
                guard r.count == 3, let i = r[0].flatMap({ Int64($0) }) else {
                    throw .storage("the ledger's events table returned an unexpected row")
                }
                return (i, r[1] ?? "", r[2] ?? "")
            }
    }

    /// As `LedgerStore.compactStoredEvents`: the events stored before `jws_headers` existed, rewritten 500 per
    /// transaction under the writers' lock, from the cursor in `jws_compaction`.
    private func compactStoredEvents() throws(LedgerError) {
        // Nothing to rewrite (the usual open): the writers' lock is not taken.
        let pending = try db.run(inSchema("SELECT count(*) FROM appstore_ledger.jws_compaction"), what: "cannot read the rewrite's progress")
        guard PostgresConnection.scalar(pending) != "0" else { return }
        while true {
            try beginWrite()
            do throws(LedgerError) {
                let cursor = try db.run(inSchema("SELECT after_id, last_id FROM appstore_ledger.jws_compaction"),
                                        what: "cannot read the rewrite's progress")
                guard let c = cursor.first, c.count == 2, let after = c[0].flatMap({ Int64($0) }),
                      let last = c[1].flatMap({ Int64($0) }) else { rollback(); return }
                let rows = try db.run(inSchema("SELECT id, signed FROM appstore_ledger.events WHERE id > $1 AND id <= $2 "
                    + "ORDER BY id LIMIT 500"), [.int(after), .int(last)], what: "cannot read the ledger's events")
                var end = after
                for r in rows {
                    guard r.count == 2, let id = r[0].flatMap({ Int64($0) }), let signed = r[1] else {
                        throw .storage("the ledger's events table returned an unexpected row")
                    }
                    end = id
                    let (text, jwsHeaders) = StoredSigned.compact(signed)
                    guard text != signed else { continue }
                    for h in jwsHeaders {
                        _ = try db.run("insert_header", [.text(h.digest), .text(h.text)], prepared: true, what: "cannot store a JWS header")
                    }
                    _ = try db.run(inSchema("UPDATE appstore_ledger.events SET signed = $1 WHERE id = $2"), [.text(text), .int(id)],
                                   what: "cannot rewrite event \(id)")
                }
                if rows.count == 500, end < last {
                    _ = try db.run(inSchema("UPDATE appstore_ledger.jws_compaction SET after_id = $1"), [.int(end)],
                                   what: "cannot record the rewrite's progress")
                } else {
                    _ = try db.run(inSchema("DELETE FROM appstore_ledger.jws_compaction"), what: "cannot record the rewrite's end")
                }
                try commit()
            } catch {
                rollback()
                throw error
            }
        }
    }

    func lastEventId() throws(LedgerError) -> Int64 {
        let newest = try changeMarker()
        if mark == nil { mark = newest }  // the ledger's open
        return newest
    }

    func newEvents(keyed key: LedgerKey) throws(LedgerError) -> [StoredKeyedEvent]? {
        guard writing, newerUsable, let rows = readNewer.removeValue(forKey: key) else { return nil }
        return rows
    }

    func events(keyed key: LedgerKey, _ each: (Int64, LedgerEventKind, String, String) throws(LedgerError) -> Void) throws(LedgerError) {
        if writing, let read = readEvents.removeValue(forKey: key) {
            for (i, kind, digest, signed) in read { try each(i, kind, digest, signed) }
            return
        }
        let rows = try db.run("events_keyed", [.text(key.kind), .text(key.value)] + LedgerRows.identity(identity), prepared: true,
                              what: "cannot read the ledger's events")
        for row in rows {
            guard row.count == 4, let i = row[0].flatMap({ Int64($0) }), let kind = row[1], let digest = row[2], let signed = row[3] else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            try each(i, LedgerEventKind(rawValue: kind), digest, signed)
        }
    }

    func customerEvents(_ customer: LedgerKey) throws(LedgerError) -> [LedgerKey: [StoredKeyedEvent]]? {
        guard !writing else { return nil }
        let rows = try db.run("customer_events", [.text(customer.value)] + LedgerRows.identity(identity), prepared: true,
                              what: "cannot read the ledger's events")
        var out: [LedgerKey: [StoredKeyedEvent]] = [customer: []]
        for row in rows {
            guard row.count == 7, let tag = row[0], let kind = row[1], let key = row[2] else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            let k = LedgerKey(kind: kind, value: key)
            if tag == "k" { out[k, default: []] += []; continue }
            guard let i = row[3].flatMap({ Int64($0) }), let eventKind = row[4], let digest = row[5], let signed = row[6] else {
                throw .storage("the ledger's events table returned an unexpected row")
            }
            out[k, default: []].append((i, LedgerEventKind(rawValue: eventKind), digest, signed))
        }
        return out
    }

    func keys(after id: Int64) throws(LedgerError) -> (keys: Set<LedgerKey>, last: Int64) {
        // In a write, usually read already by `beginWrite`, after the same id.
        if writing, let p = prefetched, p.after == id {
            prefetched = nil
            newerUsable = true
            mark = p.last
            return (p.keys, p.last)
        }
        // The mark first: an event committed meanwhile is found by the next look, not skipped. Every id up to a
        // marker read earlier (by the `changeMarker` this catch-up follows) was visible then: ids become visible in
        // order (the writers' lock spans the commit).
        let marker: Int64
        if writing { marker = writeMax } else if let m = lastMarker { marker = m } else { marker = try changeMarker() }
        lastMarker = nil
        let last = max(id, marker)
        mark = last
        guard last > id else { return ([], id) }
        let rows = try db.run("keys_after", [.int(id), .int(last)], prepared: true, what: "cannot read the ledger's index")
        var keys: Set<LedgerKey> = []
        for row in rows where row.count == 2 { keys.insert(LedgerKey(kind: row[0] ?? "", value: row[1] ?? "")) }
        return (keys, last)
    }

    func index(_ eventId: Int64, keys: [LedgerKey], versions: [(kind: String, digest: String)]) throws(LedgerError) {
        for k in keys {
            try db.run("insert_key", [.text(k.kind), .text(k.value), .int(eventId)], prepared: true, what: "cannot index the event")
        }
        for v in versions {
            try db.run("insert_version", [.text(v.kind), .text(v.digest)], prepared: true, what: "cannot record the event's versions")
        }
    }

    func verdicts(ofSubscription originalTransactionId: String) throws(LedgerError) -> [String: StoredVerdict] {
        if writing, let read = readVerdicts.removeValue(forKey: originalTransactionId) { return read }
        let rows = try db.run("verdicts_of", [.text(originalTransactionId)], prepared: true, what: "cannot read the verdicts")
        var out: [String: StoredVerdict] = [:]
        for r in rows where r.count == 4 {
            out[r[0] ?? ""] = StoredVerdict(verdict: r[1], engineStatus: r[2].flatMap { Int64($0) }, missing: r[3])
        }
        return out
    }

    func setVerdict(_ uuid: String, _ v: StoredVerdict) throws(LedgerError) {
        // Sent with the COMMIT (`commit`).
        if writing {
            pendingVerdicts[uuid] = v
            // A write that re-evaluates a whole ledger (the index's backfill) sends them 10,000 at a time.
            if pendingVerdicts.count >= 10_000 { try db.run(verdictUpdate(), what: "cannot record the verdicts") }
            return
        }
        try db.run("update_verdict", [v.verdict.sql, v.engineStatus.sql, v.missing.sql, .text(uuid)], prepared: true,
                   what: "cannot record the verdict")
    }

    func counts() throws(LedgerError) -> LedgerCounts {
        let rows = try db.run(inSchema("""
            SELECT (SELECT count(*) FROM appstore_ledger.notifications),
              (SELECT count(*) FROM appstore_ledger.transactions WHERE transaction_id <> ''),
              (SELECT count(*) FROM appstore_ledger.ledger_versions WHERE kind = 't'),
              (SELECT count(*) FROM appstore_ledger.ledger_versions WHERE kind = 'r'),
              (SELECT count(DISTINCT key) FROM appstore_ledger.event_keys WHERE kind = 's'),
              (SELECT count(DISTINCT key) FROM appstore_ledger.event_keys WHERE kind = 'c'),
              (SELECT count(*) FROM appstore_ledger.notifications WHERE verdict IS NOT NULL),
              (SELECT count(*) FROM appstore_ledger.notifications WHERE verdict = 'CONTRADICTION'),
              (SELECT count(*) FROM appstore_ledger.notifications WHERE verdict = 'INCOMPLETE_HISTORY')
            """), what: "cannot count the ledger's rows")
        guard let r = rows.first, r.count == 9 else { throw .storage("the ledger's counts returned an unexpected row") }
        let n = r.map { $0.flatMap { Int64($0) } ?? 0 }
        return LedgerCounts(notifications: n[0], transactions: n[1], transactionVersions: n[2], renewalInfos: n[3],
                            subscriptions: n[4], customers: n[5], checkedNotifications: n[6], contradictions: n[7],
                            incompleteHistories: n[8])
    }

    func disagreements(after cursor: LedgerDisagreementCursor?, limit: Int) throws(LedgerError) -> [LedgerDisagreement] {
        let collate = " COLLATE \"C\""
        let table = "\(schema).notifications"
        var out: [LedgerDisagreement] = []
        for verdict in LedgerStoredRows.verdicts(after: cursor) where out.count < limit {
            let left = SQLiteValue.int(Int64(limit - out.count))
            let rows = if let cursor, verdict == cursor.verdict {
                // The cursor's own verdict: after its row.
                try db.run(LedgerStoredRows.disagreementsAfterSQL(table: table, collate: collate, placeholders: ["$1", "$2", "$3", "$4"]),
                           [.text(verdict.rawValue), .int(cursor.signedDate), .text(cursor.notificationUUID), left],
                           what: "cannot read the disagreements")
            } else {
                try db.run(LedgerStoredRows.disagreementsSQL(table: table, collate: collate, placeholders: ("$1", "$2")),
                           [.text(verdict.rawValue), left], what: "cannot read the disagreements")
            }
            out += try rows.map { r throws(LedgerError) in try LedgerStoredRows.disagreement(r) }
        }
        return out
    }

    func keyPage(kind: String, after: String?, limit: Int) throws(LedgerError) -> [String] {
        // In the database's collation, the primary key's: a page reads along it in a database of any collation
        // (compared as "C" in one of another, each page read every key of its kind: 166 ms a page at 200,000
        // subscriptions in a C.UTF-8 database, 2026-11-30). The order is total (PostgreSQL breaks a collation's ties
        // by bytes), so the cursor is exact; "" sorts first in every collation: the first page.
        let rows = try db.run("key_page", [.text(kind), .text(after ?? ""), .int(Int64(limit))], prepared: true,
                              what: "cannot read the ledger's index")
        return rows.compactMap { $0.first ?? nil }
    }

    func backfillPending() throws(LedgerError) -> Bool {
        let rows = try db.run(inSchema("SELECT count(*) FROM appstore_ledger.ledger_backfill WHERE name = 'event_keys'"),
                              what: "cannot read the ledger's schema")
        return (PostgresConnection.scalar(rows).flatMap { Int64($0) } ?? 0) > 0
    }

    func backfillDone() throws(LedgerError) {
        try db.run(inSchema("DELETE FROM appstore_ledger.ledger_backfill WHERE name = 'event_keys'"),
                   what: "cannot record the index as built")
    }
}
