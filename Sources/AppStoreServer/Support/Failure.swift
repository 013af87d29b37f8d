/// Every error the library reports, whatever the layer: a status (`appstore_status` at the C ABI), a precise reason
/// and a message naming what failed and why. The C layer maps any of them to an `appstore_error` the same way, so no
/// status or reason is ever guessed from message text.
public protocol AppStoreServerFailure: Error, CustomStringConvertible, Sendable {
    /// The status: Apple's vocabulary and the library's own (`appstore_status` at the C ABI).
    var statusCode: AppStoreStatus { get }
    /// Why it failed, finer than the status (`appstore_reason` at the C ABI).
    var reason: FailureReason { get }
    /// What failed and why, in words, for logs and people.
    var message: String { get }
}

extension AppStoreServerFailure {
    public var description: String { "\(statusCode.name) (\(reason.name)): \(message)" }
}
