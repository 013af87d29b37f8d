import Foundation
import AppStoreServer
import AppStoreServerC

/// Runs the verify cases of a conformance manifest (the shared one of real Apple data, or our own generated one)
/// through the Swift API and the C ABI entry points, and compares each with its expected result and reason.
struct ManifestRunner {
    struct Outcome: Equatable, CustomStringConvertible {
        var valid: Bool
        var configError: Bool = false
        var status: String = ""
        var reason: String = ""
        var message: String = ""
        var json: Data?
        var description: String { valid ? "valid" : "\(configError ? "config " : "")\(status)/\(reason): \(message)" }
        static func == (a: Outcome, b: Outcome) -> Bool {
            a.valid == b.valid && a.configError == b.configError && a.status == b.status && a.reason == b.reason && a.json == b.json
        }
    }

    let base: URL
    let cases: [[String: Any]]
    var passed = 0, failed = 0, skipped = 0
    var failures: [String] = []

    init(manifest: URL) throws {
        base = manifest.deletingLastPathComponent()
        let root = try JSONSerialization.jsonObject(with: try Data(contentsOf: manifest)) as? [String: Any] ?? [:]
        cases = (root["cases"] as? [[String: Any]] ?? []).filter { ($0["operation"] as? String)?.hasPrefix("verify") == true }
    }

    static func kind(_ operation: String) -> SignedPayloadKind? {
        switch operation {
        case "verifyAndDecodeNotification": .notification
        case "verifyAndDecodeTransaction": .transaction
        case "verifyAndDecodeRenewalInfo": .renewalInfo
        case "verifyAndDecodeAppTransaction": .appTransaction
        case "verifyAndDecodeRealtimeRequest": .realtimeRequest
        default: nil
        }
    }

    static func environment(_ s: String) -> AppStoreEnvironment { AppStoreEnvironment(rawValue: s) }

    func roots(_ v: [String: Any]) throws -> [[UInt8]] {
        try (v["rootCertificates"] as? [String] ?? []).map { [UInt8](try Data(contentsOf: base.appendingPathComponent($0))) }
    }

