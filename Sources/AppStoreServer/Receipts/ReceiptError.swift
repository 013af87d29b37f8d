/// Why a receipt could not be read or verified: a precise reason (`FailureReason`, shared with the JWS verifier and
/// the C ABI) and a message naming what failed.
///
/// Reasons used for receipts: `receiptMalformed` (not base64, not BER, not a PKCS#7 SignedData receipt, broken
/// attribute structure, a limit exceeded), `wrongKind` (an app receipt given to the transaction-receipt call or the
/// reverse), `undecodablePayload` (a signed field of the wrong type), `signerMissing`, `untrustedChain`, `expired`,
/// `missingMarkerOID`, `badSignature`, `wrongBundle`, `internal`.
public struct ReceiptError: AppStoreServerFailure, Hashable {
    public let reason: FailureReason
    public let message: String

    /// An error with its reason and message.
    public init(_ reason: FailureReason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.name): \(message)" }

    /// The status of a receipt failure (documented in the header's Receipts section).
    public var statusCode: AppStoreStatus {
        switch reason {
        case .receiptMalformed, .wrongKind, .undecodablePayload, .inputTooLarge: .invalidReceipt
        case .noTransactionId: .notFound
        case .wrongBundle: .invalidAppIdentifier
        case .badCertificate: .invalidCertificate
        case .invalidArgument: .invalidArgument
        case .internal: .internalError
        default: .verificationFailure
        }
    }
}
