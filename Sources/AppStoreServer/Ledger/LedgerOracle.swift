import FoundationEssentials

/// The built-in oracle: Apple's data.status in a notification is the subscription's status as of the notification's
/// signedDate, so the engine's status at that instant must be the same. A disagreement means the ledger misses a fact
/// (a notification not received, or received out of a gap), or a rule does not match Apple; it is reported, never
/// silently corrected. A function of the state, so it does not depend on the order events arrived in.
extension LedgerState {
    /// The oracle's comparison for one notification: Apple's data.status, the engine's status at its signedDate, and
    /// whether a difference means missing history or a contradiction.
    struct OracleCheck {
        let apple: Status
        let engine: Status?
        let verdict: LedgerOracleVerdict
        /// With `.incompleteHistory`: what the ledger lacks.
        let missing: String?
    }

    /// The notification's data.status against the engine's status at its signedDate; nil when it has no status to
    /// compare.
    ///
    /// A difference is a **contradiction** only when the engine decided from the very transaction the notification
    /// carries (the current transaction at signedDate is the notification's, in the version it carries or a newer one
    /// signed by then): the ledger then holds what Apple signed together with data.status, and the two disagree.
    /// Otherwise the ledger's history before the notification is **incomplete**: it knows no transaction of the
    /// subscription purchased by then (a fresh ledger's first DID_RENEW, whose new period starts after the
    /// notification is signed), or its current transaction then is another one (a renewal, refund or re-signed
    /// version not received). Nothing contradicts anything; a catch-up fills it.
    func oracleCheck(_ n: NotificationFacts) -> OracleCheck? {
        guard n.isSubscription, let apple = n.status, let o = n.originalTransactionId else { return nil }
        // As known then: data.status is "the status as of signedDate", so only facts signed by then count.
        let view = view(ofSubscription: o, at: n.signedDate, asOf: n.signedDate)
        let engine = view?.status
        guard apple != engine else { return OracleCheck(apple: apple, engine: engine, verdict: .agrees, missing: nil) }
        let at = LedgerTime.date(n.signedDate)
        let fill = "; a catch-up fills it (appstoreserver sync, or ingest Get Transaction History and Get All "
            + "Subscription Statuses for this subscription)"
        guard let current = view?.current else {
            return OracleCheck(apple: apple, engine: engine, verdict: .incompleteHistory, missing:
                "no transaction of subscription \(o) purchased at or before the notification's signedDate (\(at)) is "
                + "known: the period before it is missing" + fill)
        }
        guard let tid = n.transactionId, current.version.transactionId == tid else {
            let carried = n.transactionId.map { "the notification's transaction \($0)" } ?? "the notification carries no transaction"
            return OracleCheck(apple: apple, engine: engine, verdict: .incompleteHistory, missing:
                "the ledger's current transaction of subscription \(o) at \(at) is \(current.version.transactionId), not "
                + "\(carried): a transaction, renewal info or re-signed version between them is missing" + fill)
        }
        return OracleCheck(apple: apple, engine: engine, verdict: .contradiction, missing: nil)
    }

    /// Notifications compared, and those whose data.status the engine does not reproduce (`LedgerDisagreement.listOrder`).
    public func oracle() -> (checked: Int, disagreements: [LedgerDisagreement]) {
        var checked = 0
        var out: [(NotificationFacts, OracleCheck)] = []
        for n in notifications.values {
            guard let check = oracleCheck(n) else { continue }
            checked += 1
            if check.verdict != .agrees { out.append((n, check)) }
        }
        return (checked, out.map { n, c in
            LedgerDisagreement(notificationUUID: n.uuid, notificationType: n.type, subtype: n.subtype,
                               signedDate: LedgerTime.date(n.signedDate), originalTransactionId: n.originalTransactionId ?? "",
                               appleStatus: c.apple, engineStatus: c.engine, verdict: c.verdict, missing: c.missing)
        }.sorted(by: LedgerDisagreement.listOrder))
    }

