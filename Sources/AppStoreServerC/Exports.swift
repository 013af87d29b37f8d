import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

// The C ABI. Each function here is declared in include/appstoreserver.h; the header check test proves they match.

// MARK: version, names, memory

private let versionString = StaticCStrings([(0, AppStoreServerVersion.string)], fallback: "")

@c(appstore_version)
public func appstoreVersion() -> UnsafePointer<CChar> { versionString.get(0) }

private let statusNames = StaticCStrings(AppStoreStatus.allCases.map { ($0.rawValue, $0.name) }, fallback: "UNKNOWN")

@c(appstore_status_name)
public func appstoreStatusName(_ status: Int32) -> UnsafePointer<CChar> { statusNames.get(status) }

private let reasonNames = StaticCStrings(FailureReason.allCases.map { ($0.rawValue, $0.name) }, fallback: "unknown")

@c(appstore_reason_name)
public func appstoreReasonName(_ reason: Int32) -> UnsafePointer<CChar> { reasonNames.get(reason) }

@c(appstore_string_free)
public func appstoreStringFree(_ s: UnsafeMutablePointer<CChar>?) { freeCString(s) }

// MARK: errors

private func errorBox(_ err: OpaquePointer?) -> ErrorBox? { try? handle(err, ErrorBox.self, "err") }

/// An optional C string of the error, or "" (static) when absent.
private func string(_ p: UnsafeMutablePointer<CChar>?) -> UnsafePointer<CChar> {
    p.map { UnsafePointer($0) } ?? StaticCStrings.emptyString
}

@c(appstore_error_status)
public func appstoreErrorStatus(_ err: OpaquePointer?) -> Int32 { errorBox(err)?.status ?? 0 }

@c(appstore_error_reason)
public func appstoreErrorReason(_ err: OpaquePointer?) -> Int32 { errorBox(err)?.reason ?? 0 }

@c(appstore_error_message)
public func appstoreErrorMessage(_ err: OpaquePointer?) -> UnsafePointer<CChar> { string(errorBox(err)?.message) }

@c(appstore_error_http_status)
public func appstoreErrorHttpStatus(_ err: OpaquePointer?) -> Int32 { errorBox(err)?.httpStatus ?? 0 }

@c(appstore_error_api_error_code)
public func appstoreErrorApiErrorCode(_ err: OpaquePointer?) -> Int64 { errorBox(err)?.apiErrorCode ?? 0 }

@c(appstore_error_api_error_name)
public func appstoreErrorApiErrorName(_ err: OpaquePointer?) -> UnsafePointer<CChar> { string(errorBox(err)?.apiErrorName) }

@c(appstore_error_api_error_message)
public func appstoreErrorApiErrorMessage(_ err: OpaquePointer?) -> UnsafePointer<CChar> { string(errorBox(err)?.apiErrorMessage) }

@c(appstore_error_retry_after)
public func appstoreErrorRetryAfter(_ err: OpaquePointer?) -> Int64 { errorBox(err)?.retryAfter ?? -1 }

@c(appstore_error_retry_at_ms)
public func appstoreErrorRetryAtMs(_ err: OpaquePointer?) -> Int64 { errorBox(err)?.retryAtMilliseconds ?? -1 }

@c(appstore_error_header_count)
public func appstoreErrorHeaderCount(_ err: OpaquePointer?) -> UInt { UInt(errorBox(err)?.headerNames.count ?? 0) }

@c(appstore_error_header_name)
public func appstoreErrorHeaderName(_ err: OpaquePointer?, _ index: UInt) -> UnsafePointer<CChar>? {
    guard let box = errorBox(err), index < UInt(box.headerNames.count) else { return nil }
    return box.headerNames[Int(index)].map { UnsafePointer($0) }
}

@c(appstore_error_header_value)
public func appstoreErrorHeaderValue(_ err: OpaquePointer?, _ index: UInt) -> UnsafePointer<CChar>? {
    guard let box = errorBox(err), index < UInt(box.headerValues.count) else { return nil }
    return box.headerValues[Int(index)].map { UnsafePointer($0) }
}

@c(appstore_error_free)
public func appstoreErrorFree(_ err: OpaquePointer?) { release(err, ErrorBox.self) }
