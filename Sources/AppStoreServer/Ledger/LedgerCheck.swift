import FoundationEssentials

/// A stored row that does not read back (`Ledger.check`).
public struct LedgerStorageProblem: Hashable, Sendable {
    /// Its id in the events table.
    public let eventId: Int64
    /// Why: a missing or corrupt certificate chain reference, a text that is not a JWS, a payload that does not decode.
    public let message: String
}

extension Ledger {
    /// Reads back every row of the events table at `url` (all identities; nothing replayed or verified, nothing
    /// written but the schema's migration) and lists the rows that do not reconstruct to a JWS whose payload decodes:
    /// (`appstoreserver ledger check`). Returns how many rows were read, and the problems in id order.
    public static func check(_ url: String) throws(LedgerError) -> (checked: Int64, problems: [LedgerStorageProblem]) {
        let store = try makeStore(url, identity: nil)
        let headers = StoredHeaderCache()
        var checked: Int64 = 0
        var problems: [LedgerStorageProblem] = []
        var after: Int64 = 0
        while true {
            let page = try store.storedRows(after: after, limit: 1000)
            for row in page {
                checked += 1
                do throws(LedgerError) {
                    let jws = try StoredSigned.expand(row.stored, eventId: row.id) { d throws(LedgerError) in
                        try headers.text(d, eventId: row.id) { d throws(LedgerError) in try store.storedHeader(d) }
                    }
                    switch LedgerEventKind(rawValue: row.kind) {
                    case .transaction: _ = try StoredJWS.decode(jws, JWSTransactionDecodedPayload.self, "transaction")
                    case .renewalInfo: _ = try StoredJWS.decode(jws, JWSRenewalInfoDecodedPayload.self, "renewal info")
                    case .notification: _ = try StoredJWS.decode(jws, ResponseBodyV2DecodedPayload.self, "notification")
                    default: throw .storage("stored event of unknown kind \(QuotedText.quote(row.kind))")
                    }
                } catch {
                    let message = error.message.hasPrefix("event \(row.id): ") ? String(error.message.dropFirst("event \(row.id): ".count)) : error.message
                    problems.append(LedgerStorageProblem(eventId: row.id, message: message))
                }
            }
            guard let last = page.last, page.count == 1000 else { return (checked, problems) }
            after = last.id
        }
    }
}
