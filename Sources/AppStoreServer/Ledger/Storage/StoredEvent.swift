import FoundationEssentials

/// Reading back what the ledger stored. Every stored JWS was verified before it was written, so reloading decodes it
/// without verifying again (opening a large ledger costs no signature checks); `Ledger.reverify()` checks them all
/// again with the ledger's verifier when wanted (docs/ledger.md, "Rebuild").
extension LedgerEvent {
    init(stored signed: String, kind: LedgerEventKind, identity: LedgerIdentity) throws(LedgerError) {
        func decode<T: JSONDecodable>(_ jws: String, _ type: T.Type, _ what: String) throws(LedgerError) -> (T, [UInt8]) {
            try StoredJWS.decode(jws, type, what)
        }
        switch kind {
        case .transaction:
            let (t, payload) = try decode(signed, JWSTransactionDecodedPayload.self, "transaction")
            try Self.check(PayloadIdentity(t), identity)
            self.init(kind: kind, signed: signed, signedDate: t.signedDate.map(Timestamp.milliseconds), notification: nil,
                      transaction: TransactionVersion(t, payload: payload), renewalInfo: nil, payload: payload, identity: identity)
        case .renewalInfo:
            let (r, payload) = try decode(signed, JWSRenewalInfoDecodedPayload.self, "renewal info")
            try Self.check(PayloadIdentity(r), identity)
            self.init(kind: kind, signed: signed, signedDate: r.signedDate.map(Timestamp.milliseconds), notification: nil,
                      transaction: nil, renewalInfo: RenewalVersion(r, payload: payload), payload: payload, identity: identity)
        case .notification:
            let (n, payload) = try decode(signed, ResponseBodyV2DecodedPayload.self, "notification")
            try Self.check(PayloadIdentity(n), identity)
            let tx = try n.data?.signedTransactionInfo.map { s throws(LedgerError) in
                let (t, p) = try decode(s, JWSTransactionDecodedPayload.self, "notification transaction")
                return TransactionVersion(t, payload: p)
            }
            let ri = try n.data?.signedRenewalInfo.map { s throws(LedgerError) in
                let (r, p) = try decode(s, JWSRenewalInfoDecodedPayload.self, "notification renewal info")
                return RenewalVersion(r, payload: p)
            }
            let facts = NotificationFacts(n, payload: payload, transaction: tx, renewalInfo: ri)
            self.init(kind: kind, signed: signed, signedDate: facts.signedDate, notification: facts, transaction: tx,
                      renewalInfo: ri, payload: payload, identity: identity)
        default:
            throw .storage("stored event of unknown kind \(QuotedText.quote(kind.rawValue))")
        }
    }
}

extension LedgerEvent {
    /// A stored value is applied only when its payload fits the ledger's identity: the rows are selected by the
    /// identity they were stored with, and this holds even for a row written into the database by other means.
    static func check(_ p: PayloadIdentity, _ identity: LedgerIdentity) throws(LedgerError) {
        guard p.fits(identity) else {
            throw .identityMismatch("a stored value is for \(p); this ledger holds the data of \(identity)")
        }
    }
}

/// A stored JWS's payload, decoded without checking its signature (it was verified before it was stored).
enum StoredJWS {
    static func decode<T: JSONDecodable>(_ jws: String, _ type: T.Type, _ what: String) throws(LedgerError) -> (T, [UInt8]) {
        var jws = jws
        guard case .success(let split) = jws.withUTF8({ CompactJWS.split(UnsafeRawBufferPointer($0)) }) else {
            throw .storage("stored \(what) is not a compact JWS")
        }
        let payload = split.payload
        do {
            return (try T(json: try JSONParser.parse(payload), strict: false), payload)
        } catch {
            throw .storage("stored \(what) does not decode: \(error)")
        }
    }
}
