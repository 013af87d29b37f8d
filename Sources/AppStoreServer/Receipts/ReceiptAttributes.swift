/// One receipt attribute: `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
struct ReceiptAttribute {
    let type: Int64
    let version: Int64
    /// The value OCTET STRING element (in `set.reader`'s buffer).
    let valueElement: BERElement
}

/// A SET of receipt attributes: the receipt payload, or one in-app purchase record (attribute 17's value).
struct ReceiptAttributeSet {
    let reader: BERReader
    let root: BERElement

    init(_ bytes: [UInt8], context: String) throws(ReceiptError) {
        reader = BERReader(bytes, context: context)
        root = try reader.root()
        guard root.is(.universal, BERElement.Universal.set, constructed: true) else {
            throw reader.fail("expected a SET of receipt attributes, found \(root.tagDescription)")
        }
    }

    /// Each attribute in encoding order.
    func forEach(_ body: (ReceiptAttribute) throws(ReceiptError) -> Void) throws(ReceiptError) {
        let r = reader
        try r.forEachChild(of: root, depth: 0) { (seq: BERElement) throws(ReceiptError) in
            guard seq.is(.universal, BERElement.Universal.sequence, constructed: true) else {
                throw r.fail("attribute at offset \(seq.start) is a \(seq.tagDescription), not a SEQUENCE")
            }
            let parts = try r.children(of: seq, depth: 1)
            guard parts.count == 3, let type = r.int64(parts[0]), let version = r.int64(parts[1]),
                  parts[2].is(.universal, BERElement.Universal.octetString) else {
                throw r.fail("attribute at offset \(seq.start) is not { type INTEGER, version INTEGER, value OCTET STRING }")
            }
            try body(ReceiptAttribute(type: type, version: version, valueElement: parts[2]))
        }
    }

    /// The value octets of an attribute.
    func value(_ a: ReceiptAttribute) throws(ReceiptError) -> [UInt8] {
        try reader.octetString(a.valueElement, depth: 1)
    }
}

/// What an attribute's value octets hold: one DER element of a documented type.
enum ReceiptValue {
    /// A string (UTF8String per Apple's documentation; IA5String, PrintableString and VisibleString accepted).
    static func string(_ octets: [UInt8]) -> String? {
        let r = BERReader(octets, context: "")
        guard let e = try? r.root(), e.tagClass == .universal, !e.constructed else { return nil }
        switch e.tagNumber {
        case BERElement.Universal.utf8String, BERElement.Universal.ia5String,
             BERElement.Universal.printableString, BERElement.Universal.visibleString:
            return String(validating: octets[e.content], as: UTF8.self)
        default:
            return nil
        }
    }

    /// An INTEGER that fits in Int64.
    static func integer(_ octets: [UInt8]) -> Int64? {
        let r = BERReader(octets, context: "")
        guard let e = try? r.root() else { return nil }
        return r.int64(e)
    }

    enum DateValue: Equatable {
        /// An empty string: Apple's way of saying "no date".
        case absent
        case milliseconds(Int64)
        case invalid
    }

    /// An IA5String RFC 3339 date.
    static func date(_ octets: [UInt8]) -> DateValue {
        guard let text = string(octets) else { return .invalid }
        if text.isEmpty { return .absent }
        return ReceiptDate.milliseconds(text).map { .milliseconds($0) } ?? .invalid
    }
}
