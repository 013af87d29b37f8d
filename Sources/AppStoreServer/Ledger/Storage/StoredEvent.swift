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

/// What the state engine takes from one event (`LedgerState.apply`). A query reads its key's stored events as only
/// this: their payloads decoded from the stored text, the JWS not rebuilt (`StoredSigned.payloads(ofStored:)`).
struct EventFacts {
    let key: LedgerDigest.Key
    let notification: NotificationFacts?
    let transaction: TransactionVersion?
    let renewalInfo: RenewalVersion?

    init(_ e: LedgerEvent) {
        (key, notification, transaction, renewalInfo) = (e.key, e.notification, e.transaction, e.renewalInfo)
    }

    /// Stored event `id` (`digest`: its payload's SHA-256 as stored): its payload JSON decoded from the stored form
    /// when it holds every payload decoded; otherwise the JWS `expand`ed and decoded as `LedgerEvent(stored:)` does.
    /// The two give the same facts (`LedgerStoredFormTests`).
    init(stored: String, id: Int64, kind: LedgerEventKind, digest: String, identity: LedgerIdentity,
         header: (String) throws(LedgerError) -> String?, expand: (String) throws(LedgerError) -> String) throws(LedgerError) {
        do throws(LedgerError) {
            if let p = StoredSigned.payloads(ofStored: stored), let key = LedgerDigest.key(hex: digest),
               let facts = try Self.decode((p.outer, p.nested), kind: kind, key: key, identity: identity) {
                for d in p.headers where try header(d) == nil {
                    throw .storage("event \(id): its stored JWS is corrupt: its certificate chain \(QuotedText.quote(d)) is "
                        + "missing from jws_headers (`appstoreserver ledger check` lists such rows)")
                }
                self = facts
            } else {
                self.init(try LedgerEvent(stored: try expand(stored), kind: kind, identity: identity))
            }
        } catch {
            throw LedgerError(statusCode: error.statusCode, reason: error.reason, message: "stored event \(id): \(error.message)")
        }
    }

    /// Nil: the slow path decides (a placeholder no member claims, a notification without a UUID, whose identity is
    /// its whole payload's digest).
    private static func decode(_ p: (outer: [UInt8], nested: [[UInt8]]), kind: LedgerEventKind, key: LedgerDigest.Key,
                               identity: LedgerIdentity) throws(LedgerError) -> EventFacts? {
        func parse<T: JSONDecodable>(_ json: [UInt8], _ type: T.Type, _ what: String) throws(LedgerError) -> T {
            do {
                return try T(json: try JSONParser.parse(json), strict: false)
            } catch {
                throw .storage("stored \(what) does not decode: \(error)")
            }
        }
        switch kind {
        case .transaction:
            guard p.nested.isEmpty else { return nil }
            let t = try parse(p.outer, JWSTransactionDecodedPayload.self, "transaction")
            try LedgerEvent.check(PayloadIdentity(t), identity)
            return EventFacts(key: key, notification: nil, transaction: TransactionVersion(t, payload: p.outer), renewalInfo: nil)
        case .renewalInfo:
            guard p.nested.isEmpty else { return nil }
            let r = try parse(p.outer, JWSRenewalInfoDecodedPayload.self, "renewal info")
            try LedgerEvent.check(PayloadIdentity(r), identity)
            return EventFacts(key: key, notification: nil, transaction: nil, renewalInfo: RenewalVersion(r, payload: p.outer))
        case .notification:
            let n = try parse(p.outer, ResponseBodyV2DecodedPayload.self, "notification")
            guard n.notificationUUID != nil else { return nil }
            let t = StoredSigned.placeholderIndex(n.data?.signedTransactionInfo)
            let r = StoredSigned.placeholderIndex(n.data?.signedRenewalInfo)
            let a = StoredSigned.placeholderIndex(n.appData?.signedAppTransactionInfo)
            // Every nested value is one of these three members (others would stay placeholders in the facts' payload),
            // and each of them present is a placeholder (a nested value stored as received is decoded by the slow path).
            let claimed = [t, r, a].compactMap { $0 }
            guard Set(claimed) == Set(p.nested.indices), claimed.count == p.nested.count, claimed.allSatisfy({ $0 < p.nested.count }),
                  (n.data?.signedTransactionInfo == nil) == (t == nil), (n.data?.signedRenewalInfo == nil) == (r == nil),
                  (n.appData?.signedAppTransactionInfo == nil) == (a == nil) else { return nil }
            try LedgerEvent.check(PayloadIdentity(n), identity)
            let tx = try t.map { i throws(LedgerError) in
                TransactionVersion(try parse(p.nested[i], JWSTransactionDecodedPayload.self, "notification transaction"), payload: p.nested[i])
            }
            let ri = try r.map { i throws(LedgerError) in
                RenewalVersion(try parse(p.nested[i], JWSRenewalInfoDecodedPayload.self, "notification renewal info"), payload: p.nested[i])
            }
            return EventFacts(key: key, notification: NotificationFacts(n, payload: p.outer, transaction: tx, renewalInfo: ri),
                              transaction: tx, renewalInfo: ri)
        default:
            return nil
        }
    }

    private init(key: LedgerDigest.Key, notification: NotificationFacts?, transaction: TransactionVersion?, renewalInfo: RenewalVersion?) {
        (self.key, self.notification, self.transaction, self.renewalInfo) = (key, notification, transaction, renewalInfo)
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
