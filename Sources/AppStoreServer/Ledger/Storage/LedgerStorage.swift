/// What the ledger needs from its database: write transactions that exclude other writers (of any process), events
/// stored once each, read back in the order they were committed, and a cheap way to learn that another connection
/// has committed. `LedgerStore` (SQLite) and `PostgresLedgerStore` (PostgreSQL, libpq loaded on demand) provide it;
/// every call is made under the ledger's lock.
protocol LedgerStorage: AnyObject, Sendable {
    /// The ledger's identity, as recorded in the database (checked against the opener's, or adopted).
    var identity: LedgerIdentity { get }
    /// Starts a write transaction; other writers wait until it commits or rolls back.
    func beginWrite() throws(LedgerError)
    /// `beginWrite`, for a transaction that will read the events of the subscription keys `reading` and their
    /// notifications' verdicts, and those of `ifChanged` if the catch-up finds events under them (their cached states
    /// are then evicted): a store may read them at once (PostgreSQL: in the lock's round trip), for the
    /// `events(keyed:)` and `verdicts(ofSubscription:)` calls of the transaction, which then see no events it stores
    /// itself (the caller applies those).
    func beginWrite(reading: [LedgerKey], ifChanged: [LedgerKey]) throws(LedgerError)
    /// The events of `key` (one of `ifChanged`) stored after the id the write's catch-up started from, when
    /// `beginWrite` read them and that catch-up used them: applied to the state cached before the catch-up evicted it,
    /// they give the key's state without reading its older events again. nil: not read. Each as `events(keyed:)`
    /// gives it: id, kind, payload digest and the `signed` text as stored.
    func newEvents(keyed key: LedgerKey) throws(LedgerError) -> [StoredKeyedEvent]?
    /// Commits it; returns once it is durable.
    func commit() throws(LedgerError)
    /// Commits it; returns nil once it is durable, or (PostgreSQL) once it is committed and visible, with the wait
    /// for its durability, to be called without the ledger's lock (the next write may start meanwhile) before anything
    /// it stored is acknowledged; the wait throws when durability is not confirmed.
    func commitAwaitingFlush() throws(LedgerError) -> (() throws(LedgerError) -> Void)?
    /// Rolls it back (best effort: used on a failure path).
    func rollback()
    /// Stores `event` in the write transaction; its id, or nil when the same payload is already stored.
    func insert(_ event: LedgerEvent, receivedAt: Int64) throws(LedgerError) -> Int64?
    /// Prepares what `insert(events, receivedAt:)` will send (before the write lock is taken: the other writers do
    /// not wait for it). Optional: SQLite has nothing to prepare.
    func stage(_ events: [LedgerEvent], receivedAt: Int64)
    /// Stores and indexes `events` in the write transaction, in order (`index` with `LedgerKey.keys(of:)` and
    /// `versions(of:)` for each one stored); each one's id, or nil when the same payload is already stored (or earlier
    /// in `events`). PostgreSQL: one multi-row statement (PostgresBatchInsert.swift).
    func insert(_ events: [LedgerEvent], receivedAt: Int64) throws(LedgerError) -> [Int64?]
    /// Every stored event after `id`, in id order (which is commit order: writers are serialized).
    func events(after id: Int64, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError)
    /// At most `limit` stored events after `id`, in id order (a page: `Ledger.reverify`).
    func events(after id: Int64, limit: Int, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError)
    /// The newest stored events with an id below `before`, newest first, at most `limit` (any process's).
    func recentEvents(before: Int64, limit: Int) throws(LedgerError) -> [StoredEventRow]
    /// A value that differs when another connection has committed since it was last read.
    func changeMarker() throws(LedgerError) -> Int64
    /// Changes when the connection to the database was re-established, or a flush was not confirmed (PostgreSQL:
    /// another process's commit is visible a flush before it is durable, so a server lost meanwhile may have lost what
    /// was read): the ledger then drops what it cached and starts its catch-up from the database's newest event.
    /// SQLite: always 0.
    var connectionGeneration: Int { get }
    /// The number of stored events.
    func eventCount() throws(LedgerError) -> Int64
    /// At most `limit` rows after `id` of every identity, in id order, their `signed` text as stored (`ledger check`).
    func storedRows(after id: Int64, limit: Int) throws(LedgerError) -> [(id: Int64, kind: String, stored: String)]
    /// Which of `digests` (hex payload SHA-256) are stored, of any identity, with the signature segment each was
    /// stored with (bulk import skips a line whose payload and signature are stored).
    func storedPayloads(_ digests: Set<String>) throws(LedgerError) -> [String: Substring]
    /// The text stored under a JWS header's digest in `jws_headers`, unchecked (nil: none).
    func storedHeader(_ digest: String) throws(LedgerError) -> String?

