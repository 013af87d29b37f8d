// A bounded BER reader for App Store receipts (PKCS#7 SignedData and Apple's receipt attribute sets).
//
// BER, not only DER: Xcode receipts use indefinite lengths (`30 80 ... 00 00`) and constructed OCTET STRINGs.
// Hostile input must end in an error, never a trap or a long run: every index is checked against the end of its
// enclosing element, lengths are compared as UInt64 before any conversion, nesting is bounded, and the work is
// linear in the input: the end of an indefinite-length element is found by walking its children once, then
// remembered, so the consumers that parse the same element again (and every enclosing element's walk) pay nothing
// more. The number of indefinite-length elements is bounded, which bounds that memory.

/// Limits that hold for every receipt parse.
public enum ReceiptLimits {
    /// Base64 text accepted by the receipt calls (decoded: about 12 MiB). Real app receipts are kilobytes to a
    /// few hundred kilobytes.
    public static let maxBase64Length = 16 * 1024 * 1024
    /// Nesting of constructed elements within one parse. The deepest real structure is 7 levels.
    static let maxDepth = 32
    /// High-tag-number form: at most 4 continuation bytes.
    static let maxTagBytes = 4
    /// Length field: at most 8 bytes (a length beyond the input is rejected before it is used).
    static let maxLengthBytes = 8
    /// Times an eContent OCTET STRING may wrap another OCTET STRING (Xcode adds one level).
    static let maxOctetStringWrapping = 4
    /// Indefinite-length elements in one buffer (Xcode's receipts have a handful; DER receipts none).
    static let maxIndefiniteElements = 65_536
}

/// One parsed element: identifier, where its content lies, and where the next element starts.
struct BERElement {
    enum TagClass: UInt8 { case universal = 0, application = 1, contextSpecific = 2, `private` = 3 }

    let tagClass: TagClass
    let constructed: Bool
    let tagNumber: UInt32
    /// Offset of the identifier octet.
    let start: Int
    /// The content octets (for an indefinite length: up to, not including, the end-of-contents octets).
    let content: Range<Int>
    /// Offset just past the element (past the end-of-contents octets for an indefinite length).
    let end: Int
    let indefinite: Bool

    func `is`(_ cls: TagClass, _ number: UInt32, constructed c: Bool? = nil) -> Bool {
        tagClass == cls && tagNumber == number && (c == nil || c == constructed)
    }

    /// "SEQUENCE", "[0]", "tag 27 (application)" ... for messages.
    var tagDescription: String {
        switch tagClass {
        case .universal:
            switch tagNumber {
            case 1: return "BOOLEAN"
            case 2: return "INTEGER"
            case 4: return "OCTET STRING"
            case 5: return "NULL"
            case 6: return "OBJECT IDENTIFIER"
            case 12: return "UTF8String"
            case 16: return "SEQUENCE"
            case 17: return "SET"
            case 19: return "PrintableString"
            case 22: return "IA5String"
            default: return "universal tag \(tagNumber)"
            }
        case .contextSpecific: return "[\(tagNumber)]"
        case .application: return "application tag \(tagNumber)"
        case .private: return "private tag \(tagNumber)"
        }
    }

    enum Universal {
        static let integer: UInt32 = 2
        static let octetString: UInt32 = 4
        static let objectIdentifier: UInt32 = 6
        static let utf8String: UInt32 = 12
        static let sequence: UInt32 = 16
        static let set: UInt32 = 17
        static let printableString: UInt32 = 19
        static let ia5String: UInt32 = 22
        static let visibleString: UInt32 = 26
    }
}

/// Reads BER elements out of one byte buffer. `context` names the structure in error messages.
struct BERReader {
    let bytes: [UInt8]
    let context: String
    private let ends = IndefiniteEnds()

    /// Where each indefinite-length element found so far ends (its start offset -> the offset past its end-of-contents
    /// octets): an element's children are walked once per reader, whoever asks again.
    private final class IndefiniteEnds {
        var end: [Int: Int] = [:]
    }

    init(_ bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.context = context
    }

    func fail(_ what: String) -> ReceiptError {
        ReceiptError(.receiptMalformed, "\(context): \(what)")
    }

