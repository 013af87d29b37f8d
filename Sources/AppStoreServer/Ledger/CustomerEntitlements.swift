import FoundationEssentials

/// What a customer is entitled to at an instant (docs/ledger.md, "Entitlements"):
///  E1 an auto-renewable subscription in status 1 (until expiresDate) or 4 (until gracePeriodExpiresDate): StoreKit's
///     "subscribed" and "inGracePeriod" are entitled, "expired", "inBillingRetryPeriod" and "revoked" are not;
///  E2 a non-consumable, purchased at or before the instant and not revoked (refund or Family Sharing revoke), with
///     no end;
///  E3 a non-renewing subscription, the same way: Apple signs no end for it ("the app defines how long it lasts"),
///     so it has none here either and the app applies its own duration from purchaseDate;
///  E4 consumables grant nothing lasting: they are listed, bought and refunded, for the app to account.
/// One entitlement per product: several transactions of one product (restores, an own and a family-shared purchase)
/// give the one that lasts longest (no end first), PURCHASED before FAMILY_SHARED.
extension LedgerState {
    /// Customer `id` at instant `t`, from the facts signed at or before `asOf` (`asOf` = `t`: as known then; see
    /// `subscription(_:at:asOf:)` and docs/ledger.md, "Bitemporal queries").
    public func customer(_ id: String, at t: Int64, asOf k: Int64) -> LedgerCustomer {
        let key = LedgerCustomerKey.normalize(id)
        // Candidates from every fact that ever named this customer; each is then judged by its versions known at
        // `asOf` (rule K1 for revocations).
        let known = (customerTransactions[key] ?? []).compactMap { transactions[$0]?.known(at: t, asOf: k) }
        let versions = known.map(\.version)
        var subscriptionIds = Set(versions.filter(\.isAutoRenewable).map(\.originalTransactionId))
        for o in customerRenewals[key] ?? [] { subscriptionIds.insert(o) }

        var subscriptions: [LedgerSubscription] = []
        var entitlements: [String: LedgerEntitlement] = [:]
        func offer(_ e: LedgerEntitlement) {
            guard let old = entitlements[e.productId] else { entitlements[e.productId] = e; return }
            if Self.better(e, than: old) { entitlements[e.productId] = e }
        }
        for o in subscriptionIds.sorted() {
            guard let s = subscription(o, at: t, asOf: k), s.customerId == key else { continue }
            subscriptions.append(s)
            if s.entitled, let product = s.productId, let txid = s.transactionId {
                offer(LedgerEntitlement(
                    productId: product, reason: s.status == .active ? .active : .billingGracePeriod,
                    until: s.entitledUntil, transactionId: txid, originalTransactionId: o,
                    productType: .autoRenewableSubscription, purchaseDate: s.purchaseDate,
                    inAppOwnershipType: s.inAppOwnershipType, subscriptionGroupIdentifier: s.subscriptionGroupIdentifier,
                    status: s.status))
            }
        }

        var purchases: [(Int64, LedgerPurchase)] = []
        var totals: [String: LedgerConsumableTotal] = [:]
        for kt in known {
            let v = kt.version
            guard !v.isAutoRenewable && v.customerId == key && (v.purchaseDate ?? v.signedDate) <= t else { continue }
            let tx = v.value
            let product = tx.productId ?? ""
            let revoked = kt.revokedBy != nil
            let rv = kt.revocation
            purchases.append(((v.purchaseDate ?? v.signedDate), LedgerPurchase(
                transactionId: v.transactionId, originalTransactionId: v.originalTransactionId, productId: product,
                productType: tx.type, quantity: tx.quantity, purchaseDate: tx.purchaseDate,
                inAppOwnershipType: tx.inAppOwnershipType, revoked: revoked,
                revocationDate: rv?.revocationDate, revocationReason: rv?.revocationReason,
                revocationType: rv?.revocationType, revocationPercentage: rv?.revocationPercentage)))
            switch tx.type {
            case .consumable?:
                let q = Int64(max(1, tx.quantity ?? 1))
                var total = totals[product] ?? LedgerConsumableTotal(productId: product, purchasedQuantity: 0,
                                                                     refundedQuantity: 0, transactions: 0, refundedTransactions: 0)
                total.purchasedQuantity += q
                total.transactions += 1
                if revoked {
                    total.refundedQuantity += q
                    total.refundedTransactions += 1
                }
                totals[product] = total
            case .nonConsumable?, .nonRenewingSubscription?:
                guard !revoked else { break }
                offer(LedgerEntitlement(
                    productId: product, reason: tx.type == .nonConsumable ? .nonConsumable : .nonRenewingSubscription,
                    until: nil, transactionId: v.transactionId, originalTransactionId: v.originalTransactionId,
                    productType: tx.type, purchaseDate: tx.purchaseDate, inAppOwnershipType: tx.inAppOwnershipType,
                    subscriptionGroupIdentifier: nil, status: nil))
            default:
                break  // a type this library does not know grants nothing (docs/ledger.md)
            }
        }
        purchases.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1.transactionId < $1.1.transactionId }
        return LedgerCustomer(
            customerId: key, at: LedgerTime.date(t),
            entitlements: entitlements.keys.sorted().compactMap { entitlements[$0] },
            subscriptions: subscriptions, purchases: purchases.map(\.1),
            consumables: totals.keys.sorted().compactMap { totals[$0] })
    }

    /// Whether entitlement `a` should be reported rather than `b` for the same product.
    static func better(_ a: LedgerEntitlement, than b: LedgerEntitlement) -> Bool {
        let ua = a.until.map(LedgerTime.milliseconds) ?? .max, ub = b.until.map(LedgerTime.milliseconds) ?? .max
        if ua != ub { return ua > ub }
        let pa = a.inAppOwnershipType != .familyShared, pb = b.inAppOwnershipType != .familyShared
        if pa != pb { return pa }
        return a.transactionId > b.transactionId
    }
}
