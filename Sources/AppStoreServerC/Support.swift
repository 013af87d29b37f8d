import AppStoreServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Plumbing shared by the @c exports: error boxes, guarded entry, handle and string conversion.
// Nothing here may trap on caller input: every conversion is checked and reported as INVALID_ARGUMENT.

public typealias ErrorOut = UnsafeMutablePointer<OpaquePointer?>
public typealias StringOut = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

enum CStatus {
    static let ok: Int32 = 0
    static let invalidArgument: Int32 = 1
    static let configuration: Int32 = 2
    static let invalidKey: Int32 = 10
    static let apiError: Int32 = 20
    static let transportError: Int32 = 21
    static let invalidResponse: Int32 = 22
    static let internalError: Int32 = 99
}

/// What an App Store Server API answer said, for the appstore_error_* accessors.
struct APIErrorDetail {
    var httpStatus: Int32 = 0
    var code: Int64 = 0
    var codeName: String = ""
    var errorMessage: String = ""
    var retryAfter: Int64 = -1
}

/// A failure on its way to C: status, reason and message (and, for API calls, what Apple answered).
struct CFailure: Error {
    let status: Int32
    let reason: FailureReason
    let message: String
    var api: APIErrorDetail? = nil

    init(status: Int32, reason: FailureReason, message: String, api: APIErrorDetail? = nil) {
        self.status = status
        self.reason = reason
        self.message = message
        self.api = api
    }
    init(_ f: VerificationFailure) {
        self.init(status: f.status.rawValue, reason: f.reason, message: f.message)
    }
    init(_ e: ConfigurationError) {
        self.init(status: e.reason == .internal ? CStatus.internalError : CStatus.configuration, reason: e.reason, message: e.message)
    }
    static func argument(_ message: String) -> CFailure {
        CFailure(status: CStatus.invalidArgument, reason: .invalidArgument, message: message)
    }
    static func outOfMemory() -> CFailure {
        CFailure(status: CStatus.internalError, reason: .internal, message: "out of memory")
    }
}

/// The object behind `appstore_error *`.
final class ErrorBox {
    let status: Int32
    let reason: Int32
    let message: UnsafeMutablePointer<CChar>?
    let httpStatus: Int32
    let apiErrorCode: Int64
    let apiErrorName: UnsafeMutablePointer<CChar>?
    let apiErrorMessage: UnsafeMutablePointer<CChar>?
    let retryAfter: Int64
    init(_ f: CFailure) {
        status = f.status
        reason = f.reason.rawValue
        message = strdup(f.message)
        let api = f.api ?? APIErrorDetail()
        httpStatus = api.httpStatus
        apiErrorCode = api.code
        apiErrorName = api.codeName.isEmpty ? nil : strdup(api.codeName)
        apiErrorMessage = api.errorMessage.isEmpty ? nil : strdup(api.errorMessage)
        retryAfter = api.retryAfter
    }
    deinit {
        free(message)
        free(apiErrorName)
        free(apiErrorMessage)
    }
}

/// Runs an export body; maps a thrown CFailure to its status and, if asked, an appstore_error.
func guarded(_ errOut: ErrorOut?, _ body: () throws(CFailure) -> Void) -> Int32 {
    do {
        try body()
        return CStatus.ok
    } catch {
        errOut?.pointee = OpaquePointer(Unmanaged.passRetained(ErrorBox(error)).toOpaque())
        return error.status
    }
}

func handle<T: AnyObject>(_ p: OpaquePointer?, _ type: T.Type, _ name: String) throws(CFailure) -> T {
    guard let p else { throw .argument("\(name) is NULL") }
    return Unmanaged<T>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue()
}

func retained<T: AnyObject>(_ object: T) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(object).toOpaque())
}

func release<T: AnyObject>(_ p: OpaquePointer?, _ type: T.Type) {
    guard let p else { return }
    Unmanaged<T>.fromOpaque(UnsafeRawPointer(p)).release()
}

/// A NUL-terminated UTF-8 argument as a String; NULL or invalid UTF-8 is an argument error.
func utf8String(_ p: UnsafePointer<CChar>?, _ name: String) throws(CFailure) -> String {
    guard let p else { throw .argument("\(name) is NULL") }
    guard let s = String(validatingCString: p) else { throw .argument("\(name) is not valid UTF-8") }
    return s
}

/// A (pointer, length) argument as a borrowed byte view. NULL is allowed only with length 0.
func bytes(_ p: UnsafeRawPointer?, _ len: UInt, _ name: String) throws(CFailure) -> UnsafeRawBufferPointer {
    guard len <= UInt(Int.max) else { throw .argument("\(name)_len is too large") }
    guard let p else {
        if len == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        throw .argument("\(name) is NULL but \(name)_len is \(len)")
    }
    return UnsafeRawBufferPointer(start: p, count: Int(len))
}

/// Copies bytes into a new malloc'd NUL-terminated C string, owned by the caller (appstore_string_free).
/// The bytes are copied as they are: an embedded NUL would make C read a shorter string, so callers pass only text
/// that cannot hold one (JSON, which escapes it; base64; names) or reject it first (receipt ids).
func mallocCString(_ content: [UInt8]) throws(CFailure) -> UnsafeMutablePointer<CChar> {
    guard let out = malloc(content.count + 1)?.assumingMemoryBound(to: CChar.self) else { throw .outOfMemory() }
    content.withUnsafeBytes { src in
        if let base = src.baseAddress { memcpy(out, base, src.count) }
    }
    out[content.count] = 0
    return out
}

/// Static C strings for names: allocated once, never freed (process lifetime, like string literals).
final class StaticCStrings: Sendable {
    private let table: [Int32: UnsafePointerBox]
    private let fallback: UnsafePointerBox
    init(_ entries: [(Int32, String)], fallback: String) {
        var t: [Int32: UnsafePointerBox] = [:]
        for (k, v) in entries { t[k] = UnsafePointerBox(v) }
        table = t
        self.fallback = UnsafePointerBox(fallback)
    }
    func get(_ key: Int32) -> UnsafePointer<CChar> { (table[key] ?? fallback).pointer }

    final class UnsafePointerBox: @unchecked Sendable {
        let pointer: UnsafePointer<CChar>
        init(_ s: String) {
            // strdup only fails on exhaustion at first use; an empty literal keeps the result non-NULL.
            pointer = UnsafePointer(strdup(s)) ?? UnsafePointer(emptyCString)
        }
    }
}

nonisolated(unsafe) private let emptyCString: UnsafeMutablePointer<CChar> = {
    let p = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
    p.initialize(to: 0)
    return p
}()
