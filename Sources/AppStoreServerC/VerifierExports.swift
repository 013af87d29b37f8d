import AppStoreServer
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: verifier options (a locked builder)

final class VerifierOptionsBox: Sendable {
    struct Values {
        var roots: [[UInt8]] = []
        var bundleId = ""
        var appAppleId: Int64?
        var environment: AppStoreEnvironment = .sandbox
        var onlineChecks = false
        var cache = ChainCacheConfiguration.default
        var transport: CTransport?
        var ocspTimeoutMilliseconds = SignedDataVerifier.defaultOCSPTimeoutMilliseconds
        var maxJWSBytes = SignedDataVerifier.defaultMaxJWSBytes
    }
    let values = Locked(Values())
}

/// The object behind `appstore_verifier *`.
final class VerifierBox: Sendable {
    let verifier: SignedDataVerifier
    init(_ verifier: SignedDataVerifier) { self.verifier = verifier }
}

@c(appstore_verifier_options_new)
public func appstoreVerifierOptionsNew(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        try output(out, "options_out") { VerifierOptionsBox() }
    }
}

@c(appstore_verifier_options_free)
public func appstoreVerifierOptionsFree(_ options: OpaquePointer?) { release(options, VerifierOptionsBox.self) }

@c(appstore_verifier_options_add_root)
public func appstoreVerifierOptionsAddRoot(_ options: OpaquePointer?, _ der: UnsafePointer<UInt8>?, _ derLen: UInt,
                                           _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        let view = try bytes(der.map(UnsafeRawPointer.init), derLen, "der")
        guard !view.isEmpty else { throw CFailure.argument("der is empty") }
        let copy = [UInt8](view)
        box.values.withLock { $0.roots.append(copy) }
    }
}

@c(appstore_verifier_options_set_bundle_id)
public func appstoreVerifierOptionsSetBundleId(_ options: OpaquePointer?, _ bundleId: UnsafePointer<CChar>?,
                                               _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        let s = try utf8String(bundleId, "bundle_id")
        box.values.withLock { $0.bundleId = s }
    }
}

@c(appstore_verifier_options_set_app_apple_id)
public func appstoreVerifierOptionsSetAppAppleId(_ options: OpaquePointer?, _ appAppleId: Int64,
                                                 _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        box.values.withLock { $0.appAppleId = appAppleId }
    }
}

@c(appstore_verifier_options_set_environment)
public func appstoreVerifierOptionsSetEnvironment(_ options: OpaquePointer?, _ environment: Int32,
                                                  _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        let env = try cEnvironment(environment)
        box.values.withLock { $0.environment = env }
    }
}

@c(appstore_verifier_options_set_online_checks)
public func appstoreVerifierOptionsSetOnlineChecks(_ options: OpaquePointer?, _ enabled: Int32,
                                                   _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        guard enabled == 0 || enabled == 1 else { throw CFailure.argument("enabled must be 0 or 1, got \(enabled)") }
        box.values.withLock { $0.onlineChecks = enabled == 1 }
    }
}

@c(appstore_verifier_options_set_chain_cache)
public func appstoreVerifierOptionsSetChainCache(_ options: OpaquePointer?, _ maxEntries: UInt32, _ ttlSeconds: Int64,
                                                 _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        guard ttlSeconds >= 0 else { throw CFailure.argument("ttl_seconds must be >= 0, got \(ttlSeconds)") }
        box.values.withLock { $0.cache = ChainCacheConfiguration(maxEntries: Int(maxEntries), timeToLive: ttlSeconds) }
    }
}

@c(appstore_verifier_options_set_transport)
public func appstoreVerifierOptionsSetTransport(_ options: OpaquePointer?, _ transport: OpaquePointer?, _ timeoutMs: UInt32,
                                                _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        // The options (and every verifier built from them) hold their own reference to the transport object.
        let t: CTransport? = transport.map { Unmanaged<CTransport>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
        let timeout = timeoutMs == 0 ? SignedDataVerifier.defaultOCSPTimeoutMilliseconds : timeoutMs
        box.values.withLock {
            $0.transport = t
            $0.ocspTimeoutMilliseconds = timeout
        }
    }
}

