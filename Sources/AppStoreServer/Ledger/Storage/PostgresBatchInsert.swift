/// Group commit on PostgreSQL (docs/ledger.md, "Fleet"): a batch of events (the callers `CommitQueue` gathered) is
/// stored with **one statement**: a multi-row INSERT into `events` and, as data-modifying WITH queries joined to the
/// ids it returns, the upserts of the readable rows, the index rows (`event_keys`, `ledger_versions`) and the new JWS
/// headers; instead of a round trip per statement per event. The statement is prepared (`batchStatement`): the batch
/// is its parameters, JSON arrays of rows, so the server does not parse and plan it again for each batch. They are
/// read as `jsonb` (parsed once): a `json` value is parsed again by every `->>`, and a row's dozen columns each parsing
/// the row's texts (a stored JWS, a payload) again were most of the server's work under the writers' lock. Round
/// trips, not the server's commit, were what a batch cost, every one of them under the writers' lock (so the other
/// processes waited for them too).
extension PostgresLedgerStore {
    /// Events per statement (a bound on one statement's size: the batch's JSON parameters).
    static let batchRows = 500

    /// The readable tables' integer columns (every other one is text; `event_id` comes from the insert): the
    /// parameters of a VALUES list have no type of their own, so each is cast to its column's.
    static let integerColumns: Set<String> = ["purchase_date", "expires_date", "revocation_date", "signed_date",
        "auto_renew_status", "is_in_billing_retry_period", "grace_period_expires_date", "expiration_intent", "status"]

    /// The batch statement, prepared once per connection (`batch_insert`): its rows are its seven parameters, each a
    /// JSON array of rows (arrays of the columns' values in `LedgerRows`' order, the event's payload digest last where
    /// a row is joined to its event's id), so it is parsed and planned once, not for every batch. $1 the events (their
    /// ids handed out in the array's order, which is the batch's: the order this process applies them in, and the
    /// order a catch-up reads them back), $2-$4 the transactions, renewal infos and notifications (without event_id),
    /// $5 the JWS headers, $6 the `event_keys` rows, $7 the `ledger_versions` rows. Nothing is written while the
    /// transaction's `changedFlag` is set (`commitInOneTrip`).
    func batchStatement() -> String {
        func cells(_ columns: some Sequence<String>) -> String {
            columns.enumerated().map { i, c in
                "(a.r->>\(i))" + (Self.integerColumns.contains(c) || Self.eventIntegerColumns.contains(c) ? "::bigint" : "")
            }.joined(separator: ", ")
        }
        let eventColumns = ["kind", "payload_sha256", "signed", "signed_date", "received_at", "bundle_id", "environment",
                            "app_apple_id"]
        var with = ["ev AS (" + inSchema("INSERT INTO appstore_ledger.events (\(eventColumns.joined(separator: ", "))) ")
            + "SELECT \(cells(eventColumns)) FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS a (r, n) "
            + "WHERE \(Self.unchanged) ORDER BY a.n "
            + "ON CONFLICT (payload_sha256) DO NOTHING RETURNING id, payload_sha256)"]
        for (n, t) in [LedgerUpsert.transactions, LedgerUpsert.renewalInfos, LedgerUpsert.notifications].enumerated() {
            let given = t.1.dropLast()  // event_id: the id its event got
            let source = "SELECT \(cells(given)), ev.id FROM jsonb_array_elements($\(n + 2)::jsonb) AS a (r) "
                + "JOIN ev ON ev.payload_sha256 = a.r->>\(given.count)"
            with.append("u\(n) AS (\(upsert(t, from: source)))")
        }
        // The batch's JWS headers (each distinct one once; no constraint ties an event to its header row, and both
        // are visible together at COMMIT), and the index rows of the events this statement stores.
        with.append("h AS (" + inSchema("INSERT INTO appstore_ledger.jws_headers (digest, header) ")
            + "SELECT a.r->>0, a.r->>1 FROM jsonb_array_elements($5::jsonb) AS a (r) WHERE \(Self.unchanged) "
            + "ON CONFLICT (digest) DO NOTHING)")
        with.append("k AS (" + inSchema("INSERT INTO appstore_ledger.event_keys (kind, key, event_id) ")
            + "SELECT a.r->>0, a.r->>1, ev.id FROM jsonb_array_elements($6::jsonb) AS a (r) JOIN ev ON ev.payload_sha256 = a.r->>2 "
            + "ON CONFLICT DO NOTHING)")
        with.append("vr AS (" + inSchema("INSERT INTO appstore_ledger.ledger_versions (kind, digest) ")
            + "SELECT a.r->>0, a.r->>1 FROM jsonb_array_elements($7::jsonb) AS a (r) JOIN ev ON ev.payload_sha256 = a.r->>2 "
            + "ON CONFLICT DO NOTHING)")
        return "WITH \(with.joined(separator: ", ")) SELECT id, payload_sha256 FROM ev"
    }

