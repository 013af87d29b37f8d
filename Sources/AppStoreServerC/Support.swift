import AppStoreServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Plumbing shared by the @c exports: the one error path, handles, argument conversion, static strings.
// Nothing here may trap on caller input: every conversion is checked and reported as INVALID_ARGUMENT.

public typealias ErrorOut = UnsafeMutablePointer<OpaquePointer?>
public typealias StringOut = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

/// A mistake found at the C boundary itself (NULL, invalid UTF-8, a length out of range, out of memory). Every other
/// failure comes from the core as its own `AppStoreServerFailure`.
struct CFailure: AppStoreServerFailure {
    let statusCode: AppStoreStatus
    let reason: FailureReason
    let message: String

    static func argument(_ message: String) -> CFailure {
        CFailure(statusCode: .invalidArgument, reason: .invalidArgument, message: message)
    }
    static func outOfMemory() -> CFailure {
        CFailure(statusCode: .internalError, reason: .internal, message: "out of memory")
    }
}

/// The object behind `appstore_error *`: status, reason, message and, for App Store Server API failures, what
/// Apple answered.
final class ErrorBox {
    let status: Int32
    let reason: Int32
    let message: UnsafeMutablePointer<CChar>?
    let httpStatus: Int32
    let apiErrorCode: Int64
    let apiErrorName: UnsafeMutablePointer<CChar>?
    let apiErrorMessage: UnsafeMutablePointer<CChar>?
    let retryAfter: Int64
    let retryAtMilliseconds: Int64
    /// The API failure itself, for the retry decision (appstore_api_client_retry_delay_ms).
    let apiFailure: AppStoreServerAPIError?
    /// The answer's headers (API failures), as C strings owned by the box.
    let headerNames: [UnsafeMutablePointer<CChar>?]
    let headerValues: [UnsafeMutablePointer<CChar>?]

    init(_ f: any AppStoreServerFailure) {
        status = f.statusCode.rawValue
        reason = f.reason.rawValue
        message = strdup(f.message)
        let api = f as? AppStoreServerAPIError
        httpStatus = Int32(clamping: api?.httpStatusCode ?? 0)
        apiErrorCode = api?.rawApiError ?? 0
        apiErrorName = (api?.apiErrorName).flatMap { strdup($0) }
        apiErrorMessage = (api?.errorMessage).flatMap { $0.isEmpty ? nil : strdup($0) }
        retryAfter = api?.retryAfterSeconds ?? -1
        retryAtMilliseconds = api?.retryAfter?.atMilliseconds ?? -1
        apiFailure = api
        headerNames = (api?.headers ?? []).map { strdup($0.name) }
        headerValues = (api?.headers ?? []).map { strdup($0.value) }
    }

    deinit {
        free(message)
        free(apiErrorName)
        free(apiErrorMessage)
        for p in headerNames { free(p) }
        for p in headerValues { free(p) }
    }
}

/// Runs an export body. Any failure becomes its status and, if asked, an appstore_error: the same mapping for every
/// error type of the library (they all adopt `AppStoreServerFailure`); anything else is INTERNAL_ERROR.
func guarded(_ errOut: ErrorOut?, _ body: () throws -> Void) -> Int32 {
    // The whole call runs inside the fork guard: OpenSSL's own locks (ex_data, the provider store) are not fork-safe,
    // so fork() waits until no thread is inside the library. Host callbacks run outside it (CTransport, CSigner).
    ForkGuard.enter()
    defer { ForkGuard.leave() }
    let failure: any AppStoreServerFailure
    do {
        try body()
        return AppStoreStatus.ok.rawValue
    } catch let f as any AppStoreServerFailure {
        failure = f
    } catch {
        failure = CFailure(statusCode: .internalError, reason: .internal, message: "unexpected error: \(error)")
    }
    if let errOut {
        errOut.pointee = OpaquePointer(Unmanaged.passRetained(ErrorBox(failure)).toOpaque())
        countObjectHandedOut()
    }
    return failure.statusCode.rawValue
}

// MARK: handles

