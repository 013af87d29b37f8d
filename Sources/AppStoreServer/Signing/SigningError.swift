/// A signature or token that could not be created: bad arguments, an unusable key (Apple-style initializers that take
/// the PEM text), an invalid request model, or OpenSSL failure.
public struct SigningError: AppStoreServerFailure, Hashable {
    /// What went wrong.
    public enum Kind: Hashable, Sendable {
        /// An argument is empty or out of range (the message names it).
        case invalidArgument
        /// The PEM given to an Apple-style `String` initializer is not a usable key; the message is the key error's.
        case invalidKey(SigningKeyError)
        /// A request model breaks one of Apple's limits.
        case invalidRequest(ModelValidationError)
        /// OpenSSL could not create the signature.
        case signingFailed
        /// An external signer (`SigningKey(signer:)`) failed or returned something that is not a signature.
        case signerFailed
    }
    /// What went wrong.
    public let kind: Kind
    public let message: String
    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    static func argument(_ message: String) -> SigningError { SigningError(.invalidArgument, message) }

    public var statusCode: AppStoreStatus {
        switch kind {
        case .invalidArgument, .invalidRequest: .invalidArgument
        case .invalidKey: .invalidKey
        case .signingFailed: .internalError
        case .signerFailed: .invalidKey
        }
    }

    public var reason: FailureReason {
        switch kind {
        case .invalidArgument: .invalidArgument
        case .invalidKey(let e): e.reason
        case .invalidRequest: .invalidRequest
        case .signingFailed: .signingFailed
        case .signerFailed: .signerFailed
        }
    }
}
