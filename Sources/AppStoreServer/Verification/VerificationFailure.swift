/// Apple's verification status vocabulary. Raw values are the C ABI status codes (`APPSTORE_*` in
/// appstoreserver.h), so they are frozen.
public enum VerificationError: Int32, Hashable, Sendable, CaseIterable {
    case VERIFICATION_FAILURE = 3
    case RETRYABLE_VERIFICATION_FAILURE = 4
    case INVALID_APP_IDENTIFIER = 5
    case INVALID_ENVIRONMENT = 6
    case INVALID_CHAIN_LENGTH = 7
    case INVALID_CERTIFICATE = 8
    case INVALID_JWT_FORMAT = 9
}

/// Why something failed, finer than Apple's statuses. Raw values are the C ABI `APPSTORE_REASON_*` codes.
public enum FailureReason: Int32, Hashable, Sendable, CaseIterable {
    case none = 0
    case malformed = 1
    case unsupportedAlgorithm = 2
    case missingX5c = 3
    case chainLength = 4
    case badCertificate = 5
    case noTrustAnchor = 6
    case untrustedChain = 7
    case expired = 8
    case missingMarkerOID = 9
    case badSignature = 10
    case undecodablePayload = 11
    case wrongBundle = 12
    case wrongAppAppleId = 13
    case wrongEnvironment = 14
    case wrongKind = 15
    case onlineChecksUnavailable = 16
    case invalidArgument = 17
    case `internal` = 18
    case keyNotPEM = 19
    case keyEncrypted = 20
    case keyMalformed = 21
    case keyNotEC = 22
    case keyWrongCurve = 23
    case invalidRequest = 24
    case signingFailed = 25
    // Receipts (40-59).
    case receiptMalformed = 40
    case noTransactionId = 41
    case signerMissing = 42
    // App Store Server API (60-79)
    case unsupportedEnvironment = 60
    case unknownEndpoint = 61
    case invalidParameters = 62
    case apiError = 63
    case httpError = 64
    case rateLimited = 65
    case undecodableResponse = 66
    case transportTimeout = 67
    case transportUnreachable = 68
    case transportFailed = 69
    case noTransport = 70
    // Online checks (OCSP), 80-99. Revocation and bad answers are VERIFICATION_FAILURE; a responder that could not
    // give an answer (unreachable, timeout, HTTP error, "try later") is RETRYABLE_VERIFICATION_FAILURE.
    case revoked = 80
    case ocspUnknown = 81
    case ocspBadSignature = 82
    case ocspStale = 83
    case ocspMalformed = 84
    case ocspCertIdMismatch = 85
    case ocspNonceMismatch = 86
    case ocspRefused = 87
    case ocspNoResponder = 88
    case ocspUnreachable = 89
    case ocspTimeout = 90
    case ocspHTTPError = 91
    case ocspTryLater = 92

    /// Stable snake_case name, used in messages, JSON and the C ABI (`appstore_reason_name`).
    public var name: String {
        switch self {
        case .none: "none"
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported_alg"
        case .missingX5c: "missing_x5c"
        case .chainLength: "chain_length"
        case .badCertificate: "bad_certificate"
        case .noTrustAnchor: "no_trust_anchor"
        case .untrustedChain: "untrusted_chain"
        case .expired: "expired"
        case .missingMarkerOID: "missing_marker_oid"
        case .badSignature: "bad_signature"
        case .undecodablePayload: "undecodable_payload"
        case .wrongBundle: "wrong_bundle"
        case .wrongAppAppleId: "wrong_app_id"
        case .wrongEnvironment: "wrong_environment"
        case .wrongKind: "wrong_kind"
        case .onlineChecksUnavailable: "online_checks_unavailable"
        case .invalidArgument: "invalid_argument"
        case .internal: "internal"
        case .keyNotPEM: "key_not_pem"
        case .keyEncrypted: "key_encrypted"
        case .keyMalformed: "key_malformed"
        case .keyNotEC: "key_not_ec"
        case .keyWrongCurve: "key_wrong_curve"
        case .invalidRequest: "invalid_request"
        case .signingFailed: "signing_failed"
        case .receiptMalformed: "receipt_malformed"
        case .noTransactionId: "no_transaction_id"
        case .signerMissing: "signer_missing"
        case .unsupportedEnvironment: "unsupported_environment"
        case .unknownEndpoint: "unknown_endpoint"
        case .invalidParameters: "invalid_parameters"
        case .apiError: "api_error"
        case .httpError: "http_error"
        case .rateLimited: "rate_limited"
        case .undecodableResponse: "undecodable_response"
        case .transportTimeout: "transport_timeout"
        case .transportUnreachable: "transport_unreachable"
        case .transportFailed: "transport_failed"
        case .noTransport: "no_transport"
        case .revoked: "revoked"
        case .ocspUnknown: "ocsp_unknown"
        case .ocspBadSignature: "ocsp_bad_signature"
        case .ocspStale: "ocsp_stale"
        case .ocspMalformed: "ocsp_malformed"
        case .ocspCertIdMismatch: "ocsp_cert_id_mismatch"
        case .ocspNonceMismatch: "ocsp_nonce_mismatch"
        case .ocspRefused: "ocsp_refused"
        case .ocspNoResponder: "ocsp_no_responder"
        case .ocspUnreachable: "ocsp_unreachable"
        case .ocspTimeout: "ocsp_timeout"
        case .ocspHTTPError: "ocsp_http_error"
        case .ocspTryLater: "ocsp_try_later"
        }
    }

    /// The Apple status each verification reason maps to.
    var status: VerificationError {
        switch self {
        case .malformed, .undecodablePayload: .INVALID_JWT_FORMAT
        case .missingX5c, .chainLength: .INVALID_CHAIN_LENGTH
        case .badCertificate: .INVALID_CERTIFICATE
        case .wrongBundle, .wrongAppAppleId, .wrongKind: .INVALID_APP_IDENTIFIER
        case .wrongEnvironment: .INVALID_ENVIRONMENT
        case .ocspUnreachable, .ocspTimeout, .ocspHTTPError, .ocspTryLater: .RETRYABLE_VERIFICATION_FAILURE
        default: .VERIFICATION_FAILURE
        }
    }
}

/// A rejected signed payload: Apple's status, our precise reason, and a message naming what failed and why.
public struct VerificationFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public let status: VerificationError
    public let reason: FailureReason
    public let message: String

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
}

/// A verifier that cannot be built as configured.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public let reason: FailureReason
    public let message: String
    public init(_ reason: FailureReason, _ message: String) {
        self.reason = reason
        self.message = message
    }
    public var description: String { "configuration error (\(reason.name)): \(message)" }
}

/// The outcome of a verify-and-decode call, shaped like Apple's `VerificationResult`.
public enum VerificationResult<T: Sendable>: Sendable {
    case valid(T)
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
