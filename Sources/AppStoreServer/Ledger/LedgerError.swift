/// A ledger that cannot be opened or written: a bad URL, a database this version cannot use, or a storage failure
/// (SQLite's message and code in `message`). Refused input is a `VerificationFailure` instead, with the verifier's
/// reason.
public struct LedgerError: AppStoreServerFailure, Hashable {
    public let statusCode: AppStoreStatus
    public let reason: FailureReason
    public let message: String

    public init(statusCode: AppStoreStatus, reason: FailureReason, message: String) {
        self.statusCode = statusCode
        self.reason = reason
        self.message = message
    }

    /// The caller asked for something this ledger cannot do (bad URL, an event verified for another app).
    static func argument(_ message: String) -> LedgerError {
        LedgerError(statusCode: .invalidArgument, reason: .invalidArgument, message: message)
    }
    /// The database cannot be used as it is (a newer schema, not a ledger).
    static func configuration(_ message: String) -> LedgerError {
        LedgerError(statusCode: .configurationError, reason: .invalidArgument, message: message)
    }
    /// The database belongs to another app or environment than the verifier's (or is a 0.3.0 ledger of several).
    static func identityMismatch(_ message: String) -> LedgerError {
        LedgerError(statusCode: .configurationError, reason: .ledgerIdentityMismatch, message: message)
    }
    /// The database failed (I/O error, disk full, corrupt file, a server that cannot be reached): `storageError` /
    /// `storageFailed`, apart from the library's own faults (`internalError`), so a caller can retry. Nothing was
    /// acknowledged.
    static func storage(_ message: String) -> LedgerError {
        LedgerError(statusCode: .storageError, reason: .storageFailed, message: message)
    }
}