    // Per-key queries (docs/ledger.md, "Queries"; `LedgerKey`).

    /// The largest event id stored (0: none): where the next look for other processes' events starts.
    func lastEventId() throws(LedgerError) -> Int64
    /// Every stored event indexed under `key` (any order: the engine does not depend on it): its id, kind, payload
    /// digest (hex) and `signed` text as stored (`expand` gives its JWS).
    func events(keyed key: LedgerKey, _ each: (Int64, LedgerEventKind, String, String) throws(LedgerError) -> Void) throws(LedgerError)
    /// A customer's events (`events(keyed:)` of `customer`) and those of the original transactions (`s`, `p` keys)
    /// its events are indexed under, in one read (PostgreSQL: one round trip instead of one per key); an event of the
    /// customer's is not repeated under an original, and each original found has an entry (empty if all its events
    /// are the customer's). nil: not offered (SQLite: no round trips to save).
    func customerEvents(_ customer: LedgerKey) throws(LedgerError) -> [LedgerKey: [StoredKeyedEvent]]?
    /// The JWS that stored text `stored` of event `id` holds (StoredSigned.expand with the store's headers).
    func expand(_ stored: String, _ id: Int64) throws(LedgerError) -> String
    /// The JWS header stored under `digest` (cached, checked against its digest; nil: none), for event `id`.
    func header(_ digest: String, _ id: Int64) throws(LedgerError) -> String?
    /// The keys of the events stored after `id` (by any process), and the largest id among them (`id` if none).
    func keys(after id: Int64) throws(LedgerError) -> (keys: Set<LedgerKey>, last: Int64)
    /// Indexes event `eventId` under `keys`, and records the fact versions it carries, in the write transaction.
    func index(_ eventId: Int64, keys: [LedgerKey], versions: [(kind: String, digest: String)]) throws(LedgerError)
    /// The stored oracle verdicts of the notifications about subscription `originalTransactionId`, by UUID.
    func verdicts(ofSubscription originalTransactionId: String) throws(LedgerError) -> [String: StoredVerdict]
    /// Records notification `uuid`'s verdict, in the write transaction.
    func setVerdict(_ uuid: String, _ verdict: StoredVerdict) throws(LedgerError)
    /// The summary's counts.
    func counts() throws(LedgerError) -> LedgerCounts
    /// At most `limit` of the notifications whose verdict is not AGREES after `after` (nil: from the list's start): the
    /// contradictions first, then the incomplete histories, each oldest first (signedDate, then notificationUUID:
    /// `LedgerDisagreement.listOrder`); the summary's list and `Ledger.disagreements(after:limit:)`'s pages.
    func disagreements(after: LedgerDisagreementCursor?, limit: Int) throws(LedgerError) -> [LedgerDisagreement]
    /// At most `limit` distinct keys of `kind` after `after` (nil: from the first), in the database's order.
    func keyPage(kind: String, after: String?, limit: Int) throws(LedgerError) -> [String]
    /// Whether `commitInOneTrip` can store `batch` (PostgreSQL: one statement's worth, the flush connection open, the
    /// connection not waiting to be re-established): the ledger then evaluates the batch's subscriptions before the
    /// write (`readSubscriptions` for those it has not cached), not under the writers' lock.
    func canCommitInOneTrip(_ batch: [LedgerEvent]) -> Bool
    /// The stored events of the subscriptions `keys` and their notifications' verdicts, read outside a write in one
    /// snapshot, with that snapshot's newest event id.
    func readSubscriptions(_ keys: [LedgerKey]) throws(LedgerError) -> SubscriptionsRead?
    /// The write in one round trip (docs/ledger.md, "Fleet"): lock, the catch-up's read of the keys of the events
    /// stored after `after`, the batch `stage` made (for `batch` and `receivedAt`), `verdicts` (notification UUID to
    /// verdict) and the COMMIT; nothing written (`.changed`) when an event is stored under one of `unchanged`'s keys
    /// after the id beside it (the states the verdicts came from are then not the stored ones). nil, and nothing
    /// sent, when it is not possible here or `connectionGeneration` is not `generation` any more, or would not be
    /// by the time it is sent (a reconnection pending): the states came from what the old connection read.
    func commitInOneTrip(_ batch: [LedgerEvent], receivedAt: Int64, after: Int64, unchanged: [(key: LedgerKey, after: Int64)],
                         verdicts: [String: StoredVerdict], generation: Int) throws(LedgerError) -> OneTripOutcome?
    /// Whether the index must still be built from the stored events (a database made before it existed).
    func backfillPending() throws(LedgerError) -> Bool
    /// Records that it has been (in the write transaction).
    func backfillDone() throws(LedgerError)
}

