import FoundationEssentials
import Glibc

// The facts the state engine keeps: every distinct signed version of a transaction and of a subscription's renewal
// info, and one record per notification. Dates are milliseconds since 1970 (Apple's wire unit), so comparisons are
// exact.

/// Versions of one thing are totally ordered by (signedDate, payload bytes): the newest signed version wins, and two
/// different payloads signed in the same millisecond still have one winner whatever order they arrive in.
protocol SignedVersion: Sendable {
    var signedDate: Int64 { get }
    var payload: [UInt8] { get }
}

extension SignedVersion {
    func isOlder(than other: some SignedVersion) -> Bool {
        signedDate != other.signedDate ? signedDate < other.signedDate : payload.lexicographicallyPrecedes(other.payload)
    }
}

/// One signed version of a transaction. A class: queries pass versions around by the dozen, and copying a struct
/// of ~40 fields (most of them strings) retained each one (a third of a customer query in profiles).
final class TransactionVersion: SignedVersion {
    let value: JWSTransactionDecodedPayload
    let payload: [UInt8]
    let signedDate: Int64
    let transactionId: String
    let originalTransactionId: String
    let purchaseDate: Int64?
    let expiresDate: Int64?
    let revocationDate: Int64?
    /// The customer: the appAccountToken (lowercase), else the originalTransactionId (made once: queries read it often).
    let customerId: String

    init(_ value: JWSTransactionDecodedPayload, payload: [UInt8]) {
        self.value = value
        self.payload = payload
        signedDate = value.signedDate.map(Timestamp.milliseconds) ?? 0
        transactionId = value.transactionId ?? ""
        // A transaction without an originalTransactionId is its own original (Apple always sends both).
        originalTransactionId = value.originalTransactionId ?? transactionId
        purchaseDate = value.purchaseDate.map(Timestamp.milliseconds)
        expiresDate = value.expiresDate.map(Timestamp.milliseconds)
        revocationDate = value.revocationDate.map(Timestamp.milliseconds)
        customerId = LedgerCustomerKey.of(token: value.appAccountToken, original: originalTransactionId)
    }

    var isAutoRenewable: Bool { value.type == .autoRenewableSubscription }
    /// Revoked (refunded, or taken back from Family Sharing) at instant `t`.
    func isRevoked(at t: Int64) -> Bool { revocationDate.map { $0 <= t } ?? false }
}

/// One signed renewal info of a subscription (a class, as `TransactionVersion`).
final class RenewalVersion: SignedVersion {
    let value: JWSRenewalInfoDecodedPayload
    let payload: [UInt8]
    let signedDate: Int64
    let originalTransactionId: String
    let gracePeriodExpiresDate: Int64?
    let customerId: String

    init(_ value: JWSRenewalInfoDecodedPayload, payload: [UInt8]) {
        self.value = value
        self.payload = payload
        signedDate = value.signedDate.map(Timestamp.milliseconds) ?? 0
        originalTransactionId = value.originalTransactionId ?? ""
        gracePeriodExpiresDate = value.gracePeriodExpiresDate.map(Timestamp.milliseconds)
        customerId = LedgerCustomerKey.of(token: value.appAccountToken, original: originalTransactionId)
    }
}

/// What the engine keeps of a notification: its identity, when it was signed, what Apple said the status was, and
/// which subscription or purchase it is about.
struct NotificationFacts: SignedVersion {
    let uuid: String
    let type: NotificationTypeV2?
    let subtype: Subtype?
    let signedDate: Int64
    /// data.status: Apple's status of the subscription as of signedDate.
    let status: Status?
    let transactionId: String?
    let originalTransactionId: String?
    /// Whether the notification is about an auto-renewable subscription (it carries a renewal info, or an
    /// auto-renewable transaction): only those have a status to compare.
    let isSubscription: Bool
    /// The payload as signed, but with its nested signed values (data.signedTransactionInfo, data.signedRenewalInfo,
    /// appData.signedAppTransactionInfo) replaced by null: they are stored as events of their own right inside the
    /// notification's `signed`, decoded in the transactions and renewal_infos tables, and were two thirds of the
    /// notification row and of its memory here (docs/ledger.md, "Tables").
    let payload: [UInt8]

