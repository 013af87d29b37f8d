/// Group commit on PostgreSQL (docs/ledger.md, "Fleet"): a batch of events (the callers `CommitQueue` gathered) is
/// stored with **one statement**: a multi-row INSERT into `events` and, as data-modifying WITH queries joined to the
/// ids it returns, the upserts of the readable rows, the index rows (`event_keys`, `ledger_versions`) and the new JWS
/// headers; instead of a round trip per statement per event. Round trips, not the server's commit, were what a batch
/// cost, every one of them under the writers' lock (so the other processes waited for them too).
extension PostgresLedgerStore {
    /// Events per statement: at the widest (an event with a transaction, a renewal info and a notification: 40
    /// parameters, its at most 4 keys and 2 versions 18 more, its 3 headers 6) well below PostgreSQL's 65,535
    /// parameters.
    static let batchRows = 500

    /// The readable tables' integer columns (every other one is text; `event_id` comes from the insert): the
    /// parameters of a VALUES list have no type of their own, so each is cast to its column's.
    static let integerColumns: Set<String> = ["purchase_date", "expires_date", "revocation_date", "signed_date",
        "auto_renew_status", "is_in_billing_retry_period", "grace_period_expires_date", "expiration_intent", "status"]

    func insert(_ events: [LedgerEvent], receivedAt: Int64) throws(LedgerError) -> [Int64?] {
        var ids = [Int64?](repeating: nil, count: events.count)
        // A payload twice in the batch is one row (the first); ON CONFLICT DO NOTHING skips those already stored.
        var first: [String: Int] = [:]
        var fresh: [Int] = []
        for (i, e) in events.enumerated() where first[e.payloadDigest] == nil {
            first[e.payloadDigest] = i
            fresh.append(i)
        }
        for start in stride(from: 0, to: fresh.count, by: Self.batchRows) {
            let part = fresh[start..<min(start + Self.batchRows, fresh.count)].map { events[$0] }
            var values: [SQLiteValue?] = []
            var tuples: [String] = []
            // Each event in its stored form (its JWS headers apart, each distinct one stored once: StoredSigned), the
            // batch's new headers in one statement before the events that refer to them.
            var headers: [String: String] = [:]
            for e in part {
                let (signed, jwsHeaders) = StoredSigned.compact(e.signed)
                for h in jwsHeaders { headers[h.digest] = h.text }
                let row = LedgerRows.event(e, receivedAt: receivedAt, signed: signed)
                tuples.append(Self.tuple(from: values.count + 1, count: row.count))
                values += row
            }
            // Event ids are handed out in the VALUES' order (one nextval per row as it is inserted), which is the
            // batch's: the order this process applies them in, and the order a catch-up reads them back.
            var with = ["ev AS (" + inSchema("""
                INSERT INTO appstore_ledger.events (kind, payload_sha256, signed, signed_date, received_at, bundle_id,
                  environment, app_apple_id)
                VALUES \(tuples.joined(separator: ", ")) ON CONFLICT (payload_sha256) DO NOTHING RETURNING id, payload_sha256
                """) + ")"]
            for (n, upsert) in try readableUpserts(part, &values).enumerated() { with.append("u\(n) AS (\(upsert))") }
            // The batch's JWS headers (each distinct one once; no constraint ties an event to its header row, and
            // both are visible together at COMMIT), and the index rows of the events this statement stores.
            if !headers.isEmpty {
                var hTuples: [String] = []
                for (digest, text) in headers.sorted(by: { $0.key < $1.key }) {
                    values += [.text(digest), .text(text)]
                    hTuples.append(Self.tuple(from: values.count - 1, count: 2))
                }
                with.append("h AS (" + inSchema("INSERT INTO appstore_ledger.jws_headers (digest, header) VALUES "
                    + hTuples.joined(separator: ", ") + " ON CONFLICT (digest) DO NOTHING") + ")")
            }
            with += indexRows(part, &values)
            let rows = try db.run("WITH \(with.joined(separator: ", ")) SELECT id, payload_sha256 FROM ev", values,
                                  what: "cannot store the events")
            for row in rows {
                guard row.count == 2, let id = row[0].flatMap({ Int64($0) }), let digest = row[1], let i = first[digest] else {
                    throw .storage("the ledger's events table returned an unexpected row")
                }
                ids[i] = id
                batchLastId = max(batchLastId, id)
            }
        }
        return ids
    }

