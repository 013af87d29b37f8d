import FoundationEssentials

/// A JSON value that does not decode into a model: where (the JSON-key path, e.g. `items[0].sku`) and why.
/// The path is built while the error travels up (nothing is spent on it when decoding succeeds).
struct JSONDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Problem: Hashable, Sendable {
        case typeMismatch(expected: String, found: String)
        case missingKey(String)
        /// A key the model does not read, at the end of the path (strict decoding only); `known` are the model's keys.
        case unknownKey(known: [String])
        case invalidValue(String)
    }

    let problem: Problem
    /// Path components innermost first (`[0]` for array elements, keys otherwise).
    private var reversedPath: [String] = []

    init(_ problem: Problem) { self.problem = problem }

    static func typeMismatch(_ expected: String, _ found: JSONValue) -> JSONDecodeError {
        JSONDecodeError(.typeMismatch(expected: expected, found: found.kindName))
    }

    func at(_ key: String) -> JSONDecodeError {
        var e = self
        e.reversedPath.append(key)
        return e
    }

    func at(index: Int) -> JSONDecodeError { at("[\(index)]") }

    /// `items[0].sku`; empty at the top level.
    var path: String {
        var out = ""
        for component in reversedPath.reversed() {
            if !out.isEmpty && !component.hasPrefix("[") { out += "." }
            out += component
        }
        return out
    }

    var description: String {
        let where_ = path.isEmpty ? "top level" : path
        switch problem {
        case .typeMismatch(let expected, let found): return "\(where_): expected \(expected), found \(found)"
        case .missingKey(let key): return "\(where_): missing required key \"\(key)\""
        case .unknownKey(let known):
            return "unknown key \"\(path)\"; keys there: " + known.map { "\"\($0)\"" }.joined(separator: ", ")
        case .invalidValue(let why): return "\(where_): \(why)"
        }
    }
}

/// A type the library decodes from a parsed `JSONValue`. `strict`: keys a model does not read are refused (JSON
/// from callers: a misspelt field must not vanish) instead of ignored (Apple's payloads: new fields must not break).
/// The generated models conform (Models/Generated/ModelsJSON.swift), as do the primitives below.
protocol JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError)
}

extension JSONDecodable {
    /// Decodes JSON text: syntax errors and decoding errors both become `JSONDecodeError`.
    init(jsonText: UnsafeRawBufferPointer, strict: Bool) throws(JSONDecodeError) {
        let value: JSONValue
        do { value = try JSONParser.parse(jsonText) } catch {
            throw JSONDecodeError(.invalidValue("not JSON: \(error)"))
        }
        try self.init(json: value, strict: strict)
    }

    init(jsonText: [UInt8], strict: Bool) throws(JSONDecodeError) {
        self = try jsonText.withUnsafeBytes { b in
            Result { () throws(JSONDecodeError) in try Self(jsonText: b, strict: strict) }
        }.get()
    }
}

/// Helpers of the generated decoders.
enum JSONFields {
    static func members(_ json: JSONValue) throws(JSONDecodeError) -> [JSONMember] {
        guard case .object(let members) = json else { throw .typeMismatch("an object", json) }
        return members
    }

    static func required<T>(_ value: T?, _ key: String) throws(JSONDecodeError) -> T {
        guard let value else { throw JSONDecodeError(.missingKey(key)) }
        return value
    }

    /// A model constant (e.g. `operation`): absent or null is fine, anything else must be exactly `expected`.
    static func constant(_ json: JSONValue, _ expected: String, key: String) throws(JSONDecodeError) {
        switch json {
        case .null: return
        case .string(let s) where s == expected: return
        default: throw JSONDecodeError(.invalidValue("\"\(key)\" must be \"\(expected)\" (the only value), or be left out"))
        }
    }

    static func optional<T: JSONDecodable>(_ json: JSONValue, strict: Bool) throws(JSONDecodeError) -> T? {
        if case .null = json { return nil }
        return try T(json: json, strict: strict)
    }
}

extension String: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        guard case .string(let s) = json else { throw .typeMismatch("a string", json) }
        self = s
    }
}

extension Bool: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        guard case .bool(let b) = json else { throw .typeMismatch("a boolean", json) }
        self = b
    }
}

extension Int64: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        switch json {
        case .int(let v): self = v
        case .double(let d) where d.rounded() == d && d >= -9.2e18 && d <= 9.2e18:
            self = Int64(d)  // integral and in range: exact
        default: throw .typeMismatch("an integer", json)
        }
    }
}

extension Int32: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        let wide = try Int64(json: json, strict: strict)
        guard let v = Int32(exactly: wide) else { throw JSONDecodeError(.invalidValue("\(wide) does not fit in 32 bits")) }
        self = v
    }
}

extension Date: JSONDecodable {
    /// Milliseconds since 1970, possibly fractional or negative (Apple's wire form).
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        switch json {
        case .int(let ms): self.init(timeIntervalSince1970: Double(ms) / 1000)
        case .double(let ms): self.init(timeIntervalSince1970: ms / 1000)
        default: throw .typeMismatch("a date (milliseconds since 1970)", json)
        }
    }
}

extension UUID: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        guard case .string(let s) = json else { throw .typeMismatch("a UUID string", json) }
        guard let u = UUID(uuidString: s) else { throw JSONDecodeError(.invalidValue("\"\(JSONParser.printable(s))\" is not a UUID")) }
        self = u
    }
}

extension Array: JSONDecodable where Element: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        guard case .array(let elements) = json else { throw .typeMismatch("an array", json) }
        var out: [Element] = []
        out.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            do throws(JSONDecodeError) { out.append(try Element(json: element, strict: strict)) } catch { throw error.at(index: index) }
        }
        self = out
    }
}

extension Dictionary: JSONDecodable where Key == String, Value: JSONDecodable {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) {
        guard case .object(let members) = json else { throw .typeMismatch("an object", json) }
        var out: [String: Value] = [:]
        for m in members {
            do throws(JSONDecodeError) { out[m.key] = try Value(json: m.value, strict: strict) } catch { throw error.at(m.key) }
        }
        self = out
    }
}

/// The generated open enums (a raw value, known or not): decoded from and written as their raw value.
protocol JSONRawValueEnum: RawRepresentable, JSONDecodable, JSONEncodable where RawValue: JSONDecodable & JSONEncodable {
    init(rawValue: RawValue)
}

extension JSONRawValueEnum {
    init(json: JSONValue, strict: Bool) throws(JSONDecodeError) { self.init(rawValue: try RawValue(json: json, strict: strict)) }
    func writeJSON(to w: inout JSONWriter) throws(JSONWriteError) { try rawValue.writeJSON(to: &w) }
}
