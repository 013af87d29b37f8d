import FoundationEssentials

/// The built-in oracle: Apple's data.status in a notification is the subscription's status as of the notification's
/// signedDate, so the engine's status at that instant must be the same. A disagreement means the ledger misses a fact
/// (a notification not received, or received out of a gap), or a rule does not match Apple; it is reported, never
/// silently corrected. A function of the state, so it does not depend on the order events arrived in.
extension LedgerState {
    /// The notification's data.status and the engine's status at its signedDate; nil when it has no status to compare.
    func oracleCheck(_ n: NotificationFacts) -> (apple: Status, engine: Status?)? {
        guard n.isSubscription, let apple = n.status, let o = n.originalTransactionId else { return nil }
        return (apple, status(ofSubscription: o, at: n.signedDate))
    }

    /// Notifications compared, and those whose data.status the engine does not reproduce (ordered by signedDate).
    public func oracle() -> (checked: Int, disagreements: [LedgerDisagreement]) {
        var checked = 0
        var out: [NotificationFacts] = []
        var statuses: [String: Status?] = [:]
        for n in notifications.values {
            guard let (apple, engine) = oracleCheck(n) else { continue }
            checked += 1
            if apple != engine {
                out.append(n)
                statuses[n.uuid] = engine
            }
        }
        out.sort { $0.isOlder(than: $1) }
        return (checked, out.map { n in
            LedgerDisagreement(notificationUUID: n.uuid, notificationType: n.type, subtype: n.subtype,
                               signedDate: LedgerTime.date(n.signedDate), originalTransactionId: n.originalTransactionId ?? "",
                               appleStatus: n.status ?? Status(rawValue: 0), engineStatus: statuses[n.uuid] ?? nil)
        })
    }

    /// Counts and the oracle's report.
    public func summary(events: Int? = nil) -> LedgerSummary {
        let (checked, disagreements) = oracle()
        return LedgerSummary(
            events: Int64(events ?? eventCount), notifications: Int64(notificationCount),
            transactions: Int64(transactionCount), transactionVersions: Int64(transactionVersionCount),
            renewalInfos: Int64(renewalInfoCount), subscriptions: Int64(subscriptionIds.count),
            customers: Int64(customerIds.count), checkedNotifications: Int64(checked), disagreements: disagreements)
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
            appleStatus: check?.apple, engineStatus: check?.engine, agrees: check.map { $0.apple == $0.engine })
    }
}

extension LedgerSubscription { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerCustomer { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerSummary { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
extension LedgerIngestResult { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }

enum LedgerJSON {
    /// The ledger's models hold only dates taken from verified payloads (years 1970-9999), which always write.
    static func bytes(_ value: some JSONEncodable) -> [UInt8] {
        (try? value.jsonBytes(dateRounding: .toNearest)) ?? Array("null".utf8)
    }
}
