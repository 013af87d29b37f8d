import FoundationEssentials

/// Finds JSON object keys a `Decodable` model does not read, at every nesting level, so a misspelt field
/// (`items[0].descripton`) is reported instead of silently vanishing from what gets signed.
///
/// How: the model's own `init(from:)` runs over the parsed JSON (`JSONTree`) through `KeyRecordingDecoder`, which
/// records every key the model asks about (`contains`, `decode`, `decodeIfPresent`, `allKeys`, ...) per object.
/// Any key of the input that the model never asked about at its position is unknown. The models themselves are the
/// schema: there is no key list to keep in sync. The recording pass is lenient about values (a missing required key
/// or a value of the wrong type is stood in for by a placeholder), so unknown keys are found even in a request that
/// also has other mistakes; `JSONDecoder` stays the authority on values and reports those.
enum StrictJSONKeys {
    struct UnknownKey: Error, Equatable {
        /// JSON path of the unknown key, e.g. `items[0].descripton`.
        let path: String
        /// The keys the model reads at that position, sorted.
        let known: [String]
    }

    /// Returns the first unknown key (depth-first, keys in sorted order), or nil when `T` reads every key.
    /// `alsoAllowedAtTop` are top-level keys consumed elsewhere (e.g. `operation`). Throws when the model cannot be
    /// walked at all (its `init(from:)` rejects even placeholder values).
    static func firstUnknownKey<T: Decodable>(in tree: JSONTree, as type: T.Type,
                                              alsoAllowedAtTop: Set<String> = []) throws -> UnknownKey? {
        let recorder = KeyRecorder()
        _ = try T(from: KeyRecordingDecoder(value: tree, path: "", codingPath: [], recorder: recorder))
        recorder.known["", default: []].formUnion(alsoAllowedAtTop)
        return firstUnknown(tree, path: "", recorder: recorder)
    }

    private static func firstUnknown(_ value: JSONTree, path: String, recorder: KeyRecorder) -> UnknownKey? {
        switch value {
        case .object(let members):
            // An object the model never opened (its key was known but the value was not an object to the model, or
            // was skipped) has nothing to compare; JSONDecoder reports a wrong type.
            guard let known = recorder.known[path] else { return nil }
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                let child = JSONTree.childPath(path, key)
                guard known.contains(key) else { return UnknownKey(path: child, known: known.sorted()) }
                if let found = firstUnknown(member, path: child, recorder: recorder) { return found }
            }
            return nil
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                if let found = firstUnknown(element, path: "\(path)[\(i)]", recorder: recorder) { return found }
            }
            return nil
        default:
            return nil
        }
    }
}

/// A parsed JSON value (numbers kept in the widest form that holds them exactly).
enum JSONTree: Decodable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONTree])
    case object([String: JSONTree])

    static func childPath(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    init(from decoder: any Decoder) throws {
        if let c = try? decoder.container(keyedBy: AnyJSONKey.self) {
            var members: [String: JSONTree] = [:]
            for key in c.allKeys { members[key.stringValue] = try c.decode(JSONTree.self, forKey: key) }
            self = .object(members)
        } else if var c = try? decoder.unkeyedContainer() {
            var elements: [JSONTree] = []
            while !c.isAtEnd { elements.append(try c.decode(JSONTree.self)) }
            self = .array(elements)
        } else {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() { self = .null }
            else if let b = try? c.decode(Bool.self) { self = .bool(b) }
            else if let i = try? c.decode(Int64.self) { self = .int(i) }
            else if let u = try? c.decode(UInt64.self) { self = .uint(u) }
            else if let d = try? c.decode(Double.self) { self = .double(d) }
            else { self = .string(try c.decode(String.self)) }
        }
    }
}

struct AnyJSONKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; intValue = nil }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

/// Keys each object (by JSON path) was asked about.
final class KeyRecorder {
    var known: [String: Set<String>] = [:]
}

