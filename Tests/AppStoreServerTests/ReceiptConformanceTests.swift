import Foundation
import Testing
import AppStoreServer
import AppStoreServerC

/// The 20 receipt cases of ../shared/conformance/manifest.json (operations extractTransactionIdFromAppReceipt and
/// extractTransactionIdFromTransactionReceipt), through the Swift API, Apple's ReceiptUtility shape and the C ABI.
struct ReceiptManifestRunner {
    enum Outcome: Equatable, CustomStringConvertible {
        case value(String)
        case none
        case error(String)  // reason name
        var description: String {
            switch self {
            case .value(let v): "value \(v)"
            case .none: "none"
            case .error(let r): "error \(r)"
            }
        }
    }

    static let operations = ["extractTransactionIdFromAppReceipt", "extractTransactionIdFromTransactionReceipt"]
    let base: URL
    let cases: [[String: Any]]
    var passed = 0, failed = 0, skipped = 0
    var failures: [String] = []

    init(manifest: URL) throws {
        base = manifest.deletingLastPathComponent()
        let root = try JSONSerialization.jsonObject(with: try Data(contentsOf: manifest)) as? [String: Any] ?? [:]
        cases = (root["cases"] as? [[String: Any]] ?? []).filter { Self.operations.contains($0["operation"] as? String ?? "") }
    }

    static func viaSwift(_ op: String, _ text: String) -> Outcome {
        do throws(ReceiptError) {
            let id = op == operations[0] ? try AppReceipt(base64: text).firstTransactionId
                                         : try TransactionReceipt(base64: text).transactionId
            return id.map { .value($0) } ?? .none
        } catch {
            return .error(error.reason.name)
        }
    }

    static func viaUtility(_ op: String, _ text: String) -> String? {
        op == operations[0] ? ReceiptUtility.extractTransactionId(appReceipt: text)
                            : ReceiptUtility.extractTransactionId(transactionReceipt: text)
    }

    static func viaC(_ op: String, _ text: String) -> Outcome {
        var out: UnsafeMutablePointer<CChar>?
        var err: OpaquePointer?
        let st = text.utf8CString.withUnsafeBufferPointer { buf in
            op == operations[0] ? appstoreReceiptExtractTransactionId(buf.baseAddress, UInt(buf.count - 1), &out, &err)
                                : appstoreTransactionReceiptExtractTransactionId(buf.baseAddress, UInt(buf.count - 1), &out, &err)
        }
        defer { appstoreErrorFree(err) }
        if st == 0 {
            defer { appstoreStringFree(out) }
            return out.map { .value(String(cString: $0)) } ?? .error("OK without an id")
        }
        if out != nil { return .error("id_out written on failure") }
        let reason = String(cString: appstoreReasonName(appstoreErrorReason(err)))
        if st == 11 { return reason == "no_transaction_id" ? .none : .error("NOT_FOUND with reason \(reason)") }
        return .error(reason)
    }

    /// nil when the outcome satisfies the case's expectation.
    static func check(_ c: [String: Any], _ o: Outcome) -> String? {
        let expect = c["expect"] as? [String: Any] ?? [:]
        let result = expect["result"] as? String ?? ""
        if result == "value" {
            if let v = expect["value"] as? String { return o == .value(v) ? nil : "expected value \(v), got \(o)" }
            // App receipts: the Python/Java/Node id (the first), which must also be one of any_of; null = none.
            guard let first = expect["python_java_node"] as? String else {
                return o == .none ? nil : "expected none (no in-app purchases), got \(o)"
            }
            let anyOf = expect["any_of"] as? [String] ?? []
            guard anyOf.contains(first) else { return "manifest: python_java_node \(first) not in any_of" }
            return o == .value(first) ? nil : "expected the first id \(first) (Python/Java/Node), got \(o)"
        }
        if result == "error-or-null" {
            if case .value(let v) = o { return "expected an error or none, got value \(v)" }
            if case .error(let r) = o, !["receipt_malformed", "wrong_kind"].contains(r) { return "unexpected reason \(r)" }
            return nil
        }
        if result.hasPrefix("null") { return o == .none ? nil : "expected none, got \(o)" }
        return "unknown expectation \(result)"
    }

    mutating func run() {
        for c in cases {
            let id = c["id"] as? String ?? "?"
            let op = c["operation"] as? String ?? ""
            guard let path = c["path"] as? String, let text = try? Paths.text(base.appendingPathComponent(path)) else {
                skipped += 1
                failures.append("\(id): skipped, input file unreadable")
                continue
            }
            let s = Self.viaSwift(op, text)
            let cabi = Self.viaC(op, text)
            let utility = Self.viaUtility(op, text)
            var want: String?
            if case .value(let v) = s { want = v }
            if let problem = Self.check(c, s) {
                failed += 1; failures.append("\(id) [Swift]: \(problem)")
            } else if s != cabi {
                failed += 1; failures.append("\(id): Swift API gave \(s) but the C ABI gave \(cabi)")
            } else if utility != want {
                failed += 1; failures.append("\(id): ReceiptUtility gave \(utility ?? "nil"), expected \(want ?? "nil")")
            } else {
                passed += 1
            }
        }
    }
}

@Suite struct ReceiptConformanceTests {
    @Test func sharedReceiptCases() throws {
        guard Paths.conformanceAvailable else {
            print("conformance: SKIPPED — \(Paths.conformance.path) not found; real receipts were NOT checked")
            print("conformance: 0 passed, 0 failed, 20 skipped")
            return
        }
        var runner = try ReceiptManifestRunner(manifest: Paths.conformance.appendingPathComponent("manifest.json"))
        runner.run()
        for f in runner.failures { print("conformance FAIL \(f)") }
        print("conformance: \(runner.passed) passed, \(runner.failed) failed, \(runner.skipped) skipped")
        #expect(runner.cases.count == 20)
        #expect(runner.failed == 0)
        #expect(runner.skipped == 0)
    }
}
