/// Base64 as receipts travel: standard alphabet, possibly wrapped in lines, possibly without its `=` padding.
/// Anything else (URL-safe alphabet, stray characters, non-canonical trailing bits) is malformed.
enum ReceiptBase64 {
    static func decode(_ text: String, what: String) throws(ReceiptError) -> [UInt8] {
        guard text.utf8.count <= ReceiptLimits.maxBase64Length else {
            throw ReceiptError(.inputTooLarge,
                "\(what) is \(text.utf8.count) bytes of base64, more than the \(ReceiptLimits.maxBase64Length) accepted")
        }
        var compact: [UInt8] = []
        compact.reserveCapacity(text.utf8.count + 2)
        for b in text.utf8 where !(b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D) { compact.append(b) }
        guard !compact.isEmpty else { throw ReceiptError(.receiptMalformed, "\(what) is empty") }
        if compact.count % 4 == 2 { compact += [UInt8(ascii: "="), UInt8(ascii: "=")] }
        else if compact.count % 4 == 3 { compact.append(UInt8(ascii: "=")) }
        guard let bytes = compact.withUnsafeBytes({ Base64.decode($0, alphabet: .standard) }), !bytes.isEmpty else {
            throw ReceiptError(.receiptMalformed, "\(what) is not standard base64")
        }
        return bytes
    }
}
