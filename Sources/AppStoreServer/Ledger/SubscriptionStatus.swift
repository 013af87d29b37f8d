import FoundationEssentials

/// Apple's subscription status at an instant, from the signed fields alone (docs/ledger.md, "Status"). A notification's
/// type never decides it: every effect Apple documents for a type shows in the fields it carries (a new transaction,
/// a re-signed one with revocationDate or a later expiresDate, a renewal info with isInBillingRetryPeriod or
/// gracePeriodExpiresDate), so the same facts give the same status whichever notifications delivered them.
struct SubscriptionView {
    /// The subscription's transactions as known at `at` (each its newest version signed at or before `at`).
    let transactions: [TransactionVersion]
    /// The current transaction: the latest purchase not upgraded away from.
    let current: TransactionVersion?
    /// The renewal info known at `at`.
    let renewal: RenewalVersion?
    /// Whether `renewal` speaks about the current period (signed at or after the current purchase).
    let renewalIsCurrent: Bool
    let status: Status?
    let at: Int64

    init(transactions: [TransactionVersion], renewal: RenewalVersion?, at t: Int64) {
        self.transactions = transactions
        self.at = t
        self.renewal = renewal
        // Rule C1: the current transaction is the one with the latest purchaseDate (ties: later expiresDate, then the
        // larger transactionId), among those not upgraded away from (isUpgraded: "entitlement comes from the other
        // transaction", Apple's isUpgraded). A purchase dated after `at` is not current yet.
        func later(_ a: TransactionVersion, _ b: TransactionVersion) -> Bool {
            if (a.purchaseDate ?? 0) != (b.purchaseDate ?? 0) { return (a.purchaseDate ?? 0) > (b.purchaseDate ?? 0) }
            if (a.expiresDate ?? 0) != (b.expiresDate ?? 0) { return (a.expiresDate ?? 0) > (b.expiresDate ?? 0) }
            return a.transactionId > b.transactionId
        }
        let started = transactions.filter { ($0.purchaseDate ?? $0.signedDate) <= t }
        let eligible = started.filter { $0.value.isUpgraded != true }
        let current = (eligible.isEmpty ? started : eligible).reduce(nil as TransactionVersion?) { best, x in
            best.map { later(x, $0) ? x : $0 } ?? x
        }
        self.current = current
        // Rule R1: a renewal info describes the period it was signed in; one signed before the current purchase
        // (a billing retry that has since recovered, say) says nothing about the current period.
        let isCurrent = renewal.map { r in current.map { r.signedDate >= ($0.purchaseDate ?? 0) } ?? true } ?? false
        renewalIsCurrent = isCurrent
        status = current.map { Self.rules($0, renewal: isCurrent ? renewal : nil, at: t) }
    }

    /// Rules S1-S5, in this order (docs/ledger.md):
    ///  S1 revoked (5): the current transaction has a revocationDate at or before `t` (refund, Family Sharing revoke).
    ///  S2 active (1): its expiresDate is after `t` (a renewal extension re-signs it with the later date).
    ///  S3 billing grace period (4): expired, and the current renewal info's gracePeriodExpiresDate is after `t`.
    ///  S4 billing retry (3): expired, and the current renewal info has isInBillingRetryPeriod true.
    ///  S5 expired (2): otherwise; with no newer signed fact, an ended period is an expiry.
    static func rules(_ tx: TransactionVersion, renewal: RenewalVersion?, at t: Int64) -> Status {
        if tx.isRevoked(at: t) { return .revoked }
        if let e = tx.expiresDate, e > t { return .active }
        if let g = renewal?.gracePeriodExpiresDate, g > t { return .billingGracePeriod }
        if renewal?.value.isInBillingRetryPeriod == true { return .billingRetry }
        return .expired
    }

    /// Entitled (StoreKit: subscribed or in the billing grace period), and until when.
    var entitledUntil: Int64? {
        switch status {
        case .active?: current?.expiresDate
        case .billingGracePeriod?: renewal?.gracePeriodExpiresDate
        default: nil
        }
    }
    var isEntitled: Bool { status == .active || status == .billingGracePeriod }