    /// The element starting at `offset`, which must end at or before `limit`.
    func element(at offset: Int, limit: Int, depth: Int = 0) throws(ReceiptError) -> BERElement {
        guard depth <= ReceiptLimits.maxDepth else {
            throw fail("nesting deeper than \(ReceiptLimits.maxDepth) levels at offset \(offset)")
        }
        guard limit <= bytes.count, offset >= 0, offset < limit else {
            throw fail("truncated: an element was expected at offset \(offset)")
        }
        var p = offset
        let id = bytes[p]
        p += 1
        guard let tagClass = BERElement.TagClass(rawValue: id >> 6) else { throw fail("impossible tag class") }
        let constructed = id & 0x20 != 0
        var number = UInt32(id & 0x1F)
        if number == 0x1F {
            number = 0
            var count = 0
            while true {
                guard p < limit else { throw fail("truncated tag number at offset \(offset)") }
                let b = bytes[p]
                p += 1
                count += 1
                guard count <= ReceiptLimits.maxTagBytes else { throw fail("tag number longer than \(ReceiptLimits.maxTagBytes) bytes at offset \(offset)") }
                number = number << 7 | UInt32(b & 0x7F)
                if b & 0x80 == 0 { break }
            }
        } else if tagClass == .universal && number == 0 {
            throw fail(id == 0 ? "end-of-contents octets at offset \(offset) where no indefinite-length element is open"
                               : "universal tag 0 at offset \(offset)")
        }
        guard p < limit else { throw fail("truncated: the length of the element at offset \(offset) is missing") }
        let first = bytes[p]
        p += 1
        if first == 0x80 {
            guard constructed else { throw fail("indefinite length on a primitive element at offset \(offset)") }
            if let end = ends.end[offset] {
                // Found before within a wider limit: it must still end inside this one.
                guard end <= limit else {
                    throw fail("indefinite-length element at offset \(offset) has no end-of-contents octets")
                }
                return BERElement(tagClass: tagClass, constructed: true, tagNumber: number, start: offset,
                                  content: p..<(end - 2), end: end, indefinite: true)
            }
            guard ends.end.count < ReceiptLimits.maxIndefiniteElements else {
                throw fail("more than \(ReceiptLimits.maxIndefiniteElements) indefinite-length elements")
            }
            // The content runs until the end-of-contents octets that close this element: walk the children.
            var q = p
            while true {
                guard q < limit else {
                    throw fail("indefinite-length element at offset \(offset) has no end-of-contents octets")
                }
                if bytes[q] == 0 {
                    guard q + 1 < limit else { throw fail("truncated end-of-contents octets at offset \(q)") }
                    guard bytes[q + 1] == 0 else { throw fail("malformed end-of-contents octets at offset \(q)") }
                    ends.end[offset] = q + 2
                    return BERElement(tagClass: tagClass, constructed: true, tagNumber: number, start: offset,
                                      content: p..<q, end: q + 2, indefinite: true)
                }
                let child = try element(at: q, limit: limit, depth: depth + 1)
                q = child.end
            }
        }
        var length: UInt64
        if first < 0x80 {
            length = UInt64(first)
        } else {
            let n = Int(first & 0x7F)
            guard first != 0xFF else { throw fail("reserved length octet 0xFF at offset \(offset)") }
            guard n <= ReceiptLimits.maxLengthBytes else {
                throw fail("length field of \(n) bytes at offset \(offset) (at most \(ReceiptLimits.maxLengthBytes))")
            }
            guard n <= limit - p else { throw fail("truncated length field at offset \(offset)") }
            length = 0
            for _ in 0..<n {
                length = length << 8 | UInt64(bytes[p])
                p += 1
            }
        }
        let remaining = UInt64(limit - p)
        guard length <= remaining else {
            throw fail("element at offset \(offset) declares \(length) content bytes but only \(remaining) remain")
        }
        let end = p + Int(length)
        return BERElement(tagClass: tagClass, constructed: constructed, tagNumber: number, start: offset,
                          content: p..<end, end: end, indefinite: false)
    }