@c(appstore_verifier_options_set_max_jws_bytes)
public func appstoreVerifierOptionsSetMaxJwsBytes(_ options: OpaquePointer?, _ maxBytes: UInt, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        guard maxBytes > 0, maxBytes <= UInt(Int32.max) else {
            throw CFailure.argument("max_bytes must be 1 ... 2147483647, got \(maxBytes)")
        }
        box.values.withLock { $0.maxJWSBytes = Int(maxBytes) }
    }
}

// MARK: verifier

@c(appstore_verifier_new)
public func appstoreVerifierNew(_ options: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(options, VerifierOptionsBox.self, "options")
        guard let out else { throw CFailure.argument("verifier_out is NULL") }
        let v = box.values.withLock { $0 }
        let verifier = try SignedDataVerifier(rootCertificates: v.roots, bundleId: v.bundleId, appAppleId: v.appAppleId,
                                              environment: v.environment, enableOnlineChecks: v.onlineChecks,
                                              chainCache: v.cache, transport: v.transport,
                                              ocspTimeoutMilliseconds: v.ocspTimeoutMilliseconds, maxJWSBytes: v.maxJWSBytes)
        out.pointee = retained(VerifierBox(verifier))
    }
}

@c(appstore_verifier_free)
public func appstoreVerifierFree(_ verifier: OpaquePointer?) { release(verifier, VerifierBox.self) }

private func verifyExport(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                          _ jsonOut: StringOut?, _ errOut: ErrorOut?,
                          _ run: (SignedDataVerifier, UnsafeRawBufferPointer) -> Result<[UInt8], VerificationFailure>) -> Int32 {
    guarded(errOut) {
        let box = try handle(verifier, VerifierBox.self, "verifier")
        let input = try bytes(jws.map(UnsafeRawPointer.init), jwsLen, "jws")
        try outputString(jsonOut, try run(box.verifier, input).get())
    }
}

@c(appstore_verifier_verify_notification)
public func appstoreVerifierVerifyNotification(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                               _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    verifyExport(verifier, jws, jwsLen, jsonOut, errOut) { $0.verifiedPayloadJSON(.notification, $1) }
}

@c(appstore_verifier_notification_leaving_identity)
public func appstoreVerifierNotificationLeavingIdentity(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?,
                                                              _ jwsLen: UInt, _ jsonOut: StringOut?,
                                                              _ identityJSONOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(verifier, VerifierBox.self, "verifier")
        let identityOut = try requireOut(identityJSONOut, "identity_json_out")
        let input = try bytes(jws.map(UnsafeRawPointer.init), jwsLen, "jws")
        let (json, identity) = try box.verifier.verifiedNotificationJSONLeavingIdentity(input).get()
        let id = try mallocCString(identity?.json ?? Array(#"{"source":"none"}"#.utf8))
        do throws(CFailure) { try outputString(jsonOut, json) } catch { freeCString(id); throw error }
        identityOut.pointee = id
    }
}

@c(appstore_verifier_check_notification_identity)
public func appstoreVerifierCheckNotificationIdentity(_ verifier: OpaquePointer?, _ bundleId: UnsafePointer<CChar>?,
                                                      _ appAppleId: Int64, _ environment: UnsafePointer<CChar>?,
                                                      _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(verifier, VerifierBox.self, "verifier")
        let bundle = try optionalUTF8String(bundleId, "bundle_id")
        let env = try optionalUTF8String(environment, "environment")
        guard appAppleId >= 0 else { throw CFailure.argument("app_apple_id must be >= 0 (0 = none), got \(appAppleId)") }
        let id = NotificationIdentity(bundleId: bundle, appAppleId: appAppleId == 0 ? nil : appAppleId,
                                      environment: env.map { AppStoreEnvironment(rawValue: $0) }, source: "caller's")
        if let failure = box.verifier.notificationIdentityFailure(id) { throw failure }
    }
}

