// VerificationError, AppStoreStatus and FailureReason are generated from spec/errors.json
// (Support/Generated/Errors.swift).

/// A rejected signed payload: Apple's status, our precise reason, and a message naming what failed and why.
public struct VerificationFailure: AppStoreServerFailure, Hashable {
    /// Apple's status, as Apple's libraries report it.
    public let status: VerificationError
    public let reason: FailureReason
    public let message: String

    /// A failure with its status, reason and message.
    public init(status: VerificationError, reason: FailureReason, message: String) {
        self.status = status
        self.reason = reason
        self.message = message
    }

    init(_ reason: FailureReason, _ message: String) {
        self.init(status: reason.status, reason: reason, message: message)
    }

    /// The same failure, with the location of a nested signed value prepended to the message.
    func nested(in field: String) -> VerificationFailure {
        VerificationFailure(status: status, reason: reason, message: "\(field): \(message)")
    }

    public var description: String { "\(status) (\(reason.name)): \(message)" }

    /// Apple's status, except that a failure inside the library is INTERNAL_ERROR.
    public var statusCode: AppStoreStatus { reason == .internal ? .internalError : AppStoreStatus(status) }
}

/// A verifier that cannot be built as configured.
public struct ConfigurationError: AppStoreServerFailure, Hashable {
    public let reason: FailureReason
    public let message: String
    /// A configuration error with its reason and message.
    public init(_ reason: FailureReason, _ message: String) {
        self.reason = reason
        self.message = message
    }
    public var description: String { "configuration error (\(reason.name)): \(message)" }
    public var statusCode: AppStoreStatus { reason == .internal ? .internalError : .configurationError }
}

/// The outcome of a verify-and-decode call, shaped like Apple's `VerificationResult`.
public enum VerificationResult<T: Sendable>: Sendable {
    /// The payload verified; its decoded value.
    case valid(T)
    /// The payload did not verify; why.
    case invalid(VerificationFailure)

    /// The decoded value, or the failure thrown.
    public func get() throws(VerificationFailure) -> T {
        switch self {
        case .valid(let v): return v
        case .invalid(let f): throw f
        }
    }

    init(_ result: Result<T, VerificationFailure>) {
        switch result {
        case .success(let v): self = .valid(v)
        case .failure(let f): self = .invalid(f)
        }
    }
}

extension VerificationResult: Equatable where T: Equatable {}
extension VerificationResult: Hashable where T: Hashable {}