    /// The transaction the customer upgraded away from into the current one (its period covered the current purchase).
    var upgradedFrom: TransactionVersion? {
        guard let cur = current, let p = cur.purchaseDate else { return nil }
        return transactions.filter { x in
            x.value.isUpgraded == true && x.transactionId != cur.transactionId
                && (x.purchaseDate ?? .max) <= p && (x.expiresDate ?? .min) >= p
        }.max { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) }
    }
}

extension LedgerState {
    func view(ofSubscription id: String, at t: Int64) -> SubscriptionView? {
        let txs = (subscriptionTransactions[id] ?? []).compactMap { transactions[$0]?.newest(at: t) }
        let renewal = renewals[id]?.newest(at: t)
        if txs.isEmpty && renewal == nil { return nil }
        return SubscriptionView(transactions: txs, renewal: renewal, at: t)
    }

    /// Apple's status of subscription `id` at `t` (nil: no transaction of it is known at `t`).
    public func status(ofSubscription id: String, at t: Int64) -> Status? {
        view(ofSubscription: id, at: t)?.status
    }

    /// The newest notification about subscription `id` signed at or before `t`.
    func lastNotification(about id: String, at t: Int64) -> NotificationFacts? {
        (subscriptionNotifications[id] ?? []).compactMap { notifications[$0] }
            .filter { $0.signedDate <= t && $0.originalTransactionId == id }
            .max { $0.isOlder(than: $1) }
    }

    /// Subscription `id` as known at `t`; nil when the ledger knows nothing of it then.
    public func subscription(_ id: String, at t: Int64) -> LedgerSubscription? {
        guard let v = view(ofSubscription: id, at: t) else { return nil }
        let tx = v.current?.value
        let ri = v.renewal?.value
        let riCurrent = v.renewalIsCurrent ? ri : nil
        let last = lastNotification(about: id, at: t)
        let up = v.upgradedFrom
        let pending = ri?.autoRenewProductId.flatMap { p in p != (tx?.productId ?? ri?.productId) ? p : nil }
        return LedgerSubscription(
            originalTransactionId: id, at: LedgerTime.date(t),
            customerId: v.current?.customerId ?? v.renewal?.customerId ?? id,
            status: v.status, entitled: v.isEntitled, entitledUntil: v.entitledUntil.map(LedgerTime.date),
            productId: tx?.productId ?? ri?.productId, subscriptionGroupIdentifier: tx?.subscriptionGroupIdentifier,
            transactionId: tx?.transactionId, purchaseDate: tx?.purchaseDate, originalPurchaseDate: tx?.originalPurchaseDate,
            expiresDate: tx?.expiresDate, gracePeriodExpiresDate: riCurrent?.gracePeriodExpiresDate,
            isInBillingRetryPeriod: riCurrent?.isInBillingRetryPeriod, expirationIntent: ri?.expirationIntent,
            autoRenewStatus: ri?.autoRenewStatus, autoRenewProductId: ri?.autoRenewProductId, pendingProductId: pending,
            upgradedFromProductId: up?.value.productId, upgradedFromTransactionId: up?.transactionId,
            offerType: tx?.offerType, offerIdentifier: tx?.offerIdentifier, offerDiscountType: tx?.offerDiscountType,
            offerPeriod: tx?.offerPeriod, renewalOfferType: ri?.offerType, renewalOfferIdentifier: ri?.offerIdentifier,
            inAppOwnershipType: tx?.inAppOwnershipType, appAccountToken: tx?.appAccountToken,
            revocationDate: tx?.revocationDate, revocationReason: tx?.revocationReason, revocationType: tx?.revocationType,
            revocationPercentage: tx?.revocationPercentage, environment: tx?.environment ?? ri?.environment,
            transactionSignedDate: tx?.signedDate, renewalInfoSignedDate: ri?.signedDate,
            lastNotificationType: last?.type, lastNotificationSubtype: last?.subtype,
            lastNotificationDate: last.map { LedgerTime.date($0.signedDate) })
    }
}

/// Milliseconds <-> Date for the ledger's models.
public enum LedgerTime {
    public static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
    public static func milliseconds(_ date: Date) -> Int64 { Timestamp.milliseconds(date) }
}