func handle<T: AnyObject>(_ p: OpaquePointer?, _ type: T.Type, _ name: String) throws(CFailure) -> T {
    guard let p else { throw .argument("\(name) is NULL") }
    return Unmanaged<T>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue()
}

/// A new handle for the caller (released by the matching _free).
func retained<T: AnyObject>(_ object: T) -> OpaquePointer {
    countObjectHandedOut()
    return OpaquePointer(Unmanaged.passRetained(object).toOpaque())
}

func release<T: AnyObject>(_ p: OpaquePointer?, _ type: T.Type) {
    guard let p else { return }
    ForkGuard.enter()  // freeing OpenSSL objects takes OpenSSL's locks (see guarded)
    defer { ForkGuard.leave() }
    Unmanaged<T>.fromOpaque(UnsafeRawPointer(p)).release()
    countObjectFreed()
}

/// Writes a new handle to a required out-parameter.
func output<T: AnyObject>(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ name: String, _ make: () throws -> T) throws {
    guard let out else { throw CFailure.argument("\(name) is NULL") }
    out.pointee = retained(try make())
}

// MARK: arguments

/// A NUL-terminated UTF-8 argument as a String; NULL or invalid UTF-8 is an argument error.
func utf8String(_ p: UnsafePointer<CChar>?, _ name: String) throws(CFailure) -> String {
    guard let p else { throw .argument("\(name) is NULL") }
    guard let s = String(validatingCString: p) else { throw .argument("\(name) is not valid UTF-8") }
    return s
}

func optionalUTF8String(_ p: UnsafePointer<CChar>?, _ name: String) throws(CFailure) -> String? {
    guard let p else { return nil }
    return try utf8String(p, name)
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

/// APPSTORE_ENVIRONMENT_* (1-4).
func cEnvironment(_ value: Int32) throws(CFailure) -> AppStoreEnvironment {
    switch value {
    case 1: .sandbox
    case 2: .production
    case 3: .xcode
    case 4: .localTesting
    default: throw .argument("environment \(value) is not one of APPSTORE_ENVIRONMENT_* (1-4)")
    }
}

/// APPSTORE_ENVIRONMENT_* of an environment.
func cEnvironmentCode(_ environment: AppStoreEnvironment) -> Int32 {
    switch environment {
    case .sandbox: 1
    case .production: 2
    case .xcode: 3
    default: 4
    }
}

// MARK: results

/// Copies bytes into a new malloc'd NUL-terminated C string, owned by the caller (appstore_string_free).
/// The bytes are copied as they are: an embedded NUL would make C read a shorter string, so callers pass only text
/// that cannot hold one (JSON, which escapes it; base64; names) or reject it first (receipt ids).
func mallocCString(_ content: [UInt8]) throws(CFailure) -> UnsafeMutablePointer<CChar> {
    guard let out = malloc(content.count + 1)?.assumingMemoryBound(to: CChar.self) else { throw .outOfMemory() }
    content.withUnsafeBytes { src in
        if let base = src.baseAddress { memcpy(out, base, src.count) }
    }
    out[content.count] = 0
    countObjectHandedOut()
    return out
}

/// Frees a string of `mallocCString` (appstore_string_free, and the exports' own clean-up on a later failure).
func freeCString(_ s: UnsafeMutablePointer<CChar>?) {
    guard let s else { return }
    free(s)
    countObjectFreed()
}

/// Writes a result string to an optional out-parameter (nothing is allocated when the caller passed NULL).
func outputString(_ out: StringOut?, _ content: [UInt8]) throws(CFailure) {
    guard let out else { return }
    out.pointee = try mallocCString(content)
}

/// Writes a result string to a required out-parameter, checked before any work by `requireOut`.
func requireOut(_ out: StringOut?, _ name: String) throws(CFailure) -> StringOut {
    guard let out else { throw .argument("\(name) is NULL") }
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

    /// The static "" every getter returns for a missing value or a NULL handle.
    static let empty = StaticCStrings([], fallback: "")
    static var emptyString: UnsafePointer<CChar> { empty.get(0) }

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
