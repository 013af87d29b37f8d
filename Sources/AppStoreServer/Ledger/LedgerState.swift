import FoundationEssentials

/// The ledger's state engine: pure (no I/O, no clock), a value. It takes only `LedgerEvent`s (verified signed values)
/// and keeps
///  - per transaction (transactionId), every distinct signed version, ordered by signedDate: the newest decides the
///    present, the older ones answer questions about the past;
///  - per subscription (originalTransactionId), every distinct signed renewal info, the same way;
///  - per notification (notificationUUID), one record (what it was, when, and Apple's data.status).
///
/// Applying an event only ever inserts into these sorted sets, so the state after a set of events is the same
/// whatever their order and however often each arrives (idempotent, order-independent), and an older version
/// arriving late never displaces a newer one. Every answer (`subscription(_:at:)`, `customer(_:at:)`, `oracle()`) is
/// a function of these sets and the instant asked about; see docs/ledger.md for the rules and their sources.
public struct LedgerState: Sendable {
    var transactions: [String: [TransactionVersion]] = [:]
    var renewals: [String: [RenewalVersion]] = [:]
    var notifications: [String: NotificationFacts] = [:]
    /// originalTransactionId -> transactionIds of its auto-renewable transactions.
    var subscriptionTransactions: [String: Set<String>] = [:]
    /// customer id (any version's) -> transactionIds; and -> originalTransactionIds of renewal infos.
    var customerTransactions: [String: Set<String>] = [:]
    var customerRenewals: [String: Set<String>] = [:]
    /// originalTransactionId -> notification UUIDs about it.
    var subscriptionNotifications: [String: Set<String>] = [:]
    /// The payloads applied so far, by their SHA-256 (an event's identity).
    var applied: Set<LedgerDigest.Key> = []

    public init() {}

    /// Applies a verified event; true when the state changed (false: the event, or every fact it carries, was known).
    @discardableResult
    public mutating func apply(_ event: LedgerEvent) -> Bool {
        apply(EventFacts(event))
    }

    /// Applies an event's facts (a stored event read for a query is only these).
    @discardableResult
    mutating func apply(_ event: EventFacts) -> Bool {
        guard applied.insert(event.key).inserted else { return false }
        var changed = true
        if let n = event.notification { changed = add(n) }
        if let t = event.transaction { changed = add(t) || changed }
        if let r = event.renewalInfo { changed = add(r) || changed }
        return changed
    }

    private mutating func add(_ t: TransactionVersion) -> Bool {
        guard !t.transactionId.isEmpty, transactions[t.transactionId, default: []].insertVersion(t) else { return false }
        if t.isAutoRenewable { subscriptionTransactions[t.originalTransactionId, default: []].insert(t.transactionId) }
        customerTransactions[t.customerId, default: []].insert(t.transactionId)
        return true
    }

    private mutating func add(_ r: RenewalVersion) -> Bool {
        guard !r.originalTransactionId.isEmpty, renewals[r.originalTransactionId, default: []].insertVersion(r) else { return false }
        customerRenewals[r.customerId, default: []].insert(r.originalTransactionId)
        return true
    }

    private mutating func add(_ n: NotificationFacts) -> Bool {
        // Apple's retries carry the same notificationUUID; should two different payloads ever share one, the newer
        // (by the version order) is kept, so the outcome does not depend on arrival order.
        if let old = notifications[n.uuid], !old.isOlder(than: n) { return false }
        notifications[n.uuid] = n
        if let o = n.originalTransactionId { subscriptionNotifications[o, default: []].insert(n.uuid) }
        return true
    }

    // MARK: counts

    public var transactionCount: Int { transactions.count }
    public var transactionVersionCount: Int { transactions.values.reduce(0) { $0 + $1.count } }
    public var renewalInfoCount: Int { renewals.values.reduce(0) { $0 + $1.count } }
    public var notificationCount: Int { notifications.count }
    public var eventCount: Int { applied.count }
    /// Auto-renewable subscriptions: every originalTransactionId with an auto-renewable transaction or a renewal info.
    public var subscriptionIds: Set<String> { Set(subscriptionTransactions.keys).union(renewals.keys) }
    /// Every customer id any fact names.
    public var customerIds: Set<String> { Set(customerTransactions.keys).union(customerRenewals.keys) }
}