/// What `readSubscriptions` read: each subscription's events (id, kind, payload digest, `signed` as stored), its
/// notifications' verdicts by UUID, and the newest event id when they were read.
struct SubscriptionsRead {
    var events: [LedgerKey: [(Int64, LedgerEventKind, String, String)]] = [:]
    var verdicts: [String: [String: StoredVerdict]] = [:]
    var newest: Int64 = 0
}

/// What `commitInOneTrip` did.
enum OneTripOutcome {
    /// Committed and visible: each event's id (nil: its payload was stored before), the keys of the events other
    /// processes stored after the id given (up to `newest`, the newest id before this batch's), and the wait for the
    /// flush (to be called without the ledger's lock before anything is acknowledged).
    case committed(ids: [Int64?], othersKeys: Set<LedgerKey>, newest: Int64, flush: () throws(LedgerError) -> Void)
    /// An event was stored under one of the keys since they were read: nothing was written.
    case changed
}

/// A notification's oracle verdict as stored (nil verdict: nothing to compare).
struct StoredVerdict: Equatable {
    let verdict: String?
    let engineStatus: Int64?
    let missing: String?
}

/// The counts `Ledger.summary` reports, from SQL.
struct LedgerCounts {
    var notifications: Int64 = 0
    var transactions: Int64 = 0
    var transactionVersions: Int64 = 0
    var renewalInfos: Int64 = 0
    var subscriptions: Int64 = 0
    var customers: Int64 = 0
    var checkedNotifications: Int64 = 0
    var contradictions: Int64 = 0
    var incompleteHistories: Int64 = 0
}

/// One stored event as `events(keyed:)` gives it: id, kind, payload digest, the `signed` text as stored.
typealias StoredKeyedEvent = (id: Int64, kind: LedgerEventKind, digest: String, stored: String)

extension LedgerStorage {
    func customerEvents(_ customer: LedgerKey) throws(LedgerError) -> [LedgerKey: [StoredKeyedEvent]]? { nil }
    func beginWrite(reading: [LedgerKey], ifChanged: [LedgerKey]) throws(LedgerError) { try beginWrite() }
    func newEvents(keyed key: LedgerKey) throws(LedgerError) -> [StoredKeyedEvent]? { nil }
    var connectionGeneration: Int { 0 }
    func stage(_ events: [LedgerEvent], receivedAt: Int64) {}
    func canCommitInOneTrip(_ batch: [LedgerEvent]) -> Bool { false }
    func readSubscriptions(_ keys: [LedgerKey]) throws(LedgerError) -> SubscriptionsRead? { nil }
    func commitInOneTrip(_ batch: [LedgerEvent], receivedAt: Int64, after: Int64, unchanged: [(key: LedgerKey, after: Int64)],
                         verdicts: [String: StoredVerdict], generation: Int) throws(LedgerError) -> OneTripOutcome? { nil }
    func commitAwaitingFlush() throws(LedgerError) -> (() throws(LedgerError) -> Void)? {
        try commit()
        return nil
    }