/// A `Decoder` over a `JSONTree` that records which keys the decoded type reads. `value == nil` is a placeholder
/// (a missing required key, or a value of the wrong type): it decodes as an empty object / empty array / zero / a
/// zero UUID string and records nothing, so the walk can go on. Only keys matter here; values are never used.
struct KeyRecordingDecoder: Decoder {
    let value: JSONTree?
    let path: String
    let codingPath: [any CodingKey]
    let recorder: KeyRecorder
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Placeholder text for a String: also a valid UUID, so `UUID(from:)` accepts it.
    static let placeholderString = "00000000-0000-0000-0000-000000000000"
    /// Deeper than any request model; stops a (hypothetical) recursive model from recursing on placeholders forever.
    static let maximumDepth = 64

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try checkDepth()
        if case .object(let members)? = value {
            if recorder.known[path] == nil { recorder.known[path] = [] }
            return KeyedDecodingContainer(KeyedContainer<Key>(members: members, placeholder: false, decoder: self))
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: [:], placeholder: true, decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try checkDepth()
        if case .array(let elements)? = value { return UnkeyedContainer(elements: elements, decoder: self) }
        return UnkeyedContainer(elements: [], decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleContainer(decoder: self) }

    func child(_ value: JSONTree?, path: String, key: any CodingKey) -> KeyRecordingDecoder {
        KeyRecordingDecoder(value: value, path: path, codingPath: codingPath + [key], recorder: recorder)
    }

    private func checkDepth() throws {
        if codingPath.count > Self.maximumDepth {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "nested too deeply"))
        }
    }

    /// A leaf value as a primitive type, or the type's placeholder when the value is missing or of another type.
    /// Conditional casts only: nothing here can trap.
    func primitive<T>(_ type: T.Type) throws -> T {
        var result: Any?
        switch value {
        case .bool(let b)?: result = b
        case .string(let s)?: result = s
        case .int(let i)?:
            if let t = type as? any BinaryFloatingPoint.Type { result = t.init(i) }
            else if let t = type as? any FixedWidthInteger.Type { result = t.init(exactly: i) }
        case .uint(let u)?:
            if let t = type as? any BinaryFloatingPoint.Type { result = t.init(u) }
            else if let t = type as? any FixedWidthInteger.Type { result = t.init(exactly: u) }
        case .double(let d)?:
            if let t = type as? any BinaryFloatingPoint.Type { result = t.init(d) }
            else if let t = type as? any FixedWidthInteger.Type { result = t.init(exactly: d) }
        default: break
        }
        if let typed = result as? T { return typed }
        let placeholder: Any? = switch type {
        case is Bool.Type: false
        case is String.Type: Self.placeholderString
        default:
            if let t = type as? any BinaryFloatingPoint.Type { t.init(0) }
            else if let t = type as? any FixedWidthInteger.Type { t.init(0) }
            else { nil }
        }
        guard let typed = placeholder as? T else {
            throw DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "not a primitive type"))
        }
        return typed
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is Bool.Type, is String.Type, is Double.Type, is Float.Type, is Int.Type, is Int8.Type, is Int16.Type,
             is Int32.Type, is Int64.Type, is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type:
            return try primitive(type)
        default:
            try checkDepth()
            return try T(from: self)
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONTree]
    let placeholder: Bool
    let decoder: KeyRecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        let keys = members.keys.compactMap { Key(stringValue: $0) }
        for key in keys { record(key) }
        return keys
    }

    private func record(_ key: Key) {
        if !placeholder { decoder.recorder.known[decoder.path, default: []].insert(key.stringValue) }
    }

    private func child(_ key: Key) -> KeyRecordingDecoder {
        record(key)
        let childPath = placeholder ? decoder.path : JSONTree.childPath(decoder.path, key.stringValue)
        return decoder.child(placeholder ? nil : members[key.stringValue], path: childPath, key: key)
    }

    func contains(_ key: Key) -> Bool {
        record(key)
        return members[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        record(key)
        return members[key.stringValue].map { $0 == .null } ?? true
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decode(type) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).primitive(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).primitive(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).primitive(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try child(key).primitive(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).primitive(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).primitive(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).primitive(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).primitive(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).primitive(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).primitive(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).primitive(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).primitive(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).primitive(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).primitive(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
    func superDecoder() throws -> any Decoder {
        guard let key = Key(stringValue: "super") else {
            throw DecodingError.keyNotFound(AnyJSONKey(stringValue: "super"), .init(codingPath: codingPath, debugDescription: "no super key"))
        }
        return child(key)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder { child(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONTree]
    let decoder: KeyRecordingDecoder
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next() throws -> KeyRecordingDecoder {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "array exhausted"))
        }
        defer { currentIndex += 1 }
        return decoder.child(elements[currentIndex], path: "\(decoder.path)[\(currentIndex)]",
                             key: AnyJSONKey(intValue: currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < elements.count, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().primitive(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next().primitive(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().primitive(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next().primitive(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().primitive(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().primitive(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().primitive(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().primitive(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().primitive(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next().primitive(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().primitive(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().primitive(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().primitive(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().primitive(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let decoder: KeyRecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        if case .null? = decoder.value { return true }
        return false
    }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(type) }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.primitive(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.primitive(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.primitive(type) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.primitive(type) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.primitive(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.primitive(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.primitive(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.primitive(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.primitive(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.primitive(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.primitive(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.primitive(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.primitive(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.primitive(type) }
}
