/// A request model that breaks one of Apple's documented limits. Thrown by the generated `validate()` methods.
public struct ModelValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which limit the field breaks.
    public enum Kind: Hashable, Sendable {
        /// The string has more than `maxLength` characters (Swift `Character`s, as Apple counts).
        case stringTooLong(maxLength: Int)
        /// The number is outside `min...max`.
        case outOfRange(min: Int64, max: Int64)
        /// The list must have at least one element.
        case emptyList
        /// The list has more than `maxCount` elements.
        case tooManyElements(maxCount: Int)
    }

    /// Dotted path of the offending field, e.g. `items[0].SKU` (JSON key names).
    public let field: String
    /// Which limit the field breaks.
    public let kind: Kind

    /// An error for `field` (its JSON-key path) breaking the `kind` limit.
    public init(field: String, kind: Kind) {
        self.field = field
        self.kind = kind
    }

    /// The same error with a parent path prepended (used when validating nested models).
    public func nested(in parent: String) -> ModelValidationError {
        ModelValidationError(field: field.hasPrefix("[") ? parent + field : parent + "." + field, kind: kind)
    }

    public var description: String {
        switch kind {
        case .stringTooLong(let max): "\(field) is longer than \(max) characters"
        case .outOfRange(let min, let max): "\(field) must be between \(min) and \(max)"
        case .emptyList: "\(field) must not be empty"
        case .tooManyElements(let max): "\(field) must have at most \(max) elements"
        }
    }
}
