import FoundationEssentials

/// The library's one JSON writer: compact UTF-8 with RFC 8259 string escaping, keys in the order written. Used for
/// JWT headers and claims, request bodies, the library's own JSON outputs and the generated models' encoders.
struct JSONWriter {
    /// How a Date becomes integer milliseconds. Request bodies truncate toward zero, as Apple's libraries do; the
    /// library's own outputs round to the nearest millisecond (exact for every date they carry).
    enum DateRounding {
        case towardZero
        case toNearest
    }

    private(set) var bytes: [UInt8] = []
    let dateRounding: DateRounding
    /// Whether the next value or key needs a ',' before it.
    private var needsComma = false

    init(dateRounding: DateRounding = .towardZero) {
        self.dateRounding = dateRounding
        bytes.reserveCapacity(1024)  // a ledger answer grows through 256..2048 otherwise, each step a copy
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    mutating func key(_ k: String) {
        separate()
        Self.appendString(k, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    mutating func string(_ s: String) { separate(); Self.appendString(s, to: &bytes); needsComma = true }
    mutating func int(_ v: Int64) { separate(); Self.appendDecimal(v, to: &bytes); needsComma = true }
    mutating func bool(_ v: Bool) { separate(); Self.appendASCII(v ? "true" : "false", to: &bytes); needsComma = true }
    mutating func null() { separate(); Self.appendASCII("null", to: &bytes); needsComma = true }
    /// Already-serialized JSON (e.g. a signed payload exactly as Apple signed it).
    mutating func raw(_ json: [UInt8]) { separate(); bytes += json; needsComma = true }

    mutating func member(_ k: String, _ v: String) { key(k); string(v) }
    mutating func member(_ k: String, _ v: Int64) { key(k); int(v) }
    mutating func member(_ k: String, _ v: Bool) { key(k); bool(v) }

    private static let hex = Array("0123456789abcdef".utf8)

    /// Writes `s` quoted and escaped. The bytes between escapes are copied in runs: queries write mostly plain
    /// ASCII, and a per-byte append was two thirds of a ledger query's cost.
    static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                start = i + 1
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(b)
                case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                            hex[Int(b >> 4)], hex[Int(b & 15)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Decimal digits of `v` without an intermediate String.
    static func appendDecimal(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for UInt64's 20 digits, written from the end
        withUnsafeMutableBytes(of: &digits) { buf in
            var first = buf.count
            repeat {
                first -= 1
                buf[first] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
            } while m > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[first...]))
        }
    }

    static func appendASCII(_ s: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }
}

/// A value that cannot be written as JSON (a date outside years 0001-9999), with the JSON-key path.
struct JSONWriteError: Error, Hashable, Sendable, CustomStringConvertible {
    let path: String
    let reason: String
    func at(_ key: String) -> JSONWriteError {
        JSONWriteError(path: path.isEmpty ? key : path.hasPrefix("[") ? key + path : "\(key).\(path)", reason: reason)
    }
    var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

/// A type the library writes as JSON; the generated models conform (Models/Generated/ModelsJSON.swift).
protocol JSONEncodable {
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError)
}

extension JSONEncodable {
    func jsonBytes(dateRounding: JSONWriter.DateRounding = .towardZero) throws(JSONWriteError) -> [UInt8] {
        var w = JSONWriter(dateRounding: dateRounding)
        try writeJSON(to: &w)
        return w.bytes
    }
}

extension String: JSONEncodable {
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) { w.string(self) }
}

extension Bool: JSONEncodable {
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) { w.bool(self) }
}

extension Int64: JSONEncodable {
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) { w.int(self) }
}

extension Int32: JSONEncodable {
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) { w.int(Int64(self)) }
}

extension UUID: JSONEncodable {
    /// Lowercase, the wire form (Foundation's uuidString is uppercase).
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) { w.string(uuidString.lowercased()) }
}

extension Date: JSONEncodable {
    /// 9999-12-31T23:59:59.999Z: the last date every JSON reader and Apple accept.
    static let maximumJSONMilliseconds = 253_402_300_799_999.0

    /// Integer milliseconds since 1970 under `rule`, or nil outside years 0001-9999 (or not finite).
    func milliseconds(rounding rule: FloatingPointRoundingRule) -> Int64? {
        let ms = (timeIntervalSince1970 * 1000).rounded(rule)
        guard ms.isFinite, abs(ms) <= Self.maximumJSONMilliseconds else { return nil }
        return Int64(ms)
    }

    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) {
        let rule: FloatingPointRoundingRule = w.dateRounding == .towardZero ? .towardZero : .toNearestOrAwayFromZero
        guard let ms = milliseconds(rounding: rule) else {
            throw JSONWriteError(path: "", reason: "date out of range (years 0001-9999)")
        }
        w.int(ms)
    }
}

extension Array: JSONEncodable where Element: JSONEncodable {
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) {
        w.beginArray()
        for (index, element) in enumerated() {
            do throws(JSONWriteError) { try element.writeJSON(to: &w) } catch { throw error.at("[\(index)]") }
        }
        w.endArray()
    }
}

extension Dictionary: JSONEncodable where Key == String, Value: JSONEncodable {
    /// Keys sorted, so the output is deterministic.
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) {
        w.beginObject()
        for key in keys.sorted() {
            w.key(key)
            do throws(JSONWriteError) { try self[key]?.writeJSON(to: &w) } catch { throw error.at(key) }
        }
        w.endObject()
    }
}
