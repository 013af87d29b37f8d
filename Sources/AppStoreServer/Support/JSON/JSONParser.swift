/// Why JSON text was refused: the byte offset and what is wrong there.
struct JSONSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    let offset: Int
    let reason: String
    var description: String { "\(reason) (at byte \(offset))" }
}

/// A strict RFC 8259 parser for everything the library reads (signed payloads, JWS headers, API answers, request
/// JSON from callers). Beyond the grammar it refuses what would let two readers of the same bytes disagree, or
/// exhaust a host: a byte order mark, invalid UTF-8 (overlong forms, surrogates, lone surrogate escapes), a key
/// that appears twice in one object, and nesting deeper than `maxDepth`. The recursion is bounded by `maxDepth`,
/// so the stack it needs is small and known.
struct JSONParser {
    /// Deeper than any JSON the App Store sends or this library accepts (Apple's payloads nest about 5 levels).
    static let defaultMaxDepth = 32
    /// Objects with fewer members check a new key by scanning (cheaper than hashing for a handful of keys).
    static let linearKeyScanLimit = 16

    private let bytes: UnsafeRawBufferPointer
    private let maxDepth: Int
    private var i = 0

    private init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONSyntaxError) -> JSONValue {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            throw JSONSyntaxError(offset: 0, reason: "a byte order mark is not allowed before JSON text")
        }
        var p = JSONParser(bytes, maxDepth: maxDepth)
        p.skipWhitespace()
        let value = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == bytes.count else { throw p.fail("unexpected data after the JSON value") }
        return value
    }

    static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONSyntaxError) -> JSONValue {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONSyntaxError) in try parse(buffer, maxDepth: maxDepth) }
        }.get()
    }

    private func fail(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: i, reason: reason) }

    private mutating func skipWhitespace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard i < bytes.count else { throw fail("unexpected end of JSON text") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("unexpected character in JSON text")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let n = word.utf8CodeUnitCount
        guard bytes.count - i >= n else { throw fail("unexpected end of JSON text") }
        let w = word.utf8Start
        for k in 0..<n where bytes[i + k] != w[k] { throw fail("invalid literal (expected \(word))") }
        i += n
    }

    private mutating func enter(_ depth: Int) throws(JSONSyntaxError) {
        if depth > maxDepth { throw fail("JSON nested deeper than \(maxDepth) levels") }
        i += 1
        skipWhitespace()
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        try enter(depth)
        var members: [JSONMember] = []
        // Duplicate detection must stay linear in the number of keys (a forged payload of ~100k keys must cost no
        // more per byte than a real one): small objects, all of Apple's, scan their few keys; larger ones hash.
        var seen: Set<String> = []
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            return .object(members)
        }
        while true {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key in a JSON object") }
            let keyOffset = i
            let key = try string()
            let duplicate: Bool
            if members.count < Self.linearKeyScanLimit {
                duplicate = members.contains { $0.key == key }
            } else {
                if seen.isEmpty { seen = Set(members.lazy.map(\.key)) }
                duplicate = !seen.insert(key).inserted
            }
            if duplicate {
                // Readers disagree on duplicates (first wins here, last in JSON.parse, Python, jansson): refuse them.
                throw JSONSyntaxError(offset: keyOffset, reason: "duplicate key \"\(Self.printable(key))\" in a JSON object")
            }
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key in a JSON object") }
            i += 1
            skipWhitespace()
            members.append(JSONMember(key: key, value: try value(depth: depth)))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of JSON text inside an object") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
            } else if bytes[i] == UInt8(ascii: "}") {
                i += 1
                return .object(members)
            } else {
                throw fail("expected ',' or '}' in a JSON object")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        try enter(depth)
        var elements: [JSONValue] = []
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of JSON text inside an array") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
            } else if bytes[i] == UInt8(ascii: "]") {
                i += 1
                return .array(elements)
            } else {
                throw fail("expected ',' or ']' in a JSON array")
            }
        }
    }

    /// A string starting at the opening quote. Unescaped text is validated as UTF-8 in place and copied once.
    private mutating func string() throws(JSONSyntaxError) -> String {
        i += 1
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            if b == UInt8(ascii: "\\") { return try escapedString(from: start) }
            if b < 0x20 { throw fail("unescaped control character in a JSON string") }
            if b < 0x80 { i += 1 } else { try utf8Sequence() }
        }
        throw fail("unterminated JSON string")
    }

    /// The slow path, once a backslash is seen: the text so far, then characters decoded one by one.
    private mutating func escapedString(from start: Int) throws(JSONSyntaxError) -> String {
        var out = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            if b < 0x20 { throw fail("unescaped control character in a JSON string") }
            if b >= 0x80 {
                let from = i
                try utf8Sequence()
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[from..<i]))
                continue
            }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                i += 1
                continue
            }
            guard i + 1 < bytes.count else { throw fail("unterminated escape in a JSON string") }
            let e = bytes[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xDC00...0xDFFF).contains(scalar) { throw fail("lone low surrogate escape in a JSON string") }
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("lone high surrogate escape in a JSON string")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone high surrogate escape in a JSON string") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                Self.appendUTF8(scalar, to: &out)
            default:
                throw fail("invalid escape in a JSON string")
            }
        }
        throw fail("unterminated JSON string")
    }

    /// A scalar value (surrogates were paired before, so never a surrogate) as UTF-8.
    private static func appendUTF8(_ v: UInt32, to out: inout [UInt8]) {
        switch v {
        case 0..<0x80: out.append(UInt8(v))
        case 0x80..<0x800: out += [UInt8(0xC0 | v >> 6), UInt8(0x80 | v & 0x3F)]
        case 0x800..<0x10000: out += [UInt8(0xE0 | v >> 12), UInt8(0x80 | v >> 6 & 0x3F), UInt8(0x80 | v & 0x3F)]
        default: out += [UInt8(0xF0 | v >> 18), UInt8(0x80 | v >> 12 & 0x3F), UInt8(0x80 | v >> 6 & 0x3F), UInt8(0x80 | v & 0x3F)]
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - i >= 4 else { throw fail("truncated \\u escape in a JSON string") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            default: throw fail("invalid hex digit in a \\u escape")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    /// One multi-byte UTF-8 sequence at `i` (lead byte >= 0x80), well-formed per RFC 3629: no overlong forms, no
    /// surrogates, nothing above U+10FFFF.
    private mutating func utf8Sequence() throws(JSONSyntaxError) {
        let b = bytes[i]
        let count: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF  // range of the second byte
        switch b {
        case 0xC2...0xDF: count = 2
        case 0xE0: count = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED: count = 3; high = 0x9F
        case 0xF0: count = 4; low = 0x90
        case 0xF1...0xF3: count = 4
        case 0xF4: count = 4; high = 0x8F
        default: throw fail("invalid UTF-8 in a JSON string")
        }
        guard bytes.count - i >= count else { throw fail("truncated UTF-8 sequence in a JSON string") }
        guard bytes[i + 1] >= low, bytes[i + 1] <= high else { throw fail("invalid UTF-8 in a JSON string") }
        for k in 2..<count where bytes[i + k] & 0xC0 != 0x80 { throw fail("invalid UTF-8 in a JSON string") }
        i += count
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = i
        var negative = false
        if bytes[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        guard i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") else {
            throw fail("invalid number in JSON text")
        }
        // Integer part: accumulated as a negative number so that Int64.min fits.
        var value: Int64 = 0
        var overflow = false
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                throw fail("leading zero in a JSON number")
            }
        } else {
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                let d = Int64(bytes[i] - UInt8(ascii: "0"))
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.subtractingReportingOverflow(d)
                overflow = overflow || o1 || o2
                value = s
                i += 1
            }
        }
        var integral = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            try digits()
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            try digits()
        }
        if integral && !overflow {
            if negative { return .int(value) }
            if value != Int64.min { return .int(-value) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw JSONSyntaxError(offset: start, reason: "JSON number out of range") }
        return .double(d)
    }

    private mutating func digits() throws(JSONSyntaxError) {
        let start = i
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
        if i == start { throw fail("invalid number in JSON text") }
    }

    /// A short, printable rendering of attacker-chosen text for messages.
    static func printable(_ s: String) -> String {
        if QuotedText.looksLikeKey(s) { return QuotedText.pemDescription }
        return String(String.UnicodeScalarView(s.unicodeScalars.prefix(64).filter { $0.value >= 0x20 && $0.value < 0x7F }))
    }
}
