import FoundationEssentials

/// Apple's subscription status at an instant, from the signed fields alone (docs/ledger.md, "Status"). A notification's
/// type never decides it: every effect Apple documents for a type shows in the fields it carries (a new transaction,
/// a re-signed one with revocationDate or a later expiresDate, a renewal info with isInBillingRetryPeriod or
/// gracePeriodExpiresDate), so the same facts give the same status whichever notifications delivered them.
struct SubscriptionView {
    /// The subscription's transactions known at `asOf` (each its newest version signed at or before `asOf`), with the
    /// version that decides whether each is revoked at `at` (rule K1).
    let transactions: [KnownTransaction]
    /// The current transaction: the latest purchase not upgraded away from.
    let current: KnownTransaction?
    /// The renewal info that describes `at` (rules R1, R2).
    let renewal: RenewalVersion?
    /// Whether `renewal` speaks about the current period (signed at or after the current purchase).
    let renewalIsCurrent: Bool
    let status: Status?
    let at: Int64

    /// `renewals`: the subscription's renewal infos (all of them, oldest first); those signed after `asOf` are unknown.
    init(transactions: [KnownTransaction], renewals: [RenewalVersion], at t: Int64, asOf k: Int64) {
        self.transactions = transactions
        self.at = t
        // Rule C1: the current transaction is the one with the latest purchaseDate (ties: later expiresDate, then the
        // larger transactionId), among those not upgraded away from (isUpgraded: "entitlement comes from the other
        // transaction", Apple's isUpgraded). A purchase dated after `at` is not current yet.
        func later(_ a: TransactionVersion, _ b: TransactionVersion) -> Bool {
            if (a.purchaseDate ?? 0) != (b.purchaseDate ?? 0) { return (a.purchaseDate ?? 0) > (b.purchaseDate ?? 0) }
            if (a.expiresDate ?? 0) != (b.expiresDate ?? 0) { return (a.expiresDate ?? 0) > (b.expiresDate ?? 0) }
            return a.transactionId > b.transactionId
        }
        let started = transactions.filter { ($0.version.purchaseDate ?? $0.version.signedDate) <= t }
        // C2: isUpgraded, when known only from a version signed after `at`, counts at `at` only once the upgrade had
        // happened then: another transaction of the subscription purchased at or after this one, and by `at` (the
        // upgrade is "effective immediately", AL section 1). Known at `at` (asOf <= at), the flag counts as signed.
        let eligible = started.filter { x in
            let v = x.version
            guard v.value.isUpgraded == true else { return true }
            if v.signedDate <= t { return false }
            return !started.contains { $0.version.transactionId != v.transactionId && ($0.version.purchaseDate ?? 0) >= (v.purchaseDate ?? 0) }
        }
        let current = (eligible.isEmpty ? started : eligible).reduce(nil as KnownTransaction?) { best, x in
            best.map { later(x.version, $0.version) ? x : $0 } ?? x
        }
        self.current = current

        // Rule R1: a renewal info describes the period it was signed in; one signed before the current purchase
        // (a billing retry that has since recovered, say) says nothing about the current period.
        var renewal = renewals.newest(at: min(t, k))
        func describesCurrent(_ r: RenewalVersion) -> Bool { current.map { r.signedDate >= ($0.version.purchaseDate ?? 0) } ?? true }
        var isCurrent = renewal.map(describesCurrent) ?? false
        // Rule R2 (asOf after at): a renewal info signed after `at`, but before the next purchase of the subscription
        // after `at`, describes the same period as `at`. Billing retry begins at the period's expiresDate and lasts
        // until recovery or its end (up to 60 days), the billing grace period being its start, with
        // isInBillingRetryPeriod true throughout (AL section 2): one such renewal info in retry or grace shows the
        // state at `at` too, where nothing signed by `at` did. With no renewal info of the current period signed by
        // `at` (a backfill, a late DID_FAIL_TO_RENEW), the period's own later description is used.
        if k > t, let cur = current {
            let next = transactions.compactMap { $0.version.purchaseDate }.filter { $0 > t }.min() ?? .max
            let candidates = renewals.filter { $0.signedDate > t && $0.signedDate <= k && $0.signedDate < next }
            func showsFailure(_ r: RenewalVersion) -> Bool {
                r.value.isInBillingRetryPeriod == true || (r.gracePeriodExpiresDate ?? .min) > t
            }
            let ended = (cur.version.expiresDate ?? .max) <= t
            if let first = candidates.first, !isCurrent {
                renewal = ended ? (candidates.first(where: showsFailure) ?? first) : first
                isCurrent = true
            } else if ended, let r = renewal, !showsFailure(r), let failing = candidates.first(where: showsFailure) {
                renewal = failing
            }
        }
        self.renewal = renewal
        renewalIsCurrent = isCurrent
        status = current.map { Self.rules($0, renewal: isCurrent ? renewal : nil, at: t) }
    }

    /// Rules S1-S5, in this order (docs/ledger.md):
    ///  S1 revoked (5): the current transaction has a revocationDate at or before `t` (refund, Family Sharing revoke).
    ///  S2 active (1): its expiresDate is after `t` (a renewal extension re-signs it with the later date).
    ///  S3 billing grace period (4): expired, and the current renewal info's gracePeriodExpiresDate is after `t`.
    ///  S4 billing retry (3): expired, and the current renewal info has isInBillingRetryPeriod true.
    ///  S5 expired (2): otherwise; with no newer signed fact, an ended period is an expiry.
    static func rules(_ tx: KnownTransaction, renewal: RenewalVersion?, at t: Int64) -> Status {
        if tx.revokedBy != nil { return .revoked }
        if let e = tx.version.expiresDate, e > t { return .active }
        if let g = renewal?.gracePeriodExpiresDate, g > t { return .billingGracePeriod }
        if renewal?.value.isInBillingRetryPeriod == true { return .billingRetry }
        return .expired
    }

