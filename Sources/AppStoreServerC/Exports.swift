import AppStoreServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The C ABI. Each function here is declared in include/appstoreserver.h; the header check test proves they match.

// MARK: version, names, memory

private let versionString = StaticCStrings([(0, AppStoreServerVersion.string)], fallback: "")

@c(appstore_version)
public func appstoreVersion() -> UnsafePointer<CChar> { versionString.get(0) }

private let statusNames = StaticCStrings(
    [(CStatus.ok, "OK"), (CStatus.invalidArgument, "INVALID_ARGUMENT"), (CStatus.configuration, "CONFIGURATION_ERROR"),
     (CStatus.invalidKey, "INVALID_KEY"), (CStatus.notFound, "NOT_FOUND"), (CStatus.invalidReceipt, "INVALID_RECEIPT"),
     (CStatus.apiError, "API_ERROR"), (CStatus.transportError, "TRANSPORT_ERROR"),
     (CStatus.invalidResponse, "INVALID_RESPONSE"),
     (CStatus.internalError, "INTERNAL_ERROR")]
        + VerificationError.allCases.map { ($0.rawValue, String(describing: $0)) },
    fallback: "UNKNOWN")

@c(appstore_status_name)
public func appstoreStatusName(_ status: Int32) -> UnsafePointer<CChar> { statusNames.get(status) }

private let reasonNames = StaticCStrings(FailureReason.allCases.map { ($0.rawValue, $0.name) }, fallback: "unknown")

@c(appstore_reason_name)
public func appstoreReasonName(_ reason: Int32) -> UnsafePointer<CChar> { reasonNames.get(reason) }

@c(appstore_string_free)
public func appstoreStringFree(_ s: UnsafeMutablePointer<CChar>?) { free(s) }

// MARK: errors

@c(appstore_error_status)
public func appstoreErrorStatus(_ err: OpaquePointer?) -> Int32 {
    (try? handle(err, ErrorBox.self, "err"))?.status ?? 0
}

@c(appstore_error_reason)
public func appstoreErrorReason(_ err: OpaquePointer?) -> Int32 {
    (try? handle(err, ErrorBox.self, "err"))?.reason ?? 0
}

@c(appstore_error_message)
public func appstoreErrorMessage(_ err: OpaquePointer?) -> UnsafePointer<CChar> {
    if let box = try? handle(err, ErrorBox.self, "err"), let m = box.message { return UnsafePointer(m) }
    return versionString.get(-1)  // the "" fallback
}

/// The error's optional C string field, or "" (static) when absent.
private func optionalCString(_ err: OpaquePointer?, _ field: (ErrorBox) -> UnsafeMutablePointer<CChar>?) -> UnsafePointer<CChar> {
    if let box = try? handle(err, ErrorBox.self, "err"), let p = field(box) { return UnsafePointer(p) }
    return versionString.get(-1)
}

@c(appstore_error_http_status)
public func appstoreErrorHttpStatus(_ err: OpaquePointer?) -> Int32 {
    (try? handle(err, ErrorBox.self, "err"))?.httpStatus ?? 0
}

@c(appstore_error_api_error_code)
public func appstoreErrorApiErrorCode(_ err: OpaquePointer?) -> Int64 {
    (try? handle(err, ErrorBox.self, "err"))?.apiErrorCode ?? 0
}

@c(appstore_error_api_error_name)
public func appstoreErrorApiErrorName(_ err: OpaquePointer?) -> UnsafePointer<CChar> { optionalCString(err) { $0.apiErrorName } }

@c(appstore_error_api_error_message)
public func appstoreErrorApiErrorMessage(_ err: OpaquePointer?) -> UnsafePointer<CChar> { optionalCString(err) { $0.apiErrorMessage } }

@c(appstore_error_retry_after)
public func appstoreErrorRetryAfter(_ err: OpaquePointer?) -> Int64 {
    (try? handle(err, ErrorBox.self, "err"))?.retryAfter ?? -1
}

@c(appstore_error_free)
public func appstoreErrorFree(_ err: OpaquePointer?) { release(err, ErrorBox.self) }