    /// One statement per event and index row (SQLite: no round trips to save).
    func insert(_ events: [LedgerEvent], receivedAt: Int64) throws(LedgerError) -> [Int64?] {
        var ids: [Int64?] = []
        for e in events {
            let id = try insert(e, receivedAt: receivedAt)
            if let id { try index(id, keys: LedgerKey.keys(of: e), versions: e.factVersions) }
            ids.append(id)
        }
        return ids
    }
}

/// One row of the events table, as stored.
struct StoredEventRow {
    let id: Int64
    let kind: LedgerEventKind
    let signed: String
    let receivedAt: Int64
}

/// The readable tables' upserts, the same statement for SQLite and PostgreSQL but for the table's name, its
/// placeholders and how "newer" compares: a row is replaced only by a newer signed version (signedDate, then payload
/// bytes, the engine's order). Columns in `LedgerRows`' order, the key first.
enum LedgerUpsert {
    static let transactions = ("transactions", ["transaction_id", "original_transaction_id", "product_id", "product_type",
        "app_account_token", "purchase_date", "expires_date", "revocation_date", "signed_date", "payload", "event_id"])
    static let renewalInfos = ("renewal_infos", ["original_transaction_id", "auto_renew_status", "auto_renew_product_id",
        "is_in_billing_retry_period", "grace_period_expires_date", "expiration_intent", "signed_date", "payload", "event_id"])
    static let notifications = ("notifications", ["notification_uuid", "notification_type", "subtype", "status",
        "original_transaction_id", "transaction_id", "signed_date", "payload", "event_id"])

    /// `table` is what the statement inserts into (with an alias for PostgreSQL), `current` how it names the row in
    /// place, `placeholder(n)` the n-th parameter (1-based), `collate` how payloads compare byte-wise.
    static func sql(_ t: (String, [String]), into table: String, current: String, collate: String = "",
                    placeholder: (Int) -> String) -> String {
        let (_, columns) = t
        let updates = columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) "
            + "VALUES (\((1...columns.count).map(placeholder).joined(separator: ", "))) "
            + "ON CONFLICT (\(columns[0])) DO UPDATE SET \(updates) "
            + "WHERE excluded.signed_date > \(current).signed_date OR (excluded.signed_date = \(current).signed_date "
            + "AND excluded.payload\(collate) > \(current).payload\(collate))"
    }
}

/// The values of the readable tables' rows for one event (the same columns in SQLite and PostgreSQL).
enum LedgerRows {
    /// The values that select a ledger's own events (`bundle_id = ? AND environment = ?`).
    static func identity(_ i: LedgerIdentity) -> [SQLiteValue?] { [.text(i.bundleId), .text(i.environment.rawValue)] }

    /// `signed`: the stored form of `e.signed` (`StoredSigned.compact`; nil: as received).
    static func event(_ e: LedgerEvent, receivedAt: Int64, signed: String? = nil) -> [SQLiteValue?] {
        [.text(e.kind.rawValue), .text(e.payloadDigest), .text(signed ?? e.signed), e.signedDate.sql, .int(receivedAt),
         .text(e.identity.bundleId), .text(e.identity.environment.rawValue), e.identity.appAppleId.sql]
    }

    static func transaction(_ t: TransactionVersion, eventId: Int64) -> [SQLiteValue?] {
        [.text(t.transactionId), .text(t.originalTransactionId), t.value.productId.sql, (t.value.type?.rawValue).sql,
         t.value.appAccountToken.map { $0.uuidString.lowercased() }.sql, t.purchaseDate.sql, t.expiresDate.sql,
         t.revocationDate.sql, .int(t.signedDate), .text(String(decoding: t.payload, as: UTF8.self)), .int(eventId)]
    }

