import FoundationEssentials

/// One signed value the verifier accepted, ready for the ledger: the only input the ledger's state engine takes.
///
/// It has no public initializer: it is made by `LedgerEvent.verify…` (a signed string and a `SignedDataVerifier`), or
/// by `Ledger.ingest…`, which verifies the same way. Raw JSON, or a model built by hand, cannot become one, so nothing
/// the verifier has not accepted reaches the state. It keeps the JWS exactly as received, so that a ledger can be
/// rebuilt and re-verified from what it stored.
public struct LedgerEvent: Sendable {
    public let kind: LedgerEventKind
    /// The compact JWS exactly as received.
    public let signed: String
    /// The outer payload's signedDate (milliseconds since 1970).
    public let signedDate: Int64?
    let notification: NotificationFacts?
    let transaction: TransactionVersion?
    let renewalInfo: RenewalVersion?
    /// The payload JSON exactly as signed: the event's identity (the same payload signed twice is one event).
    let payload: [UInt8]
    /// Who verified it (bundle id, app Apple ID, environment), so a ledger refuses events verified for another app.
    let identity: LedgerIdentity
    /// SHA-256 of the payload: the event's identity (in storage as hex, in the state as this key).
    let key: LedgerDigest.Key

    /// The earliest signedDate of the facts it carries (the notification's, its transaction's, its renewal info's):
    /// no answer "as known" before it can change by this event.
    var earliestSignedDate: Int64 {
        [signedDate, transaction?.signedDate, renewalInfo?.signedDate].compactMap { $0 }.min() ?? .min
    }

    /// The hex SHA-256 of the payload: the event's identity in storage.
    public var payloadDigest: String { key.hex }

    /// What storing it takes that depends on it alone, made by `Ledger.ingest` before the event waits for a commit
    /// (`prepare`): each caller's own work, not the committing one's under the ledger's lock (and, on PostgreSQL, in
    /// the time between the writers' lock of one batch and the next). nil: made when stored.
    private(set) var prepared: Prepared?

    struct Prepared: Sendable {
        /// `StoredSigned.compact(signed)`.
        let stored: (text: String, headers: [StoredSigned.Header])
        /// `LedgerKey.versions(of:)`.
        let versions: [(kind: String, digest: String)]
    }

    mutating func prepare() {
        prepared = Prepared(stored: StoredSigned.compact(signed), versions: LedgerKey.versions(of: self))
    }

    /// The text `events.signed` holds for it, and the JWS headers that text refers to (`StoredSigned`).
    var storedForm: (text: String, headers: [StoredSigned.Header]) { prepared?.stored ?? StoredSigned.compact(signed) }
    /// The fact versions it carries (`LedgerKey.versions(of:)`).
    var factVersions: [(kind: String, digest: String)] { prepared?.versions ?? LedgerKey.versions(of: self) }

    /// A notification, deep-verified: the notification and the transaction and renewal info nested in it.
    public static func verify(notification signedPayload: String,
                              with verifier: SignedDataVerifier) -> Result<LedgerEvent, VerificationFailure> {
        verifier.verifyDeep(signedPayload).map { d in
            LedgerEvent(notification: d, signed: signedPayload, identity: LedgerIdentity(verifier))
        }
    }

    /// A signed transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses).
    public static func verify(transaction signedTransaction: String,
                              with verifier: SignedDataVerifier) -> Result<LedgerEvent, VerificationFailure> {
        verifier.verify(signedTransaction, as: JWSTransactionDecodedPayload.self).map { v in
            LedgerEvent(kind: .transaction, signed: signedTransaction, signedDate: v.value.signedDate.map(Timestamp.milliseconds),
                        notification: nil, transaction: TransactionVersion(v.value, payload: v.payloadJSON),
                        renewalInfo: nil, payload: v.payloadJSON, identity: LedgerIdentity(verifier))
        }
    }

    /// A signed renewal info (Get All Subscription Statuses).
    public static func verify(renewalInfo signedRenewalInfo: String,
                              with verifier: SignedDataVerifier) -> Result<LedgerEvent, VerificationFailure> {
        verifier.verify(signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self).map { v in
            LedgerEvent(kind: .renewalInfo, signed: signedRenewalInfo, signedDate: v.value.signedDate.map(Timestamp.milliseconds),
                        notification: nil, transaction: nil, renewalInfo: RenewalVersion(v.value, payload: v.payloadJSON),
                        payload: v.payloadJSON, identity: LedgerIdentity(verifier))
        }
    }

    /// Verifies `signed` as `kind`.
    public static func verify(_ kind: LedgerEventKind, _ signed: String,
                              with verifier: SignedDataVerifier) -> Result<LedgerEvent, VerificationFailure> {
        switch kind {
        case .transaction: verify(transaction: signed, with: verifier)
        case .renewalInfo: verify(renewalInfo: signed, with: verifier)
        default: verify(notification: signed, with: verifier)
        }
    }

    /// Verifies `jws` (compact JWS bytes, e.g. from C) as `kind`. The size limit is checked before a byte is read, and
    /// the bytes become the stored string only once verified (a verified JWS is base64url text).
    public static func verify(_ kind: LedgerEventKind, bytes jws: UnsafeRawBufferPointer,
                              with verifier: SignedDataVerifier) -> Result<LedgerEvent, VerificationFailure> {
        let identity = LedgerIdentity(verifier)
        let text = { String(decoding: jws, as: UTF8.self) }
        switch kind {
        case .transaction:
            return verifier.verify(jws, as: JWSTransactionDecodedPayload.self).map { v in
                LedgerEvent(kind: .transaction, signed: text(), signedDate: v.value.signedDate.map(Timestamp.milliseconds),
                            notification: nil, transaction: TransactionVersion(v.value, payload: v.payloadJSON),
                            renewalInfo: nil, payload: v.payloadJSON, identity: identity)
            }
        case .renewalInfo:
            return verifier.verify(jws, as: JWSRenewalInfoDecodedPayload.self).map { v in
                LedgerEvent(kind: .renewalInfo, signed: text(), signedDate: v.value.signedDate.map(Timestamp.milliseconds),
                            notification: nil, transaction: nil, renewalInfo: RenewalVersion(v.value, payload: v.payloadJSON),
                            payload: v.payloadJSON, identity: identity)
            }
        default:
            return verifier.verifyDeep(jws).map { LedgerEvent(notification: $0, signed: text(), identity: identity) }
        }
    }

    init(kind: LedgerEventKind, signed: String, signedDate: Int64?, notification: NotificationFacts?,
         transaction: TransactionVersion?, renewalInfo: RenewalVersion?, payload: [UInt8], identity: LedgerIdentity) {
        self.kind = kind
        self.signed = signed
        self.signedDate = signedDate
        self.notification = notification
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.payload = payload
        self.identity = identity
        self.key = LedgerDigest.key(payload)
    }

    init(notification d: DeepVerified, signed: String, identity: LedgerIdentity) {
        let tx = d.decoded.transaction.flatMap { t in d.transactionJSON.map { TransactionVersion(t, payload: $0) } }
        let ri = d.decoded.renewalInfo.flatMap { r in d.renewalInfoJSON.map { RenewalVersion(r, payload: $0) } }
        let n = NotificationFacts(d.decoded.notification, payload: d.notificationJSON, transaction: tx, renewalInfo: ri)
        self.init(kind: .notification, signed: signed, signedDate: n.signedDate, notification: n, transaction: tx,
                  renewalInfo: ri, payload: d.notificationJSON, identity: identity)
    }
}
