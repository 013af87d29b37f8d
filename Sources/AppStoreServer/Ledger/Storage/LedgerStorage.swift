/// What the ledger needs from its database: write transactions that exclude other writers (of any process), events
/// stored once each, read back in the order they were committed, and a cheap way to learn that another connection
/// has committed. `LedgerStore` (SQLite) and `PostgresLedgerStore` (PostgreSQL, libpq loaded on demand) provide it;
/// every call is made under the ledger's lock.
protocol LedgerStorage: AnyObject, Sendable {
    /// Starts a write transaction; other writers wait until it commits or rolls back.
    func beginWrite() throws(LedgerError)
    /// Commits it; returns once it is durable.
    func commit() throws(LedgerError)
    /// Rolls it back (best effort: used on a failure path).
    func rollback()
    /// Stores `event` in the write transaction; its id, or nil when the same payload is already stored.
    func insert(_ event: LedgerEvent, receivedAt: Int64) throws(LedgerError) -> Int64?
    /// Every stored event after `id`, in id order (which is commit order: writers are serialized).
    func events(after id: Int64, _ each: (Int64, LedgerEventKind, String) throws(LedgerError) -> Void) throws(LedgerError)
    /// The newest stored events with an id below `before`, newest first, at most `limit` (any process's).
    func recentEvents(before: Int64, limit: Int) throws(LedgerError) -> [StoredEventRow]
    /// A value that differs when another connection has committed since it was last read.
    func changeMarker() throws(LedgerError) -> Int64
    /// The number of stored events.
    func eventCount() throws(LedgerError) -> Int64
}

/// One row of the events table, as stored.
struct StoredEventRow {
    let id: Int64
    let kind: LedgerEventKind
    let signed: String
    let receivedAt: Int64
}

/// The values of the readable tables' rows for one event (the same columns in SQLite and PostgreSQL).
enum LedgerRows {
    static func event(_ e: LedgerEvent, receivedAt: Int64) -> [SQLiteValue?] {
        [.text(e.kind.rawValue), .text(e.payloadDigest), .text(e.signed), e.signedDate.sql, .int(receivedAt)]
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
