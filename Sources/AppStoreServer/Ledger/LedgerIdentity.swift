import FoundationEssentials

/// The identity a verifier accepts (bundle id, environment, app Apple ID), carried by the events it made and recorded
/// in the ledger's database when the ledger is created: a ledger holds the data of one app in one environment, and
/// opening it with a verifier of another identity is refused before anything is read or written (docs/ledger.md,
/// "Identity"). Without this, a Sandbox purchase stored in a file later opened with a Production verifier would
/// become a Production entitlement.
struct LedgerIdentity: Hashable, Sendable, CustomStringConvertible {
    let bundleId: String
    let appAppleId: Int64?
    let environment: AppStoreEnvironment

    init(_ v: SignedDataVerifier) {
        bundleId = v.bundleId
        appAppleId = v.appAppleId
        environment = v.environment
    }

    init(bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }

    var description: String {
        "\(QuotedText.quote(bundleId)) in \(environment.rawValue)" + (appAppleId.map { " (app Apple ID \($0))" } ?? "")
    }

    /// Whether a verifier of identity `opener` may use a ledger recorded as `self`: the same bundle id and
    /// environment, and the same app Apple ID when both name one (a Sandbox verifier may have none, as Apple's).
    func admits(_ opener: LedgerIdentity) -> Bool {
        Identity.same(bundleId, opener.bundleId) && Identity.same(environment.rawValue, opener.environment.rawValue)
            && (appAppleId == nil || opener.appAppleId == nil || appAppleId == opener.appAppleId)
    }

    /// The refusal when `opener` opens a ledger recorded as `self`.
    func mismatch(_ opener: LedgerIdentity, ledger shown: String) -> LedgerError {
        .identityMismatch("the ledger \(shown) holds the data of \(self); this verifier accepts \(opener): open the "
            + "ledger of that app and environment (one database, or one PostgreSQL schema, per app and environment)")
    }
}

/// What a stored value says about its own identity, read from its payload (no signature check): the fields Apple's
/// identity checks use (the verifier's `identityFailure`). nil where the payload does not say.
struct PayloadIdentity: Hashable {
    var bundleId: String?
    var appAppleId: Int64?
    var environment: AppStoreEnvironment?

    init(stored signed: String, kind: LedgerEventKind) throws(LedgerError) {
        switch kind {
        case .transaction: self.init(try StoredJWS.decode(signed, JWSTransactionDecodedPayload.self, "transaction").0)
        case .renewalInfo: self.init(try StoredJWS.decode(signed, JWSRenewalInfoDecodedPayload.self, "renewal info").0)
        case .notification: self.init(try StoredJWS.decode(signed, ResponseBodyV2DecodedPayload.self, "notification").0)
        default: throw .storage("stored event of unknown kind \(QuotedText.quote(kind.rawValue))")
        }
    }

    init(_ t: JWSTransactionDecodedPayload) { (bundleId, environment) = (t.bundleId, t.environment) }
    init(_ r: JWSRenewalInfoDecodedPayload) { environment = r.environment }
    init(_ n: ResponseBodyV2DecodedPayload) {
        if let d = n.data {
            (bundleId, appAppleId, environment) = (d.bundleId, d.appAppleId, d.environment)
        } else if let s = n.summary {
            (bundleId, appAppleId, environment) = (s.bundleId, s.appAppleId, s.environment)
        } else if let t = n.externalPurchaseToken {
            (bundleId, appAppleId) = (t.bundleId, t.appAppleId)
            environment = t.externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
        } else if let a = n.appData {
            (bundleId, appAppleId, environment) = (a.bundleId, a.appAppleId, a.environment)
        }
    }

    var description: String {
        "\(bundleId.map { QuotedText.quote($0) } ?? "no bundle id") in \(environment?.rawValue ?? "no environment")"
            + (appAppleId.map { " (app Apple ID \($0))" } ?? "")
    }

    /// Whether the payload could have been accepted by a verifier of `identity` (the verifier's own rules: the app
    /// Apple ID is compared in Production only).
    func fits(_ identity: LedgerIdentity) -> Bool {
        (bundleId == nil || Identity.same(bundleId, identity.bundleId))
            && (environment == nil || Identity.same(environment?.rawValue, identity.environment.rawValue))
            && (identity.environment != .production || appAppleId == nil || identity.appAppleId == nil
                || appAppleId == identity.appAppleId)
    }
}

/// The identity of a ledger the schema migration meets without one: a new database (the opener's), or a 0.3.0 ledger,
/// whose identity is taken from its events when they all agree (and must be the opener's).
enum LedgerIdentityMigration {
    /// `opener` nil: the identity the events give (a ledger opened with its recorded identity).
    static func identity(ofEvents events: [(id: Int64, kind: LedgerEventKind, signed: String)], opener: LedgerIdentity?,
                         ledger shown: String) throws(LedgerError) -> LedgerIdentity {
        var counts: [String: Int] = [:]
        var bundleIds = Set<String>(), environments = Set<String>(), appAppleIds = Set<Int64>()
        for e in events {
            let p = try PayloadIdentity(stored: e.signed, kind: e.kind)
            if let b = p.bundleId { bundleIds.insert(b) }
            if let env = p.environment { environments.insert(env.rawValue) }
            if let a = p.appAppleId { appAppleIds.insert(a) }
            counts[p.description, default: 0] += 1
        }
        guard bundleIds.count <= 1, environments.count <= 1, appAppleIds.count <= 1 else {
            let list = counts.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value) events" }.joined(separator: "; ")
            throw .identityMismatch("the 0.3.0 ledger \(shown) holds the data of several apps or environments (\(list)); "
                + "a ledger now holds one. Split it: for each app and environment, open a new ledger with that "
                + "verifier and ingest every stored value into it (the events table's signed column; the verifier "
                + "refuses the others), e.g. `appstoreserver ledger ingest --db NEW ...` over a file of the `signed` "
                + "values; then use the new ledgers. This one is left as it was")
        }
        guard let opener else {
            guard let b = bundleIds.first, let env = environments.first else {
                throw .configuration("the ledger \(shown) records no app or environment yet (it is new, or holds no "
                    + "value that names them): open it with a verifier first (e.g. `appstoreserver ledger ingest`)")
            }
            return LedgerIdentity(bundleId: b, appAppleId: appAppleIds.first, environment: AppStoreEnvironment(rawValue: env))
        }
        let found = LedgerIdentity(bundleId: bundleIds.first ?? opener.bundleId, appAppleId: appAppleIds.first ?? opener.appAppleId,
                                   environment: environments.first.map(AppStoreEnvironment.init(rawValue:)) ?? opener.environment)
        guard found.admits(opener) else { throw found.mismatch(opener, ledger: shown) }
        return LedgerIdentity(bundleId: opener.bundleId, appAppleId: opener.appAppleId ?? found.appAppleId,
                              environment: opener.environment)
    }
}