    init(_ n: ResponseBodyV2DecodedPayload, payload: [UInt8], transaction: TransactionVersion?, renewalInfo: RenewalVersion?) {
        // A notification without a UUID (Apple always sends one) is identified by its payload.
        uuid = n.notificationUUID ?? "payload:" + LedgerDigest.sha256Hex(payload)
        type = n.notificationType
        subtype = n.subtype
        signedDate = n.signedDate.map(Timestamp.milliseconds) ?? 0
        status = n.data?.status
        transactionId = transaction?.transactionId
        originalTransactionId = transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId
        isSubscription = renewalInfo != nil || transaction?.isAutoRenewable == true
        self.payload = Self.nullingNested(payload, [n.data?.signedTransactionInfo, n.data?.signedRenewalInfo,
                                                    n.appData?.signedAppTransactionInfo].compactMap { $0 })
    }

    /// `payload` with each of `values` (compact JWS: base64url and dots, which JSON writes without escapes) replaced
    /// by null where it stands as a whole string; anything else byte for byte as signed. A value written with
    /// needless escapes is not found and stays.
    static func nullingNested(_ payload: [UInt8], _ values: [String]) -> [UInt8] {
        var out = payload
        for value in values where !value.isEmpty {
            let needle = [UInt8(ascii: "\"")] + Array(value.utf8) + [UInt8(ascii: "\"")]
            guard let start = Self.find(needle, in: out) else { continue }
            out.replaceSubrange(start..<(start + needle.count), with: Array("null".utf8))
        }
        return out
    }

    /// The first index of `needle` in `hay` (memchr for its first byte, then memcmp: glibc's memmem is not exported
    /// to Swift).
    static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard let first = needle.first, needle.count <= hay.count else { return nil }
        return hay.withUnsafeBytes { h in
            needle.withUnsafeBytes { n in
                var from = 0
                let last = h.count - n.count
                while from <= last, let hit = memchr(h.baseAddress! + from, Int32(first), last - from + 1) {
                    let i = h.baseAddress!.distance(to: UnsafeRawPointer(hit))
                    if memcmp(h.baseAddress! + i, n.baseAddress!, n.count) == 0 { return i }
                    from = i + 1
                }
                return nil
            }
        }
    }
}

/// Customer identifiers: an appAccountToken in lowercase, or an originalTransactionId as given.
public enum LedgerCustomerKey {
    static func of(token: UUID?, original: String) -> String {
        token.map { $0.uuidString.lowercased() } ?? original
    }

    /// A caller's customer id in the ledger's form: a UUID is compared in lowercase.
    public static func normalize(_ id: String) -> String {
        isUUID(id) ? id.lowercased() : id
    }

    /// 8-4-4-4-12 hexadecimal digits (what UUID(uuidString:) accepts, without its scanf on every query).
    static func isUUID(_ s: String) -> Bool {
        var n = 0
        for c in s.utf8 {
            switch n {
            case 8, 13, 18, 23: guard c == UInt8(ascii: "-") else { return false }
            default:
                guard (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x66) else { return false }
            }
            n += 1
            if n > 36 { return false }
        }
        return n == 36
    }
}

/// Sorted, de-duplicated version lists.
extension Array where Element: SignedVersion {
    /// Inserts `v` in order unless an identical version is there; true when it was inserted.
    mutating func insertVersion(_ v: Element) -> Bool {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid].isOlder(than: v) { lo = mid + 1 } else { hi = mid }
        }
        if lo < count, self[lo].signedDate == v.signedDate, self[lo].payload == v.payload { return false }
        insert(v, at: lo)
        return true
    }

    /// The newest version signed at or before `t` (every fact signed later is unknown at `t`).
    func newest(at t: Int64) -> Element? {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid].signedDate <= t { lo = mid + 1 } else { hi = mid }
        }
        return lo > 0 ? self[lo - 1] : nil
    }
}
