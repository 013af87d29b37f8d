import FoundationEssentials

/// The documented fields of an app receipt (Apple's "Receipt Fields"), decoded from its ASN.1 payload. Absent
/// attributes, and dates given as an empty string, are nil. Attributes Apple does not document are ignored.
public struct AppReceiptContents: Hashable, Sendable {
    /// Attribute 2.
    public let bundleId: String?
    /// Attribute 3 (CFBundleVersion on iOS, CFBundleShortVersionString on macOS).
    public let applicationVersion: String?
    /// Attribute 19.
    public let originalApplicationVersion: String?
    /// Attribute 12.
    public let receiptCreationDate: Date?
    /// Attribute 21.
    public let receiptExpirationDate: Date?
    /// Attribute 17, one per in-app purchase record, in the receipt's order.
    public let inAppPurchases: [InAppPurchaseReceipt]
}

// InAppPurchaseReceipt is generated from spec/models.json (it is also the JSON of appstore_receipt_verifier_verify).

extension AppReceiptContents {
    /// Decodes the attribute SET. Structure errors are `receiptMalformed`; a documented attribute of the wrong
    /// type, or present twice, is `undecodablePayload`.
    init(payload: [UInt8]) throws(ReceiptError) {
        let set = try ReceiptAttributeSet(payload, context: "receipt attributes")
        var f = FieldReader(set: set, record: nil)
        var records: [InAppPurchaseReceipt] = []
        try set.forEach { (a: ReceiptAttribute) throws(ReceiptError) in
            if a.type == ReceiptField.inAppPurchase {
                records.append(try InAppPurchaseReceipt(payload: try set.value(a), index: records.count))
            } else {
                try f.take(a)
            }
        }
        bundleId = try f.string(ReceiptField.bundleId, "bundle id")
        applicationVersion = try f.string(ReceiptField.applicationVersion, "app version")
        originalApplicationVersion = try f.string(ReceiptField.originalApplicationVersion, "original app version")
        receiptCreationDate = try f.date(ReceiptField.creationDate, "receipt creation date")
        receiptExpirationDate = try f.date(ReceiptField.expirationDate, "receipt expiration date")
        inAppPurchases = records
    }

    /// The creation date (attribute 12, the first one) read leniently, once the signature has authenticated the
    /// content, to choose the date the certificate chain is validated at: nil when absent, `.invalid` when unreadable.
    static func creationDate(payload: [UInt8]) -> ReceiptValue.DateValue? {
        guard let set = try? ReceiptAttributeSet(payload, context: "") else { return .invalid }
        var found: ReceiptValue.DateValue?
        try? set.forEach { (a: ReceiptAttribute) throws(ReceiptError) in
            guard a.type == ReceiptField.creationDate, found == nil else { return }
            found = (try? set.value(a)).map(ReceiptValue.date) ?? .invalid
        }
        return found
    }
}

extension InAppPurchaseReceipt {
    init(payload: [UInt8], index: Int) throws(ReceiptError) {
        let set = try ReceiptAttributeSet(payload, context: "in-app purchase record \(index)")
        var f = FieldReader(set: set, record: index)
        try set.forEach { (a: ReceiptAttribute) throws(ReceiptError) in try f.take(a) }
        quantity = try f.integer(ReceiptField.quantity, "quantity")
        productId = try f.string(ReceiptField.productId, "product id")
        transactionId = try f.string(ReceiptField.transactionId, "transaction id")
        originalTransactionId = try f.string(ReceiptField.originalTransactionId, "original transaction id")
        purchaseDate = try f.date(ReceiptField.purchaseDate, "purchase date")
        originalPurchaseDate = try f.date(ReceiptField.originalPurchaseDate, "original purchase date")
        expiresDate = try f.date(ReceiptField.expiresDate, "expires date")
        cancellationDate = try f.date(ReceiptField.cancellationDate, "cancellation date")
        // A decimal string, as in signed transactions (and safe from JavaScript's 2^53 limit).
        webOrderLineItemId = try f.integer(ReceiptField.webOrderLineItemId, "web order line item id").map { String($0) }
        isInIntroOfferPeriod = try f.integer(ReceiptField.isInIntroOfferPeriod, "is-in-intro-offer-period").map { $0 != 0 }
    }
}

/// Collects the documented attributes of one SET (each at most once) and decodes them by type.
private struct FieldReader {
    static let documented: Set<Int64> = [
        ReceiptField.bundleId, ReceiptField.applicationVersion, ReceiptField.creationDate,
        ReceiptField.originalApplicationVersion, ReceiptField.expirationDate,
        ReceiptField.quantity, ReceiptField.productId, ReceiptField.transactionId, ReceiptField.purchaseDate,
        ReceiptField.originalTransactionId, ReceiptField.originalPurchaseDate, ReceiptField.expiresDate,
        ReceiptField.webOrderLineItemId, ReceiptField.cancellationDate, ReceiptField.isInIntroOfferPeriod,
    ]

    let set: ReceiptAttributeSet
    let record: Int?
    var values: [Int64: [UInt8]] = [:]

    init(set: ReceiptAttributeSet, record: Int?) {
        self.set = set
        self.record = record
    }

    private func where_(_ type: Int64, _ name: String) -> String {
        (record.map { "in-app purchase record \($0): " } ?? "") + "attribute \(type) (\(name))"
    }

    mutating func take(_ a: ReceiptAttribute) throws(ReceiptError) {
        guard Self.documented.contains(a.type) else { return }
        guard values[a.type] == nil else {
            throw ReceiptError(.undecodablePayload,
                (record.map { "in-app purchase record \($0): " } ?? "") + "attribute \(a.type) appears more than once")
        }
        values[a.type] = try set.value(a)
    }

    func string(_ type: Int64, _ name: String) throws(ReceiptError) -> String? {
        guard let v = values[type] else { return nil }
        guard let s = ReceiptValue.string(v) else {
            throw ReceiptError(.undecodablePayload, "\(where_(type, name)) is not a UTF-8 string")
        }
        return s
    }

    func integer(_ type: Int64, _ name: String) throws(ReceiptError) -> Int64? {
        guard let v = values[type] else { return nil }
        guard let i = ReceiptValue.integer(v) else {
            throw ReceiptError(.undecodablePayload, "\(where_(type, name)) is not an INTEGER that fits in 64 bits")
        }
        return i
    }

    func date(_ type: Int64, _ name: String) throws(ReceiptError) -> Date? {
        guard let v = values[type] else { return nil }
        switch ReceiptValue.date(v) {
        case .absent: return nil
        case .milliseconds(let ms): return Date(receiptMilliseconds: ms)
        case .invalid:
            throw ReceiptError(.undecodablePayload, "\(where_(type, name)) is not an RFC 3339 date")
        }
    }
}

extension Date {
    init(receiptMilliseconds ms: Int64) { self.init(timeIntervalSince1970: Double(ms) / 1000) }

}