    func viaSwift(_ c: [String: Any], jws: String) throws -> Outcome {
        let v = c["verifier"] as? [String: Any] ?? [:]
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(
                rootCertificates: try roots(v), bundleId: v["bundleId"] as? String ?? "",
                appAppleId: (v["appAppleId"] as? NSNumber)?.int64Value,
                environment: Self.environment(v["environment"] as? String ?? ""),
                enableOnlineChecks: v["enableOnlineChecks"] as? Bool ?? false, transport: nil)
        } catch let e as ConfigurationError {
            return Outcome(valid: false, configError: true, status: "CONFIGURATION_ERROR", reason: e.reason.name, message: e.message)
        }
        guard let kind = Self.kind(c["operation"] as? String ?? "") else { throw CocoaError(.featureUnsupported) }
        switch verifier.verifiedPayloadJSON(kind, jws) {
        case .success(let json): return Outcome(valid: true, json: Data(json))
        case .failure(let f): return Outcome(valid: false, status: "\(f.status)", reason: f.reason.name, message: f.message)
        }
    }

    func viaC(_ c: [String: Any], jws: String) throws -> Outcome {
        let v = c["verifier"] as? [String: Any] ?? [:]
        var opts: OpaquePointer?
        guard appstoreVerifierOptionsNew(&opts, nil) == 0 else { throw CocoaError(.coderInvalidValue) }
        defer { appstoreVerifierOptionsFree(opts) }
        for r in try roots(v) {
            _ = r.withUnsafeBufferPointer { appstoreVerifierOptionsAddRoot(opts, $0.baseAddress, UInt($0.count), nil) }
        }
        _ = appstoreVerifierOptionsSetBundleId(opts, v["bundleId"] as? String ?? "", nil)
        if let id = (v["appAppleId"] as? NSNumber)?.int64Value { _ = appstoreVerifierOptionsSetAppAppleId(opts, id, nil) }
        let env: Int32 = ["Sandbox": 1, "Production": 2, "Xcode": 3, "LocalTesting": 4][v["environment"] as? String ?? ""] ?? 0
        _ = appstoreVerifierOptionsSetEnvironment(opts, env, nil)
        _ = appstoreVerifierOptionsSetOnlineChecks(opts, (v["enableOnlineChecks"] as? Bool ?? false) ? 1 : 0, nil)
        var verifier: OpaquePointer?
        var err: OpaquePointer?
        func outcome(_ status: Int32, config: Bool = false) -> Outcome {
            defer { appstoreErrorFree(err); err = nil }
            return Outcome(valid: false, configError: config, status: String(cString: appstoreStatusName(status)),
                           reason: String(cString: appstoreReasonName(appstoreErrorReason(err))),
                           message: String(cString: appstoreErrorMessage(err)))
        }
        let st = appstoreVerifierNew(opts, &verifier, &err)
        guard st == 0 else { return outcome(st, config: true) }
        defer { appstoreVerifierFree(verifier) }
        let fn: (OpaquePointer?, UnsafePointer<CChar>?, UInt, StringOut?, ErrorOut?) -> Int32
        switch Self.kind(c["operation"] as? String ?? "") {
        case .notification: fn = appstoreVerifierVerifyNotification
        case .transaction: fn = appstoreVerifierVerifyTransaction
        case .renewalInfo: fn = appstoreVerifierVerifyRenewalInfo
        case .appTransaction: fn = appstoreVerifierVerifyAppTransaction
        case .realtimeRequest: fn = appstoreVerifierVerifyRealtimeRequest
        case nil: throw CocoaError(.featureUnsupported)
        }
        var json: UnsafeMutablePointer<CChar>?
        let status = jws.utf8CString.withUnsafeBufferPointer { fn(verifier, $0.baseAddress, UInt($0.count - 1), &json, &err) }
        guard status == 0 else { return outcome(status) }
        defer { appstoreStringFree(json) }
        return Outcome(valid: true, json: json.map { Data(bytes: $0, count: strlen($0)) })
    }

    /// Reasons that satisfy a semantic error class of the shared manifest.
    static func acceptedReasons(_ errorClass: String) -> Set<String> {
        let head = errorClass.split(separator: " ").first.map(String.init) ?? errorClass
        switch head {
        case "signature_invalid": return ["bad_signature"]
        case "unsupported_alg": return ["unsupported_alg"]
        case "missing_x5c": return ["missing_x5c"]
        case "chain_length": return ["chain_length", "empty_x5c"]
        case "invalid_certificate": return ["bad_certificate"]
        case "chain_untrusted": return ["untrusted_chain"]
        // A chain that is wrong in any way: unanchored, expired, wrong shape (e.g. Xcode's 1-certificate x5c).
        case "chain_invalid": return ["untrusted_chain", "expired", "missing_marker_oid", "chain_length"]
        case "expired": return ["expired"]
        case "no_trust_anchor": return ["no_trust_anchor"]
        case "wrong_bundle": return ["wrong_bundle"]
        case "wrong_app_apple_id": return ["wrong_app_id"]
        case "wrong_environment": return ["wrong_environment"]
        case "wrong_kind": return ["wrong_kind"]
        case "malformed_jws": return ["malformed"]
        default: return []
        }
    }

    /// Compares an outcome with a case's expectation; returns a problem description or nil.
    func check(_ c: [String: Any], _ o: Outcome) -> String? {
        let expect = c["expect"] as? [String: Any] ?? [:]
        let result = expect["result"] as? String ?? ""
        if result == "implementation-defined" { return nil }
        if result == "valid" {
            guard o.valid else { return "expected valid, got \(o)" }
            guard let json = o.json, let obj = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else {
                return "valid but the output is not a JSON object"
            }
            // The shared manifest keeps fields under expect, our own at case level.
            let fields = expect["fields"] as? [String: Any] ?? c["fields"] as? [String: Any] ?? [:]
            for (k, want) in fields {
                if want is NSNull { if let got = obj[k], !(got is NSNull) { return "field \(k): expected null, got \(got)" }; continue }
                if want is [Any] || want is [String: Any] { continue }
                guard let got = obj[k] else { return "field \(k): missing in output" }
                if let g = got as? NSNumber, let w = want as? NSNumber, !(got is Bool) {
                    // The manifest records Apple's decoded value: fractional milliseconds truncated.
                    if g.doubleValue.rounded(.towardZero) != w.doubleValue.rounded(.towardZero) {
                        return "field \(k): expected \(want), got \(got)"
                    }
                } else if "\(got)".lowercased() != "\(want)".lowercased() || ("\(got)" != "\(want)" && UUID(uuidString: "\(got)") == nil) {
                    // Strings compare exactly, except UUIDs, which compare case-insensitively.
                    return "field \(k): expected \(want), got \(got)"
                }
            }
            return nil
        }
        if result == "config_error" {
            guard o.configError else { return "expected a configuration error, got \(o)" }
        } else if result.hasPrefix("error") {
            guard !o.valid, !(o.configError && expect["error_class"] as? String != "no_trust_anchor") else {
                return "expected an error, got \(o)"
            }
        } else {
            return "unknown expectation \(result)"
        }
        if let reason = expect["reason"] as? String, reason != o.reason { return "expected reason \(reason), got \(o)" }
        if let status = expect["status"] as? String, status != o.status { return "expected status \(status), got \(o)" }
        // Apple's status for the case, when the manifest records it, must be ours too.
        if let apple = expect["apple_status"] as? String, apple != o.status { return "expected Apple's status \(apple), got \(o)" }
        if let cls = expect["error_class"] as? String {
            // "a (why) / b" lists alternatives: any of their classes will do.
            var ok = Set<String>()
            for alt in cls.split(separator: "/") {
                let accepted = Self.acceptedReasons(alt.trimmingCharacters(in: .whitespaces))
                if accepted.isEmpty { return "unmapped error class \(cls)" }
                ok.formUnion(accepted)
            }
            if !ok.contains(o.reason) { return "expected \(cls), got \(o)" }
        }
        return nil
    }

    mutating func run() {
        for c in cases {
            let id = c["id"] as? String ?? "?"
            guard let path = c["path"] as? String, let jws = try? Paths.text(base.appendingPathComponent(path)) else {
                skipped += 1
                failures.append("\(id): skipped, input file unreadable")
                continue
            }
            do {
                let s = try viaSwift(c, jws: jws)
                let cabi = try viaC(c, jws: jws)
                if let problem = check(c, s) {
                    failed += 1; failures.append("\(id) [Swift]: \(problem)")
                } else if s != cabi {
                    failed += 1; failures.append("\(id): Swift API gave \(s) but the C ABI gave \(cabi)")
                } else {
                    passed += 1
                }
            } catch {
                failed += 1; failures.append("\(id): runner error \(error)")
            }
        }
    }
}