    static func renewalInfo(_ r: RenewalVersion, eventId: Int64) -> [SQLiteValue?] {
        let v = r.value
        return [.text(r.originalTransactionId), v.autoRenewStatus.map { Int64($0.rawValue) }.sql, v.autoRenewProductId.sql,
                v.isInBillingRetryPeriod.map { $0 ? 1 : 0 }.sql, r.gracePeriodExpiresDate.sql,
                v.expirationIntent.map { Int64($0.rawValue) }.sql, .int(r.signedDate),
                .text(String(decoding: r.payload, as: UTF8.self)), .int(eventId)]
    }

    static func notification(_ n: NotificationFacts, eventId: Int64) -> [SQLiteValue?] {
        [.text(n.uuid), (n.type?.rawValue).sql, (n.subtype?.rawValue).sql, n.status.map { Int64($0.rawValue) }.sql,
         n.originalTransactionId.sql, n.transactionId.sql, .int(n.signedDate),
         .text(String(decoding: n.payload, as: UTF8.self)), .int(eventId)]
    }
}

/// Reading the summary's rows back, the same for SQLite and PostgreSQL.
enum LedgerStoredRows {
    /// At most `limit` (the last parameter) notifications of one verdict (the first parameter) in the list's order
    /// (signedDate, then notificationUUID: `collate` makes PostgreSQL compare bytes), read along the index on
    /// (verdict, signed_date, notification_uuid): a million incomplete histories cost what the first `limit` do.
    static func disagreementsSQL(table: String, collate: String, placeholders: (String, String)) -> String {
        "SELECT notification_uuid, notification_type, subtype, signed_date, original_transaction_id, status, "
            + "engine_status, verdict, missing FROM \(table) WHERE verdict = \(placeholders.0) "
            + "ORDER BY verdict, signed_date, notification_uuid\(collate) LIMIT \(placeholders.1)"
    }

    /// The same, after a page's last row (parameters: verdict, its signed_date, its notification_uuid, limit): a row
    /// value compared in the index's order, so the page starts where the index does and costs only its rows.
    static func disagreementsAfterSQL(table: String, collate: String, placeholders: [String]) -> String {
        "SELECT notification_uuid, notification_type, subtype, signed_date, original_transaction_id, status, "
            + "engine_status, verdict, missing FROM \(table) WHERE verdict = \(placeholders[0]) "
            + "AND (signed_date, notification_uuid\(collate)) > (\(placeholders[1]), \(placeholders[2])) "
            + "ORDER BY verdict, signed_date, notification_uuid\(collate) LIMIT \(placeholders[3])"
    }

    /// The verdicts a page after `cursor` reads, in order: the cursor's own (after its row), then the later ones.
    static func verdicts(after cursor: LedgerDisagreementCursor?) -> ArraySlice<LedgerOracleVerdict> {
        guard let cursor, let i = listedVerdicts.firstIndex(of: cursor.verdict) else { return listedVerdicts[...] }
        return listedVerdicts[i...]
    }

    /// The verdicts the list holds, in its order.
    static let listedVerdicts: [LedgerOracleVerdict] = [.contradiction, .incompleteHistory]

    /// One row of `disagreementsSQL`, as text.
    static func disagreement(_ r: [String?]) throws(LedgerError) -> LedgerDisagreement {
        guard r.count == 9, let uuid = r[0], let signed = r[3].flatMap({ Int64($0) }), let verdict = r[7],
              let apple = r[5].flatMap({ Int32($0) }) else {
            throw .storage("the notifications table returned an unexpected row (notification \(r.first.flatMap { $0 } ?? "?"))")
        }
        return LedgerDisagreement(
            notificationUUID: uuid, notificationType: r[1].map(NotificationTypeV2.init(rawValue:)),
            subtype: r[2].map(Subtype.init(rawValue:)), signedDate: LedgerTime.date(signed),
            originalTransactionId: r[4] ?? "", appleStatus: Status(rawValue: apple),
            engineStatus: r[6].flatMap { Int32($0) }.map(Status.init(rawValue:)), verdict: LedgerOracleVerdict(rawValue: verdict),
            missing: r[8])
    }
}
