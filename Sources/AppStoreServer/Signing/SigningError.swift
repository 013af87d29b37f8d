/// A signature or token that could not be created: bad arguments, an unusable key (Apple-style initializers that take
/// the PEM text), an invalid request model, or OpenSSL failure.
public struct SigningError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case invalidArgument
        /// The PEM given to an Apple-style `String` initializer is not a usable key; the message is the key error's.
        case invalidKey(SigningKeyError)
        case invalidRequest(ModelValidationError)
        case signingFailed
    }
    public let reason: Reason
    public let message: String
    init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
    static func argument(_ message: String) -> SigningError { SigningError(.invalidArgument, message) }
    public var description: String { message }
}
