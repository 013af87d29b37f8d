/// An old-style (iOS 6) transaction receipt, read WITHOUT checking its signature: base64 of a text dictionary whose
/// `"purchase-info" = "<base64>";` entry is base64 of another text dictionary with `"transaction-id" = "<id>";`.
/// The matching follows Apple's libraries: `"key"`, one or more whitespace characters, `=`, one or more whitespace
/// characters, a quoted run of base64 characters (`A-Z a-z 0-9 + / =`), `";`; the first match wins.
public struct TransactionReceipt: Hashable, Sendable {
    /// The purchase's transaction id; nil when the receipt has no `purchase-info` or it has no `transaction-id`
    /// (as Apple's libraries return nil / null).
    public let transactionId: String?

    /// Reads the receipt's base64 text. Throws `wrongKind` for an app receipt, `receiptMalformed` when the text or its
    /// purchase-info is not base64 of UTF-8 text.
    public init(base64 receipt: String) throws(ReceiptError) {
        let outer = try ReceiptBase64.decode(receipt, what: "transaction receipt")
        if ReceiptKind.looksLikePKCS7(outer) {
            throw ReceiptError(.wrongKind,
                "this is an app receipt (PKCS#7 SignedData), not an old-style transaction receipt: use the "
                + "app-receipt call (extractTransactionId(appReceipt:))")
        }
        guard String(validating: outer, as: UTF8.self) != nil else {
            throw ReceiptError(.receiptMalformed, "transaction receipt: the decoded receipt is not UTF-8 text")
        }
        guard let info = Self.value(of: "purchase-info", in: outer) else {
            transactionId = nil
            return
        }
        let inner: [UInt8]
        do throws(ReceiptError) {
            inner = try ReceiptBase64.decode(String(decoding: info, as: UTF8.self), what: "purchase-info")
        } catch {
            throw ReceiptError(.receiptMalformed, "transaction receipt: \(error.message)")
        }
        guard String(validating: inner, as: UTF8.self) != nil else {
            throw ReceiptError(.receiptMalformed, "transaction receipt: the decoded purchase-info is not UTF-8 text")
        }
        transactionId = Self.value(of: "transaction-id", in: inner).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The value of the first `"key"\s+=\s+"([A-Za-z0-9+/=]+)";` match.
    static func value(of key: String, in text: [UInt8]) -> ArraySlice<UInt8>? {
        let needle = Array("\"\(key)\"".utf8)
        var from = 0
        while from < text.count, let at = TextScan.find(needle, in: text[from...]) {
            from = at + 1
            var i = at + needle.count
            let ws0 = i
            while i < text.count, isSpace(text[i]) { i += 1 }
            guard i > ws0, i < text.count, text[i] == UInt8(ascii: "=") else { continue }
            i += 1
            let ws1 = i
            while i < text.count, isSpace(text[i]) { i += 1 }
            guard i > ws1, i < text.count, text[i] == UInt8(ascii: "\"") else { continue }
            i += 1
            let start = i
            while i < text.count, isBase64(text[i]) { i += 1 }
            guard i > start, i + 1 < text.count, text[i] == UInt8(ascii: "\""), text[i + 1] == UInt8(ascii: ";") else {
                continue
            }
            return text[start..<i]
        }
        return nil
    }

    /// Python's `\s` on ASCII: space, \t, \n, \v, \f, \r.
    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || (0x09...0x0D).contains(c) }

    static func isBase64(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
            || c == UInt8(ascii: "+") || c == UInt8(ascii: "/") || c == UInt8(ascii: "=")
    }
}
