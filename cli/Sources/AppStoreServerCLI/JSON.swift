/// A JSON value as the tool reads and writes it (no Foundation: its JSONSerialization is in the ICU-bound part).
/// Objects keep their member order and numbers their spelling, so what is only passed through comes out as it came in.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    /// The number as spelled in the text (checked to be a JSON number).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.number(x), .number(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Parses JSON text (any value at the top, as JSONSerialization's .fragmentsAllowed); nil if it is not JSON.
    static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        var parser = JSONParser(Array(bytes))
        return parser.document()
    }

    static func parse(_ text: String) -> JSONValue? { parse(Array(text.utf8)) }

    /// The member `key` of an object (the first one of that name), else nil.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    var object: [(String, JSONValue)]? {
        if case .object(let m) = self { return m }
        return nil
    }

    /// An object or an array (what JSONSerialization accepts at the top without fragments).
    var isContainer: Bool {
        switch self {
        case .object, .array: true
        default: false
        }
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// A string's text, or a number's spelling.
    var text: String? {
        switch self {
        case .string(let s): s
        case .number(let n): n
        default: nil
        }
    }

    var int64Value: Int64? {
        guard case .number(let n) = self else { return nil }
        return Int64(n) ?? Double(n).flatMap { $0.rounded() == $0 && abs($0) < 9.2e18 ? Int64($0) : nil }
    }

    var doubleValue: Double? {
        guard case .number(let n) = self else { return nil }
        return Double(n)
    }

    /// Compact JSON text; with `sortedKeys` object members in ascending order of their keys' UTF-8 bytes.
    func serialized(sortedKeys: Bool = false) -> String {
        var out = ""
        write(to: &out, sortedKeys: sortedKeys)
        return out
    }

    private func write(to out: inout String, sortedKeys: Bool) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): out += JSONText.string(s)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out, sortedKeys: sortedKeys)
            }
            out += "]"
        case .object(let members):
            out += "{"
            let ordered = sortedKeys ? members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) } : members
            for (i, (key, value)) in ordered.enumerated() {
                if i > 0 { out += "," }
                out += JSONText.string(key) + ":"
                value.write(to: &out, sortedKeys: sortedKeys)
            }
            out += "}"
        }
    }
}

/// A strict RFC 8259 parser: linear in the input, nesting bounded (hostile input stays cheap).
private struct JSONParser {
    static let maxDepth = 512
    let bytes: [UInt8]
    var i = 0
    var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() -> JSONValue? {
        skipSpace()
        guard let v = value() else { return nil }
        skipSpace()
        return i == bytes.count ? v : nil
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    mutating func literal(_ word: StaticString, _ v: JSONValue) -> JSONValue? {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { return nil }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return nil }
        i += n
        return v
    }

    mutating func value() -> JSONValue? {
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map { .string($0) }
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number()
        }
    }

    mutating func object() -> JSONValue? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { return nil }
        i += 1
        var members: [(String, JSONValue)] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipSpace()
            guard let v = value() else { return nil }
            members.append((key, v))
            skipSpace()
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            return nil
        }
    }

    mutating func array() -> JSONValue? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { return nil }
        i += 1
        var items: [JSONValue] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipSpace()
            guard let v = value() else { return nil }
            items.append(v)
            skipSpace()
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            return nil
        }
    }

    mutating func hex4() -> UInt32? {
        guard i + 4 <= bytes.count else { return nil }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            v = v * 16 + UInt32(d)
            i += 1
        }
        return v
    }

    /// The end of the run of plain bytes (no quote, backslash or control character) from `k`.
    func plainRun(from k: Int) -> Int {
        bytes.withUnsafeBufferPointer { buf in
            var k = k
            while k < buf.count, buf[k] >= 0x20, buf[k] != UInt8(ascii: "\""), buf[k] != UInt8(ascii: "\\") { k += 1 }
            return k
        }
    }

    mutating func string() -> String? {
        i += 1
        // Runs of plain bytes are scanned without bounds checks and copied at once; a string without escapes (a
        // notification body's signedPayload: 5-20 KB) is validated and made straight from the input.
        let first = plainRun(from: i)
        if first < bytes.count, bytes[first] == UInt8(ascii: "\"") {
            defer { i = first + 1 }
            return String(validating: bytes[i..<first], as: UTF8.self)
        }
        var out: [UInt8] = []
        while i < bytes.count {
            let run = i
            i = plainRun(from: i)
            if i > run { out.append(contentsOf: bytes[run..<i]) }
            guard i < bytes.count else { break }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return String(validating: out, as: UTF8.self)
            }
            if c < 0x20 { return nil }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { return nil }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard var scalar = hex4() else { return nil }
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else { return nil }
                    i += 2
                    guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    return nil
                }
                guard let u = Unicode.Scalar(scalar) else { return nil }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: return nil
            }
        }
        return nil
    }

    mutating func number() -> JSONValue? {
        let start = i
        func digit(_ k: Int) -> Bool { k < bytes.count && bytes[k] >= UInt8(ascii: "0") && bytes[k] <= UInt8(ascii: "9") }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard digit(i) else { return nil }
        if bytes[i] == UInt8(ascii: "0") { i += 1 } else { while digit(i) { i += 1 } }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digit(i) else { return nil }
            while digit(i) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digit(i) else { return nil }
            while digit(i) { i += 1 }
        }
        return .number(String(decoding: bytes[start..<i], as: UTF8.self))
    }
}

extension String {
    /// The text without leading and trailing whitespace and newlines (Unicode's, as Foundation's
    /// `.whitespacesAndNewlines`).
    func trimmed() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace || $0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }

    /// Padded with spaces (or cut) to `length` characters.
    func padded(to length: Int) -> String {
        count >= length ? String(prefix(length)) : self + String(repeating: " ", count: length - count)
    }
}