    /// Entitled (StoreKit: subscribed or in the billing grace period), and until when.
    var entitledUntil: Int64? {
        switch status {
        case .active?: current?.version.expiresDate
        case .billingGracePeriod?: renewal?.gracePeriodExpiresDate
        default: nil
        }
    }
    var isEntitled: Bool { status == .active || status == .billingGracePeriod }

    /// The transaction the customer upgraded away from into the current one (its period covered the current purchase).
    var upgradedFrom: TransactionVersion? {
        guard let cur = current?.version, let p = cur.purchaseDate else { return nil }
        return transactions.map(\.version).filter { x in
            x.value.isUpgraded == true && x.transactionId != cur.transactionId
                && (x.purchaseDate ?? .max) <= p && (x.expiresDate ?? .min) >= p
        }.max { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) }
    }
}

/// A transaction as known at `asOf`, about instant `at` (docs/ledger.md, "Bitemporal queries").
struct KnownTransaction {
    /// Its newest version signed at or before `asOf`: the best knowledge of its dates and fields.
    let version: TransactionVersion
    /// The version that shows it revoked at `at` (nil: not revoked then). Rule K1: of the versions known at `asOf`,
    /// those signed at or before `at` and those whose revocationDate is at or before `at` speak about `at`, and the
    /// newest of them decides. So a refund re-signed after its revocationDate revokes from that date, while a
    /// REFUND_REVERSED signed after `at` (Apple: "reinstate access", AL section 5.4) leaves `at` revoked: the
    /// reversal gives access back from when it was signed. Known at `at` (asOf <= at), this is the newest version.
    let revokedBy: TransactionVersion?

    var revocation: JWSTransactionDecodedPayload? { revokedBy?.value }
}

extension Array where Element == TransactionVersion {
    /// The transaction these versions (oldest first) are, as known at `k`, about instant `t`; nil when none was
    /// signed by `k`.
    func known(at t: Int64, asOf k: Int64) -> KnownTransaction? {
        guard let newest = newest(at: k) else { return nil }
        var decider: TransactionVersion?
        for v in reversed() where v.signedDate <= k {
            if v.signedDate <= t || v.isRevoked(at: t) { decider = v; break }
        }
        return KnownTransaction(version: newest, revokedBy: decider.flatMap { $0.isRevoked(at: t) ? $0 : nil })
    }
}

extension LedgerState {
    func view(ofSubscription id: String, at t: Int64, asOf k: Int64) -> SubscriptionView? {
        let txs = (subscriptionTransactions[id] ?? []).compactMap { transactions[$0]?.known(at: t, asOf: k) }
        let renewals = self.renewals[id] ?? []
        if txs.isEmpty && renewals.newest(at: k) == nil { return nil }
        return SubscriptionView(transactions: txs, renewals: renewals, at: t, asOf: k)
    }

    /// Apple's status of subscription `id` at `t`, from the facts signed at or before `asOf` (nil: no transaction of
    /// it is known).
    public func status(ofSubscription id: String, at t: Int64, asOf k: Int64) -> Status? {
        view(ofSubscription: id, at: t, asOf: k)?.status
    }

    /// The newest notification about subscription `id` signed at or before `t` (a notification reports an event when
    /// it is signed, so one signed later is not about `t`).
    func lastNotification(about id: String, at t: Int64) -> NotificationFacts? {
        (subscriptionNotifications[id] ?? []).compactMap { notifications[$0] }
            .filter { $0.signedDate <= t && $0.originalTransactionId == id }
            .max { $0.isOlder(than: $1) }
    }

    /// Subscription `id` at instant `t`, from the facts signed at or before `asOf` (docs/ledger.md, "Bitemporal
    /// queries"): `asOf` = `t` answers as known then (what data.status means); a later `asOf` also applies what was
    /// signed since about `t` (a refund re-signed late, a backfill). nil when the ledger knew nothing of it at `asOf`.
    public func subscription(_ id: String, at t: Int64, asOf k: Int64) -> LedgerSubscription? {
        guard let v = view(ofSubscription: id, at: t, asOf: k) else { return nil }
        let tx = v.current?.version.value
        // The revocation fields: of the version that revokes it at `t`; else, as known then, of a version signed by
        // `t` (as before bitemporal queries); a refund signed later but dated after `t` is not reported at `t`.
        let rv = v.current.flatMap { c in c.revocation ?? (c.version.signedDate <= t ? c.version.value : nil) }
        let ri = v.renewal?.value
        let riCurrent = v.renewalIsCurrent ? ri : nil
        let last = lastNotification(about: id, at: min(t, k))
        let up = v.upgradedFrom
        let pending = ri?.autoRenewProductId.flatMap { p in p != (tx?.productId ?? ri?.productId) ? p : nil }
        return LedgerSubscription(
            originalTransactionId: id, at: LedgerTime.date(t),
            customerId: v.current?.version.customerId ?? v.renewal?.customerId ?? id,
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
            revocationDate: rv?.revocationDate, revocationReason: rv?.revocationReason, revocationType: rv?.revocationType,
            revocationPercentage: rv?.revocationPercentage, environment: tx?.environment ?? ri?.environment,
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
