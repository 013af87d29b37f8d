/// A parsed JSON value. Objects keep their members in document order; a key appears at most once (the parser
/// rejects duplicates, so a reader can never see a different member than another JSON parser would).
enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// An integer literal (no fraction, no exponent) that fits in 64 bits.
    case int(Int64)
    /// Any other number.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// What the value is, for messages: "a string", "null", ...
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The member named `key` of an object (nil for other values).
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }
}

struct JSONMember: Hashable, Sendable {
    let key: String
    let value: JSONValue
}
