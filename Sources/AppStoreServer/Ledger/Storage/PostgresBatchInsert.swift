/// Group commit on PostgreSQL (docs/ledger.md, "Fleet"): a batch of events (the callers `CommitQueue` gathered) is
/// stored with one multi-row INSERT into `events` and one statement upserting the readable rows, instead of a round
/// trip per statement per event. Round trips, not the server's commit, were what a batch cost (every one of them
/// under the writers' lock, so the other processes waited for them too).
extension PostgresLedgerStore {
    /// Rows per statement: well below PostgreSQL's 65,535 parameters at the widest row (11 columns).
    static let batchRows = 500

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
            let part = fresh[start..<min(start + Self.batchRows, fresh.count)]
            var values: [SQLiteValue?] = []
            var tuples: [String] = []
            for i in part {
                let row = LedgerRows.event(events[i], receivedAt: receivedAt)
                tuples.append(Self.tuple(from: values.count + 1, count: row.count))
                values += row
            }
            // Event ids are handed out in the VALUES' order (one nextval per row as it is inserted), which is the
            // batch's: the order this process applies them in, and the order a catch-up reads them back.
            let rows = try db.run(inSchema("""
                INSERT INTO appstore_ledger.events (kind, payload_sha256, signed, signed_date, received_at, bundle_id,
                  environment, app_apple_id)
                VALUES \(tuples.joined(separator: ", ")) ON CONFLICT (payload_sha256) DO NOTHING RETURNING id, payload_sha256
                """), values, what: "cannot store the events")
            for row in rows {
                guard row.count == 2, let id = row[0].flatMap({ Int64($0) }), let digest = row[1], let i = first[digest] else {
                    throw .storage("the ledger's events table returned an unexpected row")
                }
                ids[i] = id
            }
        }
        try upsertReadableRows(events, ids)
        return ids
    }

    /// The readable rows of the events stored now, in one statement: of each key, only the newest version in the
    /// batch (the engine's order; the first of equal ones, as one row after another would keep it), since one
    /// statement cannot update a row twice. A version that lost here to another of the batch would not have replaced
    /// it anyway; one of an event stored earlier is in the row already (the row holds the newest it was given).
    private func upsertReadableRows(_ events: [LedgerEvent], _ ids: [Int64?]) throws(LedgerError) {
        var transactions: [String: (TransactionVersion, Int64)] = [:], tOrder: [String] = []
        var renewals: [String: (RenewalVersion, Int64)] = [:], rOrder: [String] = []
        var notifications: [String: (NotificationFacts, Int64)] = [:], nOrder: [String] = []
        for (e, id) in zip(events, ids) {
            guard let id else { continue }
            if let t = e.transaction {
                if let (old, _) = transactions[t.transactionId] {
                    if old.isOlder(than: t) { transactions[t.transactionId] = (t, id) }
                } else { transactions[t.transactionId] = (t, id); tOrder.append(t.transactionId) }
            }
            if let r = e.renewalInfo {
                if let (old, _) = renewals[r.originalTransactionId] {
                    if old.isOlder(than: r) { renewals[r.originalTransactionId] = (r, id) }
                } else { renewals[r.originalTransactionId] = (r, id); rOrder.append(r.originalTransactionId) }
            }
            if let n = e.notification {
                if let (old, _) = notifications[n.uuid] {
                    if old.isOlder(than: n) { notifications[n.uuid] = (n, id) }
                } else { notifications[n.uuid] = (n, id); nOrder.append(n.uuid) }
            }
        }
        let tRows = tOrder.map { k in transactions[k].map { LedgerRows.transaction($0.0, eventId: $0.1) } ?? [] }
        let rRows = rOrder.map { k in renewals[k].map { LedgerRows.renewalInfo($0.0, eventId: $0.1) } ?? [] }
        let nRows = nOrder.map { k in notifications[k].map { LedgerRows.notification($0.0, eventId: $0.1) } ?? [] }
        let width = max(LedgerUpsert.transactions.1.count, LedgerUpsert.renewalInfos.1.count, LedgerUpsert.notifications.1.count)
        let perStatement = max(1, Self.batchRows * 8 / width / 3)
        var offset = 0
        while true {
            var values: [SQLiteValue?] = []
            var statements: [String] = []
            for (t, rows) in [(LedgerUpsert.transactions, tRows), (LedgerUpsert.renewalInfos, rRows),
                              (LedgerUpsert.notifications, nRows)] where offset < rows.count {
                let part = rows[offset..<min(offset + perStatement, rows.count)]
                var tuples: [String] = []
                for row in part {
                    tuples.append(Self.tuple(from: values.count + 1, count: row.count))
                    values += row
                }
                statements.append(upsert(t, tuples))
            }
            guard let last = statements.popLast() else { return }
            // One statement: the other upserts as data-modifying WITH queries (each runs once, to completion).
            let with = statements.enumerated().map { "u\($0.offset) AS (\($0.element))" }
            try db.run(with.isEmpty ? last : "WITH \(with.joined(separator: ", ")) \(last)", values,
                       what: "cannot store the events' transactions, renewal infos and notifications")
            offset += perStatement
        }
    }

    /// The table's upsert (`LedgerUpsert`, as the prepared one-row statements use it) with several rows.
    private func upsert(_ t: (String, [String]), _ tuples: [String]) -> String {
        let marker = "\u{1}"
        let one = LedgerUpsert.sql(t, into: "\(schema).\(t.0) AS cur", current: "cur", collate: " COLLATE \"C\"") { _ in marker }
        let placeholders = "(" + Array(repeating: marker, count: t.1.count).joined(separator: ", ") + ")"
        return one.replacing(placeholders, with: tuples.joined(separator: ", "))
    }

    /// "($from, $from+1, ...)".
    static func tuple(from: Int, count: Int) -> String {
        "(" + (from..<from + count).map { "$\($0)" }.joined(separator: ", ") + ")"
    }
}