    /// The events' integer columns (as `integerColumns` for the readable tables).
    static let eventIntegerColumns: Set<String> = ["signed_date", "received_at", "app_apple_id"]

    /// The batch statement's parameters for `events`: the first of each payload (one row; ON CONFLICT DO NOTHING skips
    /// those already stored), in statements of at most `batchRows` events, each its seven JSON texts.
    struct BatchParameters {
        var first: [String: Int] = [:]
        var statements: [[String]] = []
    }

    func batchParameters(_ events: [LedgerEvent], receivedAt: Int64) -> BatchParameters {
        var b = BatchParameters()
        var fresh: [Int] = []
        for (i, e) in events.enumerated() where b.first[e.payloadDigest] == nil {
            b.first[e.payloadDigest] = i
            fresh.append(i)
        }
        for start in stride(from: 0, to: fresh.count, by: Self.batchRows) {
            let part = fresh[start..<min(start + Self.batchRows, fresh.count)].map { events[$0] }
            var eventRows = JSONRows()
            // Each event in its stored form (its JWS headers apart, each distinct one stored once: StoredSigned).
            var headers: [String: String] = [:]
            for e in part {
                let (signed, jwsHeaders) = e.storedForm
                for h in jwsHeaders { headers[h.digest] = h.text }
                eventRows.append(LedgerRows.event(e, receivedAt: receivedAt, signed: signed))
            }
            var headerRows = JSONRows()
            for (digest, text) in headers.sorted(by: { $0.key < $1.key }) { headerRows.append([.text(digest), .text(text)]) }
            let (t, r, n) = readableRows(part)
            let (keys, versions) = indexRows(part)
            b.statements.append([eventRows, t, r, n, headerRows, keys, versions].map(\.text))
        }
        return b
    }

    func insert(_ events: [LedgerEvent], receivedAt: Int64) throws(LedgerError) -> [Int64?] {
        // Made before the writers' lock (`stage`), when it was for these events; and sent with the lock
        // (`beginWrite`) when it is one statement.
        let b: BatchParameters
        let matches = staged.map { $0.receivedAt == receivedAt && $0.digests.elementsEqual(events.lazy.map(\.payloadDigest)) } ?? false
        if let s = staged, matches {
            b = s.parameters
        } else {
            guard insertedRows == nil else { throw .storage("the batch stored with the lock is not the one to insert") }
            b = batchParameters(events, receivedAt: receivedAt)
        }
        staged = nil
        var ids = [Int64?](repeating: nil, count: events.count)
        for parameters in b.statements {
            let rows: [[String?]]
            if let sent = insertedRows {
                rows = sent
                insertedRows = nil
            } else {
                rows = try db.run("batch_insert", parameters.map { .text($0) }, prepared: true, what: "cannot store the events")
            }
            for row in rows {
                guard row.count == 2, let id = row[0].flatMap({ Int64($0) }), let digest = row[1], let i = b.first[digest] else {
                    throw .storage("the ledger's events table returned an unexpected row")
                }
                ids[i] = id
                batchLastId = max(batchLastId, id)
            }
        }
        return ids
    }