    /// The single element that makes up the whole buffer (trailing bytes are an error).
    func root() throws(ReceiptError) -> BERElement {
        let e = try element(at: 0, limit: bytes.count)
        guard e.end == bytes.count else {
            throw fail("\(bytes.count - e.end) unexpected bytes after the \(e.tagDescription) that ends at offset \(e.end)")
        }
        return e
    }

    /// Calls `body` with each child of a constructed element, in encoding order.
    func forEachChild(of parent: BERElement, depth: Int,
                      _ body: (BERElement) throws(ReceiptError) -> Void) throws(ReceiptError) {
        guard parent.constructed else { throw fail("\(parent.tagDescription) at offset \(parent.start) is not constructed") }
        var q = parent.content.lowerBound
        while q < parent.content.upperBound {
            let child = try element(at: q, limit: parent.content.upperBound, depth: depth + 1)
            try body(child)
            q = child.end
        }
    }

    /// The children of a constructed element (for the few small structures of the PKCS#7 envelope).
    func children(of parent: BERElement, depth: Int) throws(ReceiptError) -> [BERElement] {
        var out: [BERElement] = []
        try forEachChild(of: parent, depth: depth) { (c: BERElement) throws(ReceiptError) in out.append(c) }
        return out
    }

    /// The octets of an OCTET STRING, primitive or constructed (BER: the concatenation of its segments). Segments of
    /// every nesting level are appended to one buffer, so the cost is linear in the input whatever the nesting.
    func octetString(_ e: BERElement, depth: Int) throws(ReceiptError) -> [UInt8] {
        var out: [UInt8] = []
        try appendOctetString(e, depth: depth, to: &out)
        return out
    }

    private func appendOctetString(_ e: BERElement, depth: Int, to out: inout [UInt8]) throws(ReceiptError) {
        guard e.is(.universal, BERElement.Universal.octetString) else {
            throw fail("expected an OCTET STRING at offset \(e.start), found \(e.tagDescription)")
        }
        if !e.constructed {
            out.append(contentsOf: bytes[e.content])
            return
        }
        try forEachChild(of: e, depth: depth) { (segment: BERElement) throws(ReceiptError) in
            try appendOctetString(segment, depth: depth + 1, to: &out)
        }
    }

    /// A universal INTEGER that fits in Int64 (two's complement, at most 8 content bytes after sign padding).
    func int64(_ e: BERElement) -> Int64? {
        guard e.is(.universal, BERElement.Universal.integer, constructed: false), !e.content.isEmpty else { return nil }
        var slice = bytes[e.content]
        // Drop redundant sign octets so that e.g. 00 FF FF FF FF FF FF FF FF is accepted when it fits.
        while slice.count > 8, let f = slice.first, f == 0x00 || f == 0xFF,
              let next = slice.dropFirst().first, (next & 0x80 != 0) == (f == 0xFF) {
            slice = slice.dropFirst()
        }
        guard slice.count <= 8, let firstByte = slice.first else { return nil }
        var v: UInt64 = firstByte & 0x80 != 0 ? UInt64.max : 0
        for b in slice { v = v << 8 | UInt64(b) }
        return Int64(bitPattern: v)
    }

    /// An OBJECT IDENTIFIER's content octets compared with an expected encoding.
    func isOID(_ e: BERElement, _ encoded: [UInt8]) -> Bool {
        e.is(.universal, BERElement.Universal.objectIdentifier, constructed: false) && bytes[e.content].elementsEqual(encoded)
    }

    /// Dotted text of an OBJECT IDENTIFIER, for messages (nil when it is not a well-formed one).
    func oidText(_ e: BERElement) -> String? {
        guard e.is(.universal, BERElement.Universal.objectIdentifier, constructed: false), !e.content.isEmpty,
              e.content.count <= 64 else { return nil }
        var arcs: [UInt64] = []
        var v: UInt64 = 0
        for b in bytes[e.content] {
            guard v >> 56 == 0 else { return nil }
            v = v << 7 | UInt64(b & 0x7F)
            if b & 0x80 == 0 { arcs.append(v); v = 0 }
        }
        guard let first = arcs.first, bytes[e.content.upperBound - 1] & 0x80 == 0 else { return nil }
        let head = first < 80 ? [first / 40, first % 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }
}
