import Foundation
import Testing
@testable import AppStoreServer

/// Queries evaluated per key (docs/ledger.md, "Queries"): Apple's documented expectations through the stored,
/// indexed path; opening reads no event; another handle's commits are seen by the next query; a tiny cache gives the
/// same answers; a corrupt row is a storage error naming it; a database made before the index is indexed on open.
@Suite(.serialized) struct LedgerPerKeyTests {
    func ingest(_ ledger: Ledger, _ kind: LedgerEventKind, _ signed: String) throws -> LedgerIngestResult {
        try ledger.ingest(LedgerEvent.verify(kind, signed, with: LedgerFixtures.verifier).get())
    }

    /// Every expectation of every scenario (Tests/support/lifecycles.py, written from Apple's documentation), asked
    /// of a stored ledger whose cache holds almost nothing, so each answer is built from the indexed events.
    @Test func scenariosMatchApplesDocumentationThroughStorage() throws {
        var checked = 0
        var failures: [String] = []
        for scenario in LedgerFixtures.scenarios {
            let name = scenario["name"] as! String
            let historyDate = (scenario["historyDate"] as! NSNumber).int64Value
            for delivery in ["notifications", "history", "both"] {
                let ledger = try Ledger.open("sqlite::memory:?cache_mib=0", verifier: LedgerFixtures.verifier)
                for (kind, signed) in LedgerFixtures.signed(scenario, delivery: delivery) { _ = try ingest(ledger, kind, signed) }
                for e in scenario["expect"] as! [[String: Any]] {
                    let at = (e["at"] as! NSNumber).int64Value
                    let deliveries = e["deliveries"] as? [String]
                        ?? (at >= historyDate ? ["notifications", "history", "both"] : ["notifications", "both"])
                    guard deliveries.contains(delivery) else { continue }
                    // The knowledge time (docs/ledger.md, "Bitemporal queries"): a number, else now (the default).
                    let asOf = (e["asOf"] as? NSNumber)?.int64Value
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
                        failures.append("\(name) [\(delivery)] at \(at) (\(e["rule"]!)): \(p)")
                    }
                }
                if delivery != "history" {
                    for x in try ledger.summary().disagreements { failures.append("\(name) [\(delivery)]: oracle: \(x)") }
                }
            }
        }
        for f in failures { print("ledger per-key scenario FAIL \(f)") }
        #expect(failures.isEmpty)
        #expect(checked >= 100)
    }

    /// The answers of every subscription and customer at every instant, and the summary, as JSON text.
    static func answers(_ ledger: Ledger, subscriptions: [String], customers: [String], instants: [Int64]) throws -> [String] {
        var out: [String] = []
        for t in instants {
            for id in subscriptions { out.append(try ledger.subscription(id, at: t).map { String(decoding: $0.json(), as: UTF8.self) } ?? "null") }
            for id in customers { out.append(String(decoding: try ledger.customer(id, at: t).json(), as: UTF8.self)) }
        }
        out.append(String(decoding: try ledger.summary().json(), as: UTF8.self))
        return out
    }

    static func reference(_ all: [(LedgerEventKind, String)]) throws -> LedgerState {
        var s = LedgerState()
        for (kind, signed) in all { s.apply(try LedgerEvent.verify(kind, signed, with: LedgerFixtures.verifier).get()) }
        return s
    }

    static func referenceAnswers(_ s: LedgerState, events: Int, instants: [Int64]) -> [String] {
        var out: [String] = []
        let now = Timestamp.nowMilliseconds()  // the ledger's default knowledge time
        for t in instants {
            for id in s.subscriptionIds.sorted() { out.append(s.subscription(id, at: t, asOf: now).map { String(decoding: $0.json(), as: UTF8.self) } ?? "null") }
            for id in s.customerIds.sorted() { out.append(String(decoding: s.customer(id, at: t, asOf: now).json(), as: UTF8.self)) }
        }
        out.append(String(decoding: s.summary(events: events).json(), as: UTF8.self))
        return out
    }

    /// Two handles on one file (as two processes): each one's commits are answered by the other's next query, with
    /// its cache warm; the answers are the whole history's, with a budget that evicts all the time and without one.
    @Test func anotherHandlesCommitsAreSeenAndTinyCachesAgree() throws {
        let lifecycles = Array(LedgerFixtures.random.prefix(10)) + Array(LedgerFixtures.scenarios.prefix(20))
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let instants = lifecycles.flatMap { LedgerFixtures.instants($0) }.sorted().enumerated().filter { $0.offset % 11 == 0 }.map(\.element)
        let reference = try Self.reference(all)
        let expected = Self.referenceAnswers(reference, events: reference.eventCount, instants: instants)
        let subscriptions = reference.subscriptionIds.sorted(), customers = reference.customerIds.sorted()

        let (url, _) = LedgerTests.LedgerStorageTests.temporaryURL("perkey")
        let a = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let b = try Ledger.open(url + "?cache_mib=1", verifier: LedgerFixtures.verifier)
        // a answers (and caches) about the first half, then b stores the rest: a's next answers include it.
        for (kind, signed) in all.prefix(all.count / 2) { _ = try ingest(a, kind, signed) }
        _ = try Self.answers(a, subscriptions: subscriptions, customers: customers, instants: instants)
        #expect(a.cacheStatistics.entries > 0)
        for (kind, signed) in all.dropFirst(all.count / 2) { _ = try ingest(b, kind, signed) }
        #expect(try Self.answers(a, subscriptions: subscriptions, customers: customers, instants: instants) == expected)
        #expect(try Self.answers(b, subscriptions: subscriptions, customers: customers, instants: instants) == expected)

        // The same file through a cache of a few KiB (evicting on nearly every query) and through none.
        for bytes in [16 << 10, 0] {
            let small = try Ledger.open(url, verifier: LedgerFixtures.verifier, cacheBytes: bytes)
            #expect(try Self.answers(small, subscriptions: subscriptions, customers: customers, instants: instants) == expected)
            #expect(small.cacheStatistics.bytes <= bytes)
            if bytes > 0 { #expect(small.cacheStatistics.evictions > 0) }
        }
        // The ids, page by page, are the whole history's, in byte order; only the last page has no next, also when
        // the pages divide the ids exactly; "" is the first page as nil is.
        func everyId(_ read: (String?, Int) throws(LedgerError) -> LedgerIdPage, _ limit: Int) throws -> [String] {
            var ids: [String] = []
            var after: String? = ""
            while true {
                let page = try read(after, limit)
                #expect(page.ids.count == limit || page.next == nil)
                #expect(!page.ids.isEmpty || after == "")
                ids += page.ids
                guard let next = page.next else { return ids }
                #expect(next == page.ids.last)
                after = next
            }
        }
        let byteOrder = { (x: String, y: String) in x.utf8.lexicographicallyPrecedes(y.utf8) }
        #expect(subscriptions.count > 7 && customers.count > 7)
        for limit in [7, subscriptions.count, 10000] {
            #expect(try everyId({ (x, n) throws(LedgerError) in try a.subscriptionIds(after: x, limit: n) }, limit) == subscriptions.sorted(by: byteOrder))
        }
        for limit in [7, customers.count, 10000] {
            #expect(try everyId({ (x, n) throws(LedgerError) in try b.customerIds(after: x, limit: n) }, limit) == customers.sorted(by: byteOrder))
        }
        #expect(try a.subscriptionIds(after: subscriptions.sorted(by: byteOrder).last!).ids.isEmpty)
        for bad in [0, -1, 10001] {
            #expect(throws: LedgerError.self) { try a.subscriptionIds(limit: bad) }
            #expect(throws: LedgerError.self) { try a.customerIds(limit: bad) }
        }
    }

    /// Stored verdicts are kept incrementally (a batch evaluates again only the notifications signed at or after its
    /// earliest fact): whatever the order and with values missing (incomplete histories, late arrivals, batches of
    /// several subscriptions), the summary from storage is the oracle over the whole history held.
    @Test(arguments: [1, 7]) func storedVerdictsAreTheWholeHistorysInAnyOrderWithGaps(batch: Int) throws {
        var rng = SplitMix64(state: UInt64(30 + batch))
        let lifecycles = Array(LedgerFixtures.random.prefix(8)) + Array(LedgerFixtures.scenarios.prefix(8))
        var values = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        // One subscription renewed monthly as Apple sends it: each DID_RENEW signed 33 s before its period's purchase,
        // so its verdict agrees only when the previous period is known by its signedDate (from the previous DID_RENEW
        // or from Get Transaction History's copy, re-signed an hour into the period); some of both never arrive.
        typealias V = LedgerOracleVerdictTests
        let month: Int64 = 30 * V.day
        func period(_ i: Int64) -> (id: String, start: Int64) { ("70000000000001\(10 + i)", V.t0 + i * month + 33_165) }
        values.append((.transaction, try V.signer.sign(V.tx(period(0).id, purchase: period(0).start, expires: period(1).start,
                                                             signed: period(0).start + 3_600_000))))
        for i: Int64 in 1...20 {
            let (id, start) = period(i)
            let signed = start - 33_165
            if rng.next() % 3 != 0 {
                values.append((.notification, try V.notification("DID_RENEW", nil, signed: signed, status: 1,
                    tx: V.tx(id, purchase: start, expires: period(i + 1).start, signed: signed), ri: V.renewal(signed: signed, retry: false))))
            }
            if rng.next() % 2 == 0 {
                values.append((.transaction, try V.signer.sign(V.tx(id, purchase: start, expires: period(i + 1).start, signed: start + 3_600_000))))
            }
        }
        values.shuffle(using: &rng)
        let reference = try Self.reference(values)
        #expect(!reference.oracle().disagreements.isEmpty, "the gaps must leave histories incomplete, or this checks nothing")
        let (url, _) = LedgerTests.LedgerStorageTests.temporaryURL("verdicts")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        var i = 0
        while i < values.count {
            let events = try values[i..<min(i + batch, values.count)].map { try LedgerEvent.verify($0.0, $0.1, with: LedgerFixtures.verifier).get() }
            for r in ledger.commitBatch(events) { _ = try r.get() }
            i += batch
        }
        let summary = try ledger.summary()
        #expect(String(decoding: summary.json(), as: UTF8.self)
                == String(decoding: reference.summary(events: reference.eventCount).json(), as: UTF8.self))
    }

    /// Opening reads no event, whatever the history's size (a counter of rows decoded, not a clock); a subscription
    /// query reads that subscription's events only, and a second one none (cached).
    @Test func openReadsNoEvents() throws {
        let lifecycles = Array(LedgerFixtures.random.prefix(12))
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let (url, _) = LedgerTests.LedgerStorageTests.temporaryURL("open")
        do {
            let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
            for (kind, signed) in all { _ = try ingest(ledger, kind, signed) }
        }
        let reopened = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        #expect(reopened.storedEventsRead == 0)
        let reference = try Self.reference(all)
        let id = reference.subscriptionIds.sorted()[0]
        // The events that carry a fact of subscription `id`, counted from the signed values by the test.
        let own = try all.filter { kind, signed in
            let e = try LedgerEvent.verify(kind, signed, with: LedgerFixtures.verifier).get()
            return e.renewalInfo?.originalTransactionId == id || (e.transaction?.isAutoRenewable == true && e.transaction?.originalTransactionId == id)
        }
        #expect(own.count > 0 && own.count < all.count / 4)
        _ = try reopened.subscription(id)
        #expect(reopened.storedEventsRead == Set(own.map(\.1)).count)
        _ = try reopened.subscription(id)
        #expect(reopened.storedEventsRead == Set(own.map(\.1)).count)
        #expect(try reopened.summary().events == Int64(Set(all.map(\.1)).count))
        #expect(reopened.storedEventsRead == Set(own.map(\.1)).count)  // counts come from SQL, not from events
    }

    /// A stored row that no longer decodes: the query that needs it fails with a storage error naming the event;
    /// nothing traps, and the other subscriptions still answer.
    @Test func aCorruptRowIsAStorageErrorNamingIt() throws {
        let lifecycles = Array(LedgerFixtures.random.prefix(4))
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "notifications") }
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("corrupt")
        let reference = try Self.reference(all)
        let ids = reference.subscriptionIds.sorted()
        do {
            let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
            for (kind, signed) in all { _ = try ingest(ledger, kind, signed) }
        }
        let db = try SQLiteConnection(path: file.path)
        let victim = try db.integer("SELECT min(event_id) FROM event_keys WHERE kind = 's' AND key = '\(ids[0])'")
        try db.execute("UPDATE events SET signed = 'not.a-jws' WHERE id = \(victim)", "test")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        do throws(LedgerError) {
            _ = try ledger.subscription(ids[0])
            Issue.record("a corrupt row was read without an error")
        } catch {
            #expect(error.statusCode == .storageError)
            #expect(error.message.contains("stored event \(victim)"), "\(error.message)")
        }
        #expect(try ledger.subscription(ids[1]) != nil)
    }

    /// The summary's counts are kept by the commits (`ledger_counts`): a database from before them (the counts'
    /// migration undone) gets them counted once when opened, and every later commit keeps them; both are the whole
    /// history's counts, and they agree with the state built from the same values.
    @Test func countsAreKeptByCommitsAndCountedOnceForAnOlderDatabase() throws {
        let lifecycles = Array(LedgerFixtures.random.prefix(6)) + Array(LedgerFixtures.scenarios.prefix(10))
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("counts")
        let half = all.count / 2
        do {
            let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
            for (kind, signed) in all.prefix(half) { _ = try ingest(ledger, kind, signed) }
        }
        let step = try #require(LedgerSchema.migrations.firstIndex { $0.contains("ledger_counts (") })
        let db = try SQLiteConnection(path: file.path)
        let triggers = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'count_%'")
        var names: [String] = []
        while try triggers.step() { names.append(triggers.text(0) ?? "") }
        #expect(names.count >= 8)
        for name in names { try db.execute("DROP TRIGGER \(name)", "test") }
        try db.execute("DROP TABLE ledger_counts; PRAGMA user_version = \(step);", "test")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let first = try Self.reference(Array(all.prefix(half)))
        #expect(String(decoding: try ledger.summary().json(), as: UTF8.self)
                == String(decoding: first.summary(events: first.eventCount).json(), as: UTF8.self))
        for (kind, signed) in all.dropFirst(half) + all.prefix(10) { _ = try ingest(ledger, kind, signed) }  // and duplicates
        let whole = try Self.reference(all)
        #expect(String(decoding: try ledger.summary().json(), as: UTF8.self)
                == String(decoding: whole.summary(events: whole.eventCount).json(), as: UTF8.self))
    }

    /// A database made before the index existed (the index's migration not applied): opening indexes its events
    /// once and records its verdicts; the answers are the whole history's.
    @Test func aDatabaseWithoutTheIndexIsIndexedOnOpen() throws {
        let lifecycles = Array(LedgerFixtures.random.prefix(6)) + Array(LedgerFixtures.scenarios.prefix(10))
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "notifications") }
        let instants = lifecycles.flatMap { LedgerFixtures.instants($0) }.sorted().enumerated().filter { $0.offset % 13 == 0 }.map(\.element)
        let reference = try Self.reference(all)
        let expected = Self.referenceAnswers(reference, events: reference.eventCount, instants: instants)
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("backfill")
        do {
            let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
            for (kind, signed) in all { _ = try ingest(ledger, kind, signed) }
        }
        // Undo the index's migration (found by what it creates, not by its number).
        let step = try #require(LedgerSchema.migrations.firstIndex { $0.contains("event_keys (") })
        let db = try SQLiteConnection(path: file.path)
        // And the later ones (the counts' table and triggers, which name the index's columns).
        let triggers = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        var names: [String] = []
        while try triggers.step() { names.append(triggers.text(0) ?? "") }
        for name in names { try db.execute("DROP TRIGGER \(name)", "test") }
        try db.execute("DROP TABLE IF EXISTS ledger_counts", "test")
        try db.execute("""
            DROP TABLE event_keys; DROP TABLE ledger_versions; DROP TABLE ledger_backfill;
            DROP INDEX IF EXISTS notifications_checked; DROP INDEX IF EXISTS notifications_by_verdict;
            ALTER TABLE notifications DROP COLUMN verdict; ALTER TABLE notifications DROP COLUMN engine_status;
            ALTER TABLE notifications DROP COLUMN missing; PRAGMA user_version = \(step);
            """, "test")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        #expect(try db.integer("PRAGMA user_version") == LedgerSchema.version)
        #expect(try Self.answers(ledger, subscriptions: reference.subscriptionIds.sorted(), customers: reference.customerIds.sorted(),
                                 instants: instants) == expected)
    }
}

/// The receipts' seeded generator (SplitMix64) for `shuffle(using:)`: the same order on every run and machine.
extension SplitMix64: RandomNumberGenerator {}
