import FoundationEssentials

/// JSON text of receipt results, keys in a fixed order, absent values left out, dates in milliseconds since 1970.
struct ReceiptJSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = []

    private mutating func separator() {
        if let last = needsComma.last {
            if last { bytes.append(UInt8(ascii: ",")) }
            needsComma[needsComma.count - 1] = true
        }
    }
    private mutating func key(_ k: String) {
        separator()
        JSONObjectWriter.appendString(k, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma.append(false)  // the value itself must not add a comma
    }
    private mutating func endValue() { needsComma.removeLast() }

    mutating func beginObject(_ k: String? = nil) {
        if let k { key(k); endValue() } else { separator() }
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }
    mutating func endObject() { needsComma.removeLast(); bytes.append(UInt8(ascii: "}")) }
    mutating func beginArray(_ k: String) {
        key(k); endValue()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }
    mutating func endArray() { needsComma.removeLast(); bytes.append(UInt8(ascii: "]")) }

    mutating func element(_ s: String) { separator(); JSONObjectWriter.appendString(s, to: &bytes) }
    mutating func add(_ k: String, _ v: String?) {
        guard let v else { return }
        key(k); JSONObjectWriter.appendString(v, to: &bytes); endValue()
    }
    mutating func addNullable(_ k: String, _ v: String?) {
        key(k)
        if let v { JSONObjectWriter.appendString(v, to: &bytes) } else { bytes += Array("null".utf8) }
        endValue()
    }
    mutating func add(_ k: String, _ v: Int64?) {
        guard let v else { return }
        key(k); bytes += Array(String(v).utf8); endValue()
    }
    mutating func add(_ k: String, _ v: Bool?) {
        guard let v else { return }
        key(k); bytes += Array((v ? "true" : "false").utf8); endValue()
    }
    mutating func add(_ k: String, _ v: Date?) { add(k, v?.receiptMilliseconds) }
}

extension AppReceipt {
    /// `{"firstTransactionId":..., "transactionIds":[...], "originalTransactionIds":[...],
    ///   "inApp":[{"transactionId":..., "originalTransactionId":...}, ...]}`.
    public var json: [UInt8] {
        var w = ReceiptJSONWriter()
        w.beginObject()
        w.addNullable("firstTransactionId", firstTransactionId)
        w.beginArray("transactionIds")
        for id in transactionIds { w.element(id) }
        w.endArray()
        w.beginArray("originalTransactionIds")
        for id in originalTransactionIds { w.element(id) }
        w.endArray()
        w.beginArray("inApp")
        for r in inApp {
            w.beginObject()
            w.add("transactionId", r.transactionId)
            w.add("originalTransactionId", r.originalTransactionId)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}

extension AppReceiptContents {
    func write(to w: inout ReceiptJSONWriter) {
        w.add("bundleId", bundleId)
        w.add("applicationVersion", applicationVersion)
        w.add("originalApplicationVersion", originalApplicationVersion)
        w.add("receiptCreationDate", receiptCreationDate)
        w.add("receiptExpirationDate", receiptExpirationDate)
        w.beginArray("inApp")
        for p in inAppPurchases {
            w.beginObject()
            w.add("quantity", p.quantity)
            w.add("productId", p.productId)
            w.add("transactionId", p.transactionId)
            w.add("originalTransactionId", p.originalTransactionId)
            w.add("purchaseDate", p.purchaseDate)
            w.add("originalPurchaseDate", p.originalPurchaseDate)
            w.add("expiresDate", p.expiresDate)
            w.add("cancellationDate", p.cancellationDate)
            // A string, as in signed transactions (and safe from JavaScript's 2^53 limit).
            w.add("webOrderLineItemId", p.webOrderLineItemId.map { String($0) })
            w.add("isInIntroOfferPeriod", p.isInIntroOfferPeriod)
            w.endObject()
        }
        w.endArray()
    }
}
