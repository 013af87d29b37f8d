/// The signed content of an app receipt, read with the bounded BER reader (no signature check):
///
///     ContentInfo ::= SEQUENCE { contentType OID signedData, content [0] EXPLICIT SignedData }
///     SignedData  ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo, [0] certificates OPTIONAL,
///                                [1] crls OPTIONAL, signerInfos SET }
///     encapContentInfo ::= SEQUENCE { eContentType OID data, eContent [0] EXPLICIT OCTET STRING }
///
/// The eContent OCTET STRING may be constructed (BER segments) and, in Xcode receipts, wrapped in one more OCTET
/// STRING; `payload` is the receipt's attribute SET with all of that removed.
struct ReceiptEnvelope {
    /// The eContent octets exactly as signed (before any extra OCTET STRING unwrapping).
    let content: [UInt8]
    /// The attribute SET.
    let payload: [UInt8]

    static let signedDataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]  // 1.2.840.113549.1.7.2
    static let dataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]        // 1.2.840.113549.1.7.1

    init(der: [UInt8]) throws(ReceiptError) {
        if let other = ReceiptKind.sniffNonPKCS7(der) { throw other }
        let r = BERReader(der, context: "app receipt (PKCS#7)")
        let root = try r.root()
        guard root.is(.universal, BERElement.Universal.sequence, constructed: true) else {
            throw r.fail("the receipt is a \(root.tagDescription), not a PKCS#7 ContentInfo SEQUENCE")
        }
        let info = try r.children(of: root, depth: 0)
        guard info.count == 2, info[0].is(.universal, BERElement.Universal.objectIdentifier) else {
            throw r.fail("ContentInfo is not { contentType, [0] content }")
        }
        guard r.isOID(info[0], Self.signedDataOID) else {
            throw r.fail("content type is \(r.oidText(info[0]) ?? "not an OID"), not signedData (1.2.840.113549.1.7.2)")
        }
        guard info[1].is(.contextSpecific, 0, constructed: true) else {
            throw r.fail("ContentInfo content is \(info[1].tagDescription), not [0]")
        }
        let explicit = try r.children(of: info[1], depth: 1)
        guard explicit.count == 1, explicit[0].is(.universal, BERElement.Universal.sequence, constructed: true) else {
            throw r.fail("ContentInfo [0] does not hold exactly one SignedData SEQUENCE")
        }
        let signed = try r.children(of: explicit[0], depth: 2)
        guard signed.count >= 4, signed[0].is(.universal, BERElement.Universal.integer),
              signed[1].is(.universal, BERElement.Universal.set, constructed: true),
              signed[2].is(.universal, BERElement.Universal.sequence, constructed: true),
              let last = signed.last, last.is(.universal, BERElement.Universal.set, constructed: true) else {
            throw r.fail("SignedData is not { version, digestAlgorithms, encapContentInfo, ..., signerInfos }")
        }
        let encap = try r.children(of: signed[2], depth: 3)
        guard let type = encap.first, type.is(.universal, BERElement.Universal.objectIdentifier) else {
            throw r.fail("encapContentInfo has no content type")
        }
        guard r.isOID(type, Self.dataOID) else {
            throw r.fail("encapsulated content type is \(r.oidText(type) ?? "not an OID"), not data (1.2.840.113549.1.7.1)")
        }
        guard encap.count == 2 else {
            throw r.fail(encap.count == 1 ? "no encapsulated content (a detached signature is not a receipt)"
                                          : "encapContentInfo has \(encap.count) elements")
        }
        guard encap[1].is(.contextSpecific, 0, constructed: true) else {
            throw r.fail("eContent is \(encap[1].tagDescription), not [0]")
        }
        let octets = try r.children(of: encap[1], depth: 4)
        guard octets.count == 1 else { throw r.fail("eContent [0] holds \(octets.count) elements, not one OCTET STRING") }
        content = try r.octetString(octets[0], depth: 5)

        // Xcode wraps the attribute SET in one more OCTET STRING.
        var payload = content
        for _ in 0..<ReceiptLimits.maxOctetStringWrapping {
            guard payload.first == 0x04 || payload.first == 0x24 else { break }
            let inner = BERReader(payload, context: "receipt content")
            payload = try inner.octetString(try inner.root(), depth: 0)
        }
        guard payload.first == 0x31 else {
            throw ReceiptError(.receiptMalformed, "receipt content is not a SET of receipt attributes")
        }
        self.payload = payload
    }
}

/// Tells the two legacy receipt formats apart, to name the right call when one is given to the other's.
enum ReceiptKind {
    /// For bytes given to the app-receipt parser: an error when they are clearly not PKCS#7 (a text transaction
    /// receipt, or something else entirely), nil when they may be.
    static func sniffNonPKCS7(_ der: [UInt8]) -> ReceiptError? {
        guard let first = der.first else { return ReceiptError(.receiptMalformed, "the receipt is empty") }
        if first == 0x30 { return nil }
        if looksLikeTransactionReceipt(der) {
            return ReceiptError(.wrongKind,
                "this is an old-style transaction receipt (text with \"purchase-info\"), not an app receipt: "
                + "use the transaction-receipt call (extractTransactionId(transactionReceipt:))")
        }
        let hex = String(first, radix: 16, uppercase: true)
        return ReceiptError(.receiptMalformed,
            "app receipt (PKCS#7): the decoded receipt starts with byte 0x\(hex.count == 1 ? "0" : "")\(hex), "
            + "not a DER/BER SEQUENCE (0x30)")
    }

    /// A text `{ ... "purchase-info" = ... }` dictionary.
    static func looksLikeTransactionReceipt(_ bytes: [UInt8]) -> Bool {
        guard let start = bytes.firstIndex(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }),
              bytes[start] == UInt8(ascii: "{") else { return false }
        return TextScan.find(Array("\"purchase-info\"".utf8), in: bytes[...]) != nil
            || TextScan.find(Array("\"signature\"".utf8), in: bytes[...]) != nil
    }

    /// For bytes given to the transaction-receipt parser: PKCS#7 (an app receipt) is the wrong kind.
    static func looksLikePKCS7(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 2, bytes[0] == 0x30 else { return false }
        let r = BERReader(bytes, context: "")
        guard let root = try? r.element(at: 0, limit: bytes.count),
              let first = try? r.element(at: root.content.lowerBound, limit: root.content.upperBound) else { return false }
        return r.isOID(first, ReceiptEnvelope.signedDataOID)
    }
}

/// Byte-level search helpers for the text receipt format.
enum TextScan {
    /// Offset of the first occurrence of `needle` in `hay`.
    static func find(_ needle: [UInt8], in hay: ArraySlice<UInt8>) -> Int? {
        guard !needle.isEmpty, hay.count >= needle.count, let first = needle.first else { return nil }
        var i = hay.startIndex
        let lastStart = hay.endIndex - needle.count
        while i <= lastStart {
            if hay[i] == first && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
