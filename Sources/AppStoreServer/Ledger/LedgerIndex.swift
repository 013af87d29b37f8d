import FoundationEssentials

/// What a query needs to load (docs/ledger.md, "Queries"): every stored event is indexed under the keys of the facts
/// it carries, in the `event_keys` table, in the transaction that stores it.
///  - `s` + originalTransactionId: an auto-renewable transaction version, a renewal info, and so every notification
///    about the subscription (a notification names its subscription through the transaction or renewal info it
///    carries). A subscription's state is built from these events alone.
///  - `p` + originalTransactionId: any other transaction version (every version of a one-time purchase).
///  - `c` + customer id (appAccountToken in lowercase, else originalTransactionId): every transaction version and
///    renewal info that names the customer, whichever version does.
/// A customer's state is built from its `c` events and the `s`/`p` events of every original transaction they name:
/// all the versions of its transactions and everything about its subscriptions.
struct LedgerKey: Hashable, Sendable {
    /// "s", "p" or "c".
    let kind: String
    let value: String

    static func subscription(_ originalTransactionId: String) -> LedgerKey { LedgerKey(kind: "s", value: originalTransactionId) }
    static func customer(_ id: String) -> LedgerKey { LedgerKey(kind: "c", value: id) }

    /// The keys `event` is indexed under.
    static func keys(of event: LedgerEvent) -> [LedgerKey] {
        var keys: Set<LedgerKey> = []
        if let t = event.transaction, !t.transactionId.isEmpty {
            keys.insert(LedgerKey(kind: t.isAutoRenewable ? "s" : "p", value: t.originalTransactionId))
            keys.insert(.customer(t.customerId))
        }
        if let r = event.renewalInfo, !r.originalTransactionId.isEmpty {
            keys.insert(.subscription(r.originalTransactionId))
            keys.insert(.customer(r.customerId))
        }
        return Array(keys)
    }

    /// The `s`/`p` keys of every original transaction the facts of `state` name.
    static func originals(in state: LedgerState) -> [LedgerKey] {
        var keys: Set<LedgerKey> = []
        for versions in state.transactions.values {
            for t in versions { keys.insert(LedgerKey(kind: t.isAutoRenewable ? "s" : "p", value: t.originalTransactionId)) }
        }
        for o in state.renewals.keys { keys.insert(.subscription(o)) }
        return Array(keys)
    }

    /// The distinct transaction and renewal-info versions `event` carries, as `ledger_versions` rows ("t"/"r", the
    /// payload's SHA-256): the summary's version counts.
    static func versions(of event: LedgerEvent) -> [(kind: String, digest: String)] {
        var out: [(String, String)] = []
        if let t = event.transaction, !t.transactionId.isEmpty { out.append(("t", LedgerDigest.sha256Hex(t.payload))) }
        if let r = event.renewalInfo, !r.originalTransactionId.isEmpty { out.append(("r", LedgerDigest.sha256Hex(r.payload))) }
        return out
    }

    /// An estimate of the memory `state` holds (its facts' payloads, their decoded values and the engine's maps):
    /// what the cache's byte budget counts.
    static func estimatedBytes(_ state: LedgerState) -> Int {
        var bytes = 256
        for versions in state.transactions.values { for t in versions { bytes += t.payload.count * 3 + 768 } }
        for versions in state.renewals.values { for r in versions { bytes += r.payload.count * 3 + 512 } }
        for n in state.notifications.values { bytes += n.payload.count + 256 }
        return bytes + state.applied.count * 48
    }
}

/// A bounded cache of per-key states (docs/ledger.md, "Cache"): a subscription's state (key `s`), and a customer's
/// (its `c` key, depending on the `s`/`p` keys it was built from). A budget in bytes (estimated: `estimatedBytes`);
/// least recently used entries go first. A new event evicts every entry built from one of its keys, whichever
/// process stored it. Used under the ledger's lock.
struct LedgerStateCache {
    struct Entry {
        var state: LedgerState
        var keys: [LedgerKey]
        var bytes: Int
        var used: UInt64
    }

    let budget: Int
    private(set) var bytes = 0
    private var entries: [LedgerKey: Entry] = [:]
    /// index key -> the entries built from it.
    private var dependents: [LedgerKey: Set<LedgerKey>] = [:]
    private var clock: UInt64 = 0
    /// For tests and the benchmark: lookups answered, and entries evicted for the budget.
    private(set) var hits = 0
    private(set) var evictions = 0

    init(budget: Int) { self.budget = budget }

    var count: Int { entries.count }

    /// Whether `key` is cached (no use recorded: a look ahead, not a lookup).
    func contains(_ key: LedgerKey) -> Bool { entries[key] != nil }

    /// The state cached under `key`, no use recorded.
    func peek(_ key: LedgerKey) -> LedgerState? { entries[key]?.state }

    mutating func get(_ key: LedgerKey) -> LedgerState? {
        guard var e = entries[key] else { return nil }
        clock += 1
        e.used = clock
        entries[key] = e
        hits += 1
        return e.state
    }

    /// Caches `state` under `key`, built from the events of `keys` (which include `key`).
    mutating func put(_ key: LedgerKey, _ state: LedgerState, keys: [LedgerKey], bytes: Int) {
        remove(key)
        guard bytes <= budget else { return }
        clock += 1
        entries[key] = Entry(state: state, keys: keys, bytes: bytes, used: clock)
        for k in keys { dependents[k, default: []].insert(key) }
        self.bytes += bytes
        if self.bytes > budget { shrink() }
    }

    /// Evicts every entry built from one of `keys`.
    mutating func invalidate(_ keys: some Sequence<LedgerKey>) {
        for k in keys {
            guard let ds = dependents[k] else { continue }
            for d in ds { remove(d) }
        }
    }

    mutating func removeAll() {
        entries.removeAll()
        dependents.removeAll()
        bytes = 0
    }

    private mutating func remove(_ key: LedgerKey) {
        guard let e = entries.removeValue(forKey: key) else { return }
        bytes -= e.bytes
        for k in e.keys {
            dependents[k]?.remove(key)
            if dependents[k]?.isEmpty == true { dependents[k] = nil }
        }
    }

    /// Down to 3/4 of the budget, least recently used first (one sort per shrink, not one scan per entry).
    private mutating func shrink() {
        let target = budget / 4 * 3
        for (key, _) in entries.sorted(by: { $0.value.used < $1.value.used }) {
            guard bytes > target else { break }
            remove(key)
            evictions += 1
        }
    }
}