    /// The readable rows of `events` (without event_id, then the event's payload digest). Of each key only the newest
    /// version in the batch (the engine's order; the first of equal ones, as one row after another would keep it),
    /// since one statement cannot update a row twice: a version that lost here would not have replaced it anyway. A
    /// row whose event was stored before gets no id and is not written (its version the row has already seen).
    private func readableRows(_ events: [LedgerEvent]) -> (JSONRows, JSONRows, JSONRows) {
        var transactions: [String: (TransactionVersion, String)] = [:], tOrder: [String] = []
        var renewals: [String: (RenewalVersion, String)] = [:], rOrder: [String] = []
        var notifications: [String: (NotificationFacts, String)] = [:], nOrder: [String] = []
        for e in events {
            let sha = e.payloadDigest
            if let t = e.transaction {
                if let (old, _) = transactions[t.transactionId] {
                    if old.isOlder(than: t) { transactions[t.transactionId] = (t, sha) }
                } else { transactions[t.transactionId] = (t, sha); tOrder.append(t.transactionId) }
            }
            if let r = e.renewalInfo {
                if let (old, _) = renewals[r.originalTransactionId] {
                    if old.isOlder(than: r) { renewals[r.originalTransactionId] = (r, sha) }
                } else { renewals[r.originalTransactionId] = (r, sha); rOrder.append(r.originalTransactionId) }
            }
            if let n = e.notification {
                if let (old, _) = notifications[n.uuid] {
                    if old.isOlder(than: n) { notifications[n.uuid] = (n, sha) }
                } else { notifications[n.uuid] = (n, sha); nOrder.append(n.uuid) }
            }
        }
        // The rows' values without event_id (the last column, given as 0 here and dropped), then the event's digest.
        var t = JSONRows(), r = JSONRows(), n = JSONRows()
        for k in tOrder { if let (v, sha) = transactions[k] { t.append(LedgerRows.transaction(v, eventId: 0).dropLast() + [.text(sha)]) } }
        for k in rOrder { if let (v, sha) = renewals[k] { r.append(LedgerRows.renewalInfo(v, eventId: 0).dropLast() + [.text(sha)]) } }
        for k in nOrder { if let (v, sha) = notifications[k] { n.append(LedgerRows.notification(v, eventId: 0).dropLast() + [.text(sha)]) } }
        return (t, r, n)
    }

    /// The `event_keys` and `ledger_versions` rows of `events` (`LedgerKey.keys(of:)`, `versions(of:)`), each with its
    /// event's digest, joined to the id its event got: an event stored before gets none (it was indexed then), as
    /// `index` does one at a time. A version two events of the batch carry is one row (ON CONFLICT DO NOTHING within
    /// the statement too).
    private func indexRows(_ events: [LedgerEvent]) -> (keys: JSONRows, versions: JSONRows) {
        var keys = JSONRows(), versions = JSONRows()
        for e in events {
            let sha = e.payloadDigest
            for k in LedgerKey.keys(of: e) { keys.append([.text(k.kind), .text(k.value), .text(sha)]) }
            for v in e.factVersions { versions.append([.text(v.kind), .text(v.digest), .text(sha)]) }
        }
        return (keys, versions)
    }

    /// The table's upsert (`LedgerUpsert`, as the prepared one-row statements use it) with its rows from `source`.
    private func upsert(_ t: (String, [String]), from source: String) -> String {
        let marker = "\u{1}"
        let one = LedgerUpsert.sql(t, into: "\(schema).\(t.0) AS cur", current: "cur", collate: " COLLATE \"C\"") { _ in marker }
        let values = "VALUES (" + Array(repeating: marker, count: t.1.count).joined(separator: ", ") + ")"
        return one.replacing(values, with: source)
    }

}

/// Rows as one JSON array of arrays (a text, an integer or null each): a parameter of the batch statement.
struct JSONRows {
    private var writer = JSONWriter()
    private var open = false

    mutating func append<C: Collection>(_ row: C) where C.Element == SQLiteValue? {
        if !open { writer.beginArray(); open = true }
        writer.beginArray()
        for v in row {
            switch v {
            case nil: writer.null()
            case .int(let x)?: writer.int(x)
            case .text(let x)?: writer.string(x)
            }
        }
        writer.endArray()
    }

    var text: String {
        guard open else { return "[]" }
        var w = writer
        w.endArray()
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