    /// The readable rows' upserts for `events` (parameters appended to `values`), each row joined to the id its event
    /// got (none: a payload stored before, whose version the row has already seen). Of each key only the newest
    /// version in the batch (the engine's order; the first of equal ones, as one row after another would keep it),
    /// since one statement cannot update a row twice: a version that lost here would not have replaced it anyway.
    private func readableUpserts(_ events: [LedgerEvent], _ values: inout [SQLiteValue?]) throws(LedgerError) -> [String] {
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
        let tRows = tOrder.compactMap { k in transactions[k].map { (LedgerRows.transaction($0.0, eventId: 0), $0.1) } }
        let rRows = rOrder.compactMap { k in renewals[k].map { (LedgerRows.renewalInfo($0.0, eventId: 0), $0.1) } }
        let nRows = nOrder.compactMap { k in notifications[k].map { (LedgerRows.notification($0.0, eventId: 0), $0.1) } }
        var statements: [String] = []
        for (t, rows) in [(LedgerUpsert.transactions, tRows), (LedgerUpsert.renewalInfos, rRows),
                          (LedgerUpsert.notifications, nRows)] where !rows.isEmpty {
            let columns = t.1
            guard columns.last == "event_id" else { throw .storage("the ledger's \(t.0) rows do not end with event_id") }
            let given = columns.dropLast()
            var tuples: [String] = []
            for (row, sha) in rows {
                let cells = zip(given, row).map { column, value in
                    values.append(value)
                    return "$\(values.count)::" + (Self.integerColumns.contains(column) ? "bigint" : "text")
                }
                values.append(.text(sha))
                tuples.append("(" + cells.joined(separator: ", ") + ", $\(values.count)::text)")
            }
            let source = "SELECT \(given.map { "v.\($0)" }.joined(separator: ", ")), ev.id "
                + "FROM (VALUES \(tuples.joined(separator: ", "))) AS v (\(given.joined(separator: ", ")), sha), ev "
                + "WHERE ev.payload_sha256 = v.sha"
            statements.append(upsert(t, from: source))
        }
        return statements
    }

    /// The `event_keys` and `ledger_versions` rows of `events` (`LedgerKey.keys(of:)`, `versions(of:)`), each joined
    /// to the id its event got: an event stored before gets none (it was indexed then), as `index` does one at a time.
    /// A version two events of the batch carry is one row (ON CONFLICT DO NOTHING within the statement too).
    private func indexRows(_ events: [LedgerEvent], _ values: inout [SQLiteValue?]) -> [String] {
        var keyTuples: [String] = [], versionTuples: [String] = []
        for e in events {
            let sha = e.payloadDigest
            for k in LedgerKey.keys(of: e) {
                values += [.text(k.kind), .text(k.value), .text(sha)]
                keyTuples.append("($\(values.count - 2)::text, $\(values.count - 1)::text, $\(values.count)::text)")
            }
            for v in LedgerKey.versions(of: e) {
                values += [.text(v.kind), .text(v.digest), .text(sha)]
                versionTuples.append("($\(values.count - 2)::text, $\(values.count - 1)::text, $\(values.count)::text)")
            }
        }
        var statements: [String] = []
        if !keyTuples.isEmpty {
            statements.append("k AS (" + inSchema("INSERT INTO appstore_ledger.event_keys (kind, key, event_id) ")
                + "SELECT v.kind, v.key, ev.id FROM (VALUES \(keyTuples.joined(separator: ", "))) AS v (kind, key, sha) "
                + "JOIN ev ON ev.payload_sha256 = v.sha ON CONFLICT DO NOTHING)")
        }
        if !versionTuples.isEmpty {
            statements.append("vr AS (" + inSchema("INSERT INTO appstore_ledger.ledger_versions (kind, digest) ")
                + "SELECT v.kind, v.digest FROM (VALUES \(versionTuples.joined(separator: ", "))) AS v (kind, digest, sha) "
                + "JOIN ev ON ev.payload_sha256 = v.sha ON CONFLICT DO NOTHING)")
        }
        return statements
    }

    /// The table's upsert (`LedgerUpsert`, as the prepared one-row statements use it) with its rows from `source`.
    private func upsert(_ t: (String, [String]), from source: String) -> String {
        let marker = "\u{1}"
        let one = LedgerUpsert.sql(t, into: "\(schema).\(t.0) AS cur", current: "cur", collate: " COLLATE \"C\"") { _ in marker }
        let values = "VALUES (" + Array(repeating: marker, count: t.1.count).joined(separator: ", ") + ")"
        return one.replacing(values, with: source)
    }

    /// "($from, $from+1, ...)".
    static func tuple(from: Int, count: Int) -> String {
        "(" + (from..<from + count).map { "$\($0)" }.joined(separator: ", ") + ")"
    }
}