    /// Counts and the oracle's report, its list cut as `Ledger.summary(disagreementLimit:)` cuts it.
    public func summary(events: Int? = nil, disagreementLimit: Int = Ledger.summaryDisagreementLimit) -> LedgerSummary {
        let (checked, all) = oracle()
        return LedgerSummary(
            events: Int64(events ?? eventCount), notifications: Int64(notificationCount),
            transactions: Int64(transactionCount), transactionVersions: Int64(transactionVersionCount),
            renewalInfos: Int64(renewalInfoCount), subscriptions: Int64(subscriptionIds.count),
            customers: Int64(customerIds.count), checkedNotifications: Int64(checked),
            disagreements: Array(all.prefix(max(0, disagreementLimit))),
            contradictions: Int64(all.filter { $0.verdict == .contradiction }.count),
            incompleteHistories: Int64(all.filter { $0.verdict == .incompleteHistory }.count))
    }

    /// What ingesting `event` means now: its identity and, for a notification with data.status, the oracle's verdict.
    public func ingestResult(for event: LedgerEvent, stored: Bool) -> LedgerIngestResult {
        let n = event.notification
        let check = n.flatMap { oracleCheck($0) }
        return LedgerIngestResult(
            kind: event.kind, stored: stored, signedDate: event.signedDate.map(LedgerTime.date),
            notificationUUID: n?.uuid, notificationType: n?.type, subtype: n?.subtype,
            transactionId: event.transaction?.transactionId,
            originalTransactionId: event.transaction?.originalTransactionId ?? event.renewalInfo?.originalTransactionId,
            appleStatus: check?.apple, engineStatus: check?.engine, agrees: check.map { $0.verdict == .agrees },
            verdict: check?.verdict, missing: check?.missing)
    }
}

extension LedgerSubscription { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerCustomer { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerSummary { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerIngestResult { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerReverifyResult { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }

enum LedgerJSON {
    /// The ledger's models hold only dates taken from verified payloads (years 1970-9999), which always write.
    static func bytes(_ value: some JSONEncodable) -> [UInt8] {
        (try? value.jsonBytes(dateRounding: .toNearest)) ?? Array("null".utf8)
    }
}

extension LedgerDisagreementPage { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerIdPage { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }

/// Where a page of disagreements ends: its last row's place in the list's order (verdict, signedDate in ms,
/// notificationUUID), written as "VERDICT:ms:uuid". Callers treat it as opaque; what comes back is checked, since it
/// is the caller's input.
struct LedgerDisagreementCursor: Equatable {
    let verdict: LedgerOracleVerdict
    let signedDate: Int64
    let notificationUUID: String

    init(_ row: LedgerDisagreement) {
        verdict = row.verdict
        signedDate = LedgerTime.milliseconds(row.signedDate)
        notificationUUID = row.notificationUUID
    }

    init(_ text: String) throws(LedgerError) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard text.utf8.count <= 256, parts.count == 3,
              let verdict = LedgerStoredRows.listedVerdicts.first(where: { $0.rawValue == parts[0] }),
              let ms = Int64(parts[1]), !parts[2].isEmpty else {
            throw .argument("after: \(QuotedText.quote(String(text.prefix(80)))) is not a cursor of this call (give the "
                            + "\"next\" of the previous page, or nothing for the first)")
        }
        self.verdict = verdict
        signedDate = ms
        notificationUUID = String(parts[2])
    }

    var text: String { "\(verdict.rawValue):\(signedDate):\(notificationUUID)" }
}

extension LedgerDisagreement {
    /// The summary's list order: every contradiction before any incomplete history (a list cut at its limit never
    /// hides one behind a backlog of histories a catch-up fills), each kind by signedDate, then notificationUUID's
    /// bytes (as the index `notifications_by_verdict` orders them).
    static func listOrder(_ a: LedgerDisagreement, _ b: LedgerDisagreement) -> Bool {
        let (ra, rb) = (a.verdict == .contradiction ? 0 : 1, b.verdict == .contradiction ? 0 : 1)
        if ra != rb { return ra < rb }
        if a.signedDate != b.signedDate { return a.signedDate < b.signedDate }
        return a.notificationUUID.utf8.lexicographicallyPrecedes(b.notificationUUID.utf8)
    }
}
