import Foundation
@testable import AppStoreServer

/// The signed lifecycles of Tests/support/lifecycles.py (generated once per process over the test PKI), and helpers
/// that turn them into ledger events and compare the ledger's answers with the expectations written in them.
enum LedgerFixtures {
    static let directory: URL = {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("appstore-lifecycles-\(getpid())")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Paths.repo.appendingPathComponent("Tests/support/lifecycles.py").path,
                       Paths.testPKI.path, dir.path]
        do { try p.run() } catch { fatalError("cannot run lifecycles.py: \(error)") }
        p.waitUntilExit()
        precondition(p.terminationStatus == 0, "Tests/support/lifecycles.py failed (needs python3 + cryptography)")
        return dir
    }()

    nonisolated(unsafe) static let document: [String: Any] = {
        let data = try! Data(contentsOf: directory.appendingPathComponent("lifecycles.json"))
        return try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    }()

    static var scenarios: [[String: Any]] { document["scenarios"] as! [[String: Any]] }
    static var random: [[String: Any]] { document["random"] as! [[String: Any]] }
    static var bad: [[String: Any]] { document["bad"] as! [[String: Any]] }

    static let verifier: SignedDataVerifier = try! TestSigner().verifier()

    /// A lifecycle's signed values for one delivery: "notifications", "history", or "both".
    static func signed(_ lifecycle: [String: Any], delivery: String) -> [(LedgerEventKind, String)] {
        var out: [(LedgerEventKind, String)] = []
        if delivery != "history" {
            for n in lifecycle["notifications"] as! [[String: Any]] { out.append((.notification, n["signed"] as! String)) }
        }
        if delivery != "notifications" {
            let h = lifecycle["history"] as! [String: Any]
            for page in h["pages"] as! [[String: Any]] {
                for t in page["signedTransactions"] as! [String] { out.append((.transaction, t)) }
            }
            for r in h["signedRenewalInfos"] as! [String] { out.append((.renewalInfo, r)) }
        }
        return out
    }

    static func events(_ lifecycle: [String: Any], delivery: String = "both") throws -> [LedgerEvent] {
        try signed(lifecycle, delivery: delivery).map { try LedgerEvent.verify($0.0, $0.1, with: verifier).get() }
    }

    static func state(_ events: [LedgerEvent]) -> LedgerState {
        var s = LedgerState()
        for e in events { s.apply(e) }
        return s
    }

    static func object(_ json: [UInt8]) -> [String: Any] {
        try! JSONSerialization.jsonObject(with: Data(json)) as! [String: Any]
    }

    /// Every answer the state gives about the lifecycle's subscriptions and customers at `instants`, as JSON text:
    /// two states are the same when their fingerprints are.
    static func fingerprint(_ s: LedgerState, instants: [Int64], dropping: Set<String> = []) -> [String] {
        var out: [String] = []
        for t in instants {
            // As known then, and from everything known (bitemporal queries).
            for k in [t, Int64.max] {
                for id in s.subscriptionIds.sorted() {
                    out.append(text(s.subscription(id, at: t, asOf: k).map { object($0.json()) }, dropping))
                }
                for c in s.customerIds.sorted() { out.append(text(object(s.customer(c, at: t, asOf: k).json()), dropping)) }
            }
        }
        out.append(text(object(s.summary().json()), []))
        return out
    }

    private static func text(_ value: Any?, _ dropping: Set<String>) -> String {
        guard let value else { return "null" }
        let cleaned = drop(value, dropping)
        let data = try! JSONSerialization.data(withJSONObject: cleaned, options: [.sortedKeys, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    private static func drop(_ value: Any, _ keys: Set<String>) -> Any {
        if let o = value as? [String: Any] {
            return o.filter { !keys.contains($0.key) }.mapValues { drop($0, keys) }
        }
        if let a = value as? [Any] { return a.map { drop($0, keys) } }
        return value
    }

    /// Instants worth asking about: every notification's signedDate, a minute after it, the history date, and later.
    static func instants(_ lifecycle: [String: Any]) -> [Int64] {
        let dates = (lifecycle["notifications"] as! [[String: Any]]).map { ($0["signedDate"] as! NSNumber).int64Value }
        let h = (lifecycle["historyDate"] as! NSNumber).int64Value
        return Array(Set(dates + dates.map { $0 + 60_000 } + [h, h + 60_000, h + 400 * 86_400_000])).sorted()
    }

    /// Compares an answer (JSON object) with an expectation's fields; the mismatches, described.
    static func mismatches(_ answer: [String: Any], _ expected: [String: Any], skip: Set<String>) -> [String] {
        var out: [String] = []
        for (key, want) in expected where !skip.contains(key) {
            let got = answer[key]
            if let w = want as? String, w == "absent" {
                if got != nil { out.append("\(key): expected absent, got \(got!)") }
                continue
            }
            if let wantList = want as? [[String: Any]] {
                let gotList = got as? [[String: Any]] ?? []
                if gotList.count != wantList.count {
                    out.append("\(key): expected \(wantList.count) entries, got \(gotList.count): \(gotList)")
                    continue
                }
                for w in wantList {
                    let match = gotList.first { ($0["productId"] as? String) == (w["productId"] as? String) }
                    if let match {
                        out += mismatches(match, w, skip: []).map { "\(key)[\(w["productId"]!)].\($0)" }
                    } else {
                        out.append("\(key): no entry for \(w["productId"]!) in \(gotList)")
                    }
                }
                continue
            }
            if !same(got, want) { out.append("\(key): expected \(want), got \(got.map { "\($0)" } ?? "nothing")") }
        }
        return out
    }

    private static func same(_ a: Any?, _ b: Any) -> Bool {
        switch (a, b) {
        case (let x as NSNumber, let y as NSNumber): return x == y
        case (let x as String, let y as String): return x == y
        default: return false
        }
    }
}
