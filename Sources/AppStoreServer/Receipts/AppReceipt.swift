/// The transaction identifiers of an app receipt, read WITHOUT checking its signature (what Apple's
/// `ReceiptUtility` does, with everything it finds): anyone can build a receipt that parses, so use these ids only
/// to look the customer up with the App Store Server API (Get Transaction History), never as proof of purchase.
/// To trust a receipt's contents, verify it with `ReceiptVerifier`.
public struct AppReceipt: Hashable, Sendable {
    /// The identifiers of one in-app purchase record (attribute 17); generated from spec/models.json.
    public typealias InAppIdentifiers = AppReceiptInAppIdentifiers

    /// One entry per in-app purchase record, in the receipt's order.
    public let inApp: [InAppIdentifiers]

    /// What Apple's Python, Node and Java libraries return: the first 1703 (transaction id) or 1705 (original
    /// transaction id) value in encoding order — in Apple's receipts the transaction id of the first in-app record.
    /// nil when the receipt has no in-app purchase records. (Apple's Swift library returns the last such value
    /// instead, usually an original transaction id.)
    public let firstTransactionId: String?

    /// Every transaction id (1703), in record order.
    public var transactionIds: [String] { inApp.compactMap(\.transactionId) }

    /// Every distinct original transaction id (1705), in order of first appearance.
    public var originalTransactionIds: [String] {
        var seen = Set<String>()
        return inApp.compactMap(\.originalTransactionId).filter { seen.insert($0).inserted }
    }

    /// Every id as one value, the shape of `appstore_receipt_extract_transaction_ids`'s JSON.
    public var transactionIdSummary: AppReceiptTransactionIds {
        AppReceiptTransactionIds(firstTransactionId: firstTransactionId, transactionIds: transactionIds,
                                 originalTransactionIds: originalTransactionIds, inApp: inApp)
    }

    /// `transactionIdSummary` as UTF-8 JSON (strings only: writing cannot fail).
    public var json: [UInt8] { (try? transactionIdSummary.jsonBytes()) ?? [] }

    /// Parses a base64 app receipt (standard alphabet; line breaks and missing padding tolerated).
    public init(base64 receipt: String) throws(ReceiptError) {
        try self.init(der: try ReceiptBase64.decode(receipt, what: "app receipt"))
    }

    /// Parses a binary (BER/DER) app receipt.
    public init(der: [UInt8]) throws(ReceiptError) {
        let envelope = try ReceiptEnvelope(der: der)
        let set = try ReceiptAttributeSet(envelope.payload, context: "receipt attributes")
        var records: [InAppIdentifiers] = []
        var first: String?
        try set.forEach { (a: ReceiptAttribute) throws(ReceiptError) in
            guard a.type == ReceiptField.inAppPurchase else { return }
            let record = try ReceiptAttributeSet(try set.value(a), context: "in-app purchase record \(records.count)")
            var tx: String?, original: String?
            try record.forEach { (f: ReceiptAttribute) throws(ReceiptError) in
                guard f.type == ReceiptField.transactionId || f.type == ReceiptField.originalTransactionId else { return }
                guard let id = ReceiptValue.string(try record.value(f)) else {
                    throw ReceiptError(.receiptMalformed,
                        "in-app purchase record \(records.count): attribute \(f.type) is not a UTF-8 string")
                }
                if first == nil { first = id }
                if f.type == ReceiptField.transactionId { if tx == nil { tx = id } } else if original == nil { original = id }
            }
            records.append(InAppIdentifiers(transactionId: tx, originalTransactionId: original))
        }
        inApp = records
        firstTransactionId = first
    }
}

/// Apple's documented receipt attribute types ("Receipt Fields", Receipt Validation Programming Guide).
enum ReceiptField {
    static let bundleId: Int64 = 2
    static let applicationVersion: Int64 = 3
    static let creationDate: Int64 = 12
    static let inAppPurchase: Int64 = 17
    static let originalApplicationVersion: Int64 = 19
    static let expirationDate: Int64 = 21

    static let quantity: Int64 = 1701
    static let productId: Int64 = 1702
    static let transactionId: Int64 = 1703
    static let purchaseDate: Int64 = 1704
    static let originalTransactionId: Int64 = 1705
    static let originalPurchaseDate: Int64 = 1706
    static let expiresDate: Int64 = 1708
    static let webOrderLineItemId: Int64 = 1711
    static let cancellationDate: Int64 = 1712
    static let isInIntroOfferPeriod: Int64 = 1719
}