@c(appstore_verifier_verify_transaction)
public func appstoreVerifierVerifyTransaction(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                              _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    verifyExport(verifier, jws, jwsLen, jsonOut, errOut) { $0.verifiedPayloadJSON(.transaction, $1) }
}

@c(appstore_verifier_verify_renewal_info)
public func appstoreVerifierVerifyRenewalInfo(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                              _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    verifyExport(verifier, jws, jwsLen, jsonOut, errOut) { $0.verifiedPayloadJSON(.renewalInfo, $1) }
}

@c(appstore_verifier_verify_app_transaction)
public func appstoreVerifierVerifyAppTransaction(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                                 _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    verifyExport(verifier, jws, jwsLen, jsonOut, errOut) { $0.verifiedPayloadJSON(.appTransaction, $1) }
}

@c(appstore_verifier_verify_realtime_request)
public func appstoreVerifierVerifyRealtimeRequest(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                                  _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    verifyExport(verifier, jws, jwsLen, jsonOut, errOut) { $0.verifiedPayloadJSON(.realtimeRequest, $1) }
}

@c(appstore_verifier_verify_notification_deep)
public func appstoreVerifierVerifyNotificationDeep(_ verifier: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                                   _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    verifyExport(verifier, jws, jwsLen, jsonOut, errOut) { $0.verifiedNotificationDeepJSON($1) }
}

@c(appstore_verifier_cache_stats)
public func appstoreVerifierCacheStats(_ verifier: OpaquePointer?, _ hits: UnsafeMutablePointer<UInt64>?,
                                       _ misses: UnsafeMutablePointer<UInt64>?, _ entries: UnsafeMutablePointer<UInt64>?,
                                       _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(verifier, VerifierBox.self, "verifier")
        let s = box.verifier.chainCacheStatistics
        hits?.pointee = s.hits
        misses?.pointee = s.misses
        entries?.pointee = UInt64(s.entries)
    }
}

// MARK: Apple's roots

/// The roots as C data, made once (process lifetime, like string literals).
private final class AppleRootsC: Sendable {
    struct Entry: @unchecked Sendable {
        let der: UnsafeMutablePointer<UInt8>
        let count: Int
        let name: StaticCStrings.UnsafePointerBox
        let sha256: StaticCStrings.UnsafePointerBox
    }
    let entries: [Entry]
    init() {
        entries = AppleRootCertificate.all.map { root in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: root.der.count)
            p.initialize(from: root.der, count: root.der.count)
            return Entry(der: p, count: root.der.count, name: .init(root.name), sha256: .init(root.sha256Fingerprint))
        }
    }
    static let shared = AppleRootsC()
}

@c(appstore_apple_root_count)
public func appstoreAppleRootCount() -> UInt { UInt(AppleRootsC.shared.entries.count) }

@c(appstore_apple_root_der)
public func appstoreAppleRootDer(_ index: UInt, _ lenOut: UnsafeMutablePointer<UInt>?) -> UnsafePointer<UInt8>? {
    let entries = AppleRootsC.shared.entries
    guard index < UInt(entries.count) else {
        lenOut?.pointee = 0
        return nil
    }
    lenOut?.pointee = UInt(entries[Int(index)].count)
    return UnsafePointer(entries[Int(index)].der)
}

@c(appstore_apple_root_name)
public func appstoreAppleRootName(_ index: UInt) -> UnsafePointer<CChar> {
    let entries = AppleRootsC.shared.entries
    return index < UInt(entries.count) ? entries[Int(index)].name.pointer : StaticCStrings.emptyString
}

@c(appstore_apple_root_sha256)
public func appstoreAppleRootSha256(_ index: UInt) -> UnsafePointer<CChar> {
    let entries = AppleRootsC.shared.entries
    return index < UInt(entries.count) ? entries[Int(index)].sha256.pointer : StaticCStrings.emptyString
}
