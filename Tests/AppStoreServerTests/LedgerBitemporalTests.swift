import Foundation
import Testing
@testable import AppStoreServer

/// Bitemporal queries (docs/ledger.md, "Bitemporal queries"): the instant asked about and the knowledge time, through
/// `Ledger`'s public methods and their defaults, over the `bitemporal` lifecycles of Tests/support/lifecycles.py (a
/// refund signed three days after its revocationDate, a backfill signed months after the purchases, a billing failure
/// signed after the period ended), whose expectations come from Apple's documentation.
@Suite struct LedgerBitemporalTests {
    static var lifecycles: [[String: Any]] { LedgerFixtures.document["bitemporal"] as! [[String: Any]] }

    /// The ledger holding one delivery of a lifecycle.
    static func ledger(_ lifecycle: [String: Any], delivery: String) throws -> Ledger {
        let ledger = try Ledger.open("sqlite::memory:", verifier: LedgerFixtures.verifier)
        for event in try LedgerFixtures.events(lifecycle, delivery: delivery) { _ = try ledger.ingest(event) }
        return ledger
    }

    @Test func everyExpectationAtEveryKnowledgeTime() throws {
        var checked = 0, failures: [String] = []
        var byKnowledge: [String: Int] = [:]
        for lifecycle in Self.lifecycles {
            let name = lifecycle["name"] as! String
            for delivery in ["notifications", "history", "both"] {
                let ledger = try Self.ledger(lifecycle, delivery: delivery)
                for e in lifecycle["expect"] as! [[String: Any]] {
                    guard (e["deliveries"] as! [String]).contains(delivery) else { continue }
                    let at = (e["at"] as! NSNumber).int64Value
                    let asOf: Int64?
                    switch e["asOf"] {
                    case nil: asOf = nil
                    case let s as String where s == "now": asOf = Timestamp.nowMilliseconds()
                    case let n as NSNumber: asOf = n.int64Value
                    default: Issue.record("\(name): bad asOf \(e["asOf"]!)"); continue
                    }
                    byKnowledge[e["asOf"].map { "\($0)" == "now" ? "now" : "instant" } ?? "default", default: 0] += 1
                    let answer: [String: Any]
                    if let id = e["subscription"] as? String {
                        guard let s = try ledger.subscription(id, at: at, asOf: asOf) else {
                            failures.append("\(name) [\(delivery)] at \(at): subscription \(id) unknown")
                            continue
                        }
                        answer = LedgerFixtures.object(s.json())
                    } else {
                        answer = LedgerFixtures.object(try ledger.customer(e["customer"] as! String, at: at, asOf: asOf).json())
                    }
                    checked += 1
                    for p in LedgerFixtures.mismatches(answer, e, skip: ["at", "asOf", "subscription", "customer", "rule", "deliveries"]) {
                        failures.append("\(name) [\(delivery)] at \(at) asOf \(e["asOf"] ?? "default") (\(e["rule"]!)): \(p)")
                    }
                }
                // The oracle compares as known then, whatever a later question would say.
                for d in try ledger.summary().disagreements { failures.append("\(name) [\(delivery)]: oracle: \(d)") }
            }
        }
        for f in failures { print("ledger bitemporal FAIL \(f)") }
        print("ledger bitemporal: \(Self.lifecycles.count) lifecycles, \(checked) expectations checked \(byKnowledge), \(failures.count) failed")
        #expect(failures.isEmpty)
        // The three cases: asked now by default, asked now explicitly, and as known then.
        #expect(Self.lifecycles.count == 3 && byKnowledge["default", default: 0] >= 5 && byKnowledge["now", default: 0] >= 2
                && byKnowledge["instant", default: 0] >= 4)
    }

    /// The default is exactly asOf = at = now: whole answers, not just the documented fields.
    @Test func defaultIsNow() throws {
        let lifecycle = Self.lifecycles.first { ($0["name"] as! String) == "bitemporal-refund-signed-late" }!
        let ledger = try Self.ledger(lifecycle, delivery: "both")
        let id = (lifecycle["expect"] as! [[String: Any]]).compactMap { $0["subscription"] as? String }.first!
        let customer = (lifecycle["expect"] as! [[String: Any]]).compactMap { $0["customer"] as? String }.first!
        let at = ((lifecycle["expect"] as! [[String: Any]])[0]["at"] as! NSNumber).int64Value
        let now = Timestamp.nowMilliseconds()
        let a = try ledger.subscription(id, at: at), b = try ledger.subscription(id, at: at, asOf: now)
        #expect(a != nil && a?.json() == b?.json())
        #expect(try ledger.customer(customer, at: at).json() == ledger.customer(customer, at: at, asOf: now).json())
        // Without `at` either, both default to one clock reading: the answer is about now (its `at`), as known now.
        let c = try #require(try ledger.subscription(id))
        #expect(c.status == .revoked)
    }

    /// Negative instants are refused with a reason; asOf before at is a question of its own ("what did we believe
    /// then about a later instant") and is answered: the refund signed later is unknown then.
    @Test func badInstants() throws {
        let lifecycle = Self.lifecycles.first { ($0["name"] as! String) == "bitemporal-refund-signed-late" }!
        let ledger = try Self.ledger(lifecycle, delivery: "notifications")
        let id = (lifecycle["expect"] as! [[String: Any]]).compactMap { $0["subscription"] as? String }.first!
        for (at, asOf, name) in [(-1 as Int64?, nil as Int64?, "at"), (nil, -1, "asOf"), (1, Int64.min, "asOf")] {
            do {
                _ = try ledger.subscription(id, at: at, asOf: asOf)
                Issue.record("a negative \(name) was accepted")
            } catch {
                #expect(error.statusCode == .invalidArgument && error.message.contains(name) && error.message.contains(">= 0"))
            }
            #expect(throws: LedgerError.self) { try ledger.customer(id, at: at, asOf: asOf) }
        }
        let at = ((lifecycle["expect"] as! [[String: Any]])[0]["at"] as! NSNumber).int64Value
        let earlier = at - 2 * 86_400_000  // after the purchase, before the REFUND was signed
        let s = try #require(try ledger.subscription(id, at: at, asOf: earlier))
        #expect(s.status == .active && s.entitled && s.revocationDate == nil)  // S2 with what was signed by then
    }
}
