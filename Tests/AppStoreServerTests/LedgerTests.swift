import Foundation
import Testing
@testable import AppStoreServer

/// The ledger's state engine against Apple's documentation (the expectations written in Tests/support/lifecycles.py)
/// and its properties over generated lifecycles: order independence, idempotence, no rollback by late older events,
/// only verified input, and the data.status oracle.
///
/// Serialized, the storage tests nested in it: on a 2-core machine two of these blocking (fsync-heavy, CPU-heavy) tests
/// at once held both cooperative threads, and the async hostile-server tests' deadlines ran out waiting for one.
@Suite(.serialized) struct LedgerTests {
    /// Every expectation of every hand-written scenario, for each delivery it holds for (notifications, the history
    /// catch-up, both).
    @Test func scenariosMatchApplesDocumentation() throws {
        var checked = 0
        var failures: [String] = []
        for scenario in LedgerFixtures.scenarios {
            let name = scenario["name"] as! String
            let historyDate = (scenario["historyDate"] as! NSNumber).int64Value
            for delivery in ["notifications", "history", "both"] {
                let state = LedgerFixtures.state(try LedgerFixtures.events(scenario, delivery: delivery))
                for e in scenario["expect"] as! [[String: Any]] {
                    let at = (e["at"] as! NSNumber).int64Value
                    let deliveries = e["deliveries"] as? [String]
                        ?? (at >= historyDate ? ["notifications", "history", "both"] : ["notifications", "both"])
                    guard deliveries.contains(delivery) else { continue }
                    // Each expectation holds as known then (asOf = at) and from everything known (asOf after at),
                    // unless it names its knowledge time ("now": everything known).
                    let knowledge = (e["asOf"] as? NSNumber).map { [$0.int64Value] }
                        ?? (e["asOf"] as? String == "now" ? [Int64.max] : [at, Int64.max])
                    for asOf in knowledge {
                        let answer: [String: Any]
                        if let id = e["subscription"] as? String {
                            guard let s = state.subscription(id, at: at, asOf: asOf) else {
                                failures.append("\(name) [\(delivery)] at \(at) asOf \(asOf): subscription \(id) unknown")
                                continue
                            }
                            answer = LedgerFixtures.object(s.json())
                        } else {
                            answer = LedgerFixtures.object(state.customer(e["customer"] as! String, at: at, asOf: asOf).json())
                        }
                        let problems = LedgerFixtures.mismatches(answer, e, skip: ["at", "asOf", "subscription", "customer", "rule", "deliveries"])
                        checked += 1
                        for p in problems { failures.append("\(name) [\(delivery)] at \(at) asOf \(asOf) (\(e["rule"]!)): \(p)") }
                    }
                }
                if delivery != "history" {
                    let d = state.oracle().disagreements
                    for x in d { failures.append("\(name) [\(delivery)]: oracle: \(x)") }
                }
            }
        }
        for f in failures { print("ledger scenario FAIL \(f)") }
        print("ledger scenarios: \(LedgerFixtures.scenarios.count) scenarios, \(checked) expectations checked, \(failures.count) failed")
        #expect(failures.isEmpty)
        #expect(checked >= 100)
    }

    /// Any permutation of a lifecycle's events (notifications and history together) gives the same state: every
    /// answer about every subscription and customer at every instant, and the counts.
    @Test func anyOrderGivesTheSameState() throws {
        var rng = SplitMix64(state: 21)
        var permutations = 0
        for lifecycle in LedgerFixtures.random {
            let events = try LedgerFixtures.events(lifecycle)
            let instants = LedgerFixtures.instants(lifecycle)
            let reference = LedgerFixtures.fingerprint(LedgerFixtures.state(events), instants: instants)
            var orders = [Array(events.reversed())]
            for _ in 0..<6 {
                var e = events
                for i in stride(from: e.count - 1, to: 0, by: -1) { e.swapAt(i, rng.below(i + 1)) }
                orders.append(e)
            }
            for order in orders {
                permutations += 1
                let f = LedgerFixtures.fingerprint(LedgerFixtures.state(order), instants: instants)
                #expect(f == reference, "\(lifecycle["name"]!): a permutation changed the state")
            }
        }
        print("ledger order independence: \(LedgerFixtures.random.count) lifecycles, \(permutations) permutations")
        #expect(permutations == LedgerFixtures.random.count * 7)
    }

    /// The same events again, interleaved anywhere, change nothing, and applying a known event reports no change.
    @Test func idempotent() throws {
        var rng = SplitMix64(state: 7)
        for lifecycle in LedgerFixtures.random.prefix(20) {
            let events = try LedgerFixtures.events(lifecycle)
            let instants = LedgerFixtures.instants(lifecycle)
            var once = LedgerFixtures.state(events)
            let reference = LedgerFixtures.fingerprint(once, instants: instants)
            for e in events { #expect(once.apply(e) == false) }
            var twice = events + events
            for i in stride(from: twice.count - 1, to: 0, by: -1) { twice.swapAt(i, rng.below(i + 1)) }
            #expect(LedgerFixtures.fingerprint(LedgerFixtures.state(twice), instants: instants) == reference)
            // The same notification re-verified (a retry) is the same event.
            let n = (lifecycle["notifications"] as! [[String: Any]])[0]["signed"] as! String
            #expect(once.apply(try LedgerEvent.verify(notification: n, with: LedgerFixtures.verifier).get()) == false)
        }
    }

    /// An event whose every fact already has a newer signed version changes no answer about the present when it
    /// arrives last, and no newest version goes back.
    @Test func lateOlderEventNeverRollsBack() throws {
        var late = 0
        for lifecycle in LedgerFixtures.random {
            let events = try LedgerFixtures.events(lifecycle)
            let full = LedgerFixtures.state(events)
            let now = [(lifecycle["historyDate"] as! NSNumber).int64Value + 60_000]
            for (i, e) in events.enumerated() {
                let facts = [e.transaction.map { ($0.transactionId, $0.signedDate, true) },
                             e.renewalInfo.map { ($0.originalTransactionId, $0.signedDate, false) }].compactMap { $0 }
                let superseded = !facts.isEmpty && facts.allSatisfy { id, date, isTx in
                    (isTx ? full.transactions[id]?.last?.signedDate : full.renewals[id]?.last?.signedDate).map { $0 > date } ?? false
                }
                guard superseded else { continue }
                var without = events
                without.remove(at: i)
                var s = LedgerFixtures.state(without)
                let newest = s.transactions.mapValues { $0.last!.payload }
                let before = LedgerFixtures.fingerprint(s, instants: now, dropping: ["lastNotificationType", "lastNotificationSubtype", "lastNotificationDate"]).dropLast()
                s.apply(e)
                let after = LedgerFixtures.fingerprint(s, instants: now, dropping: ["lastNotificationType", "lastNotificationSubtype", "lastNotificationDate"]).dropLast()
                #expect(Array(before) == Array(after), "\(lifecycle["name"]!): a late older event changed the present")
                #expect(s.transactions.mapValues { $0.last!.payload } == newest)
                late += 1
            }
        }
        print("ledger late older events: \(late) checked")
        #expect(late > 50)
    }

    /// Apple's data.status of every notification equals the engine's status at its signedDate: zero disagreements
    /// on every generated lifecycle, in every delivery that includes the notifications.
    @Test func oracleAgreesWithApple() throws {
        var checked = 0
        var disagreements = 0
        for lifecycle in LedgerFixtures.random + LedgerFixtures.scenarios {
            for delivery in ["notifications", "both"] {
                let (c, d) = LedgerFixtures.state(try LedgerFixtures.events(lifecycle, delivery: delivery)).oracle()
                checked += c
                disagreements += d.count
                for x in d { print("ledger oracle: \(lifecycle["name"]!) [\(delivery)]: \(x)") }
            }
        }
        print("ledger oracle: \(checked) notifications compared, \(disagreements) disagreements")
        #expect(disagreements == 0)
        #expect(checked > 300)
    }

    /// The oracle reports a disagreement: with the recovery missing, the ledger cannot reproduce a later
    /// notification's status 1, and says so.
    @Test func oracleReportsAMissedEvent() throws {
        let scenario = LedgerFixtures.scenarios.first { $0["name"] as? String == "billing-retry-recovery" }!
        let notes = (scenario["notifications"] as! [[String: Any]])
        // Keep the purchase and the failure, and Apple's status-1 view of the recovery's notification without its
        // transaction: drop the recovery itself.
        let kept = notes.filter { $0["notificationType"] as? String != "DID_RENEW" }
        var s = LedgerState()
        for n in kept { s.apply(try LedgerEvent.verify(notification: n["signed"] as! String, with: LedgerFixtures.verifier).get()) }
        #expect(s.oracle().disagreements.isEmpty)
        // A stale transaction-less view: the failure's notification judged at a later instant would be wrong, which
        // the oracle does not do: it judges each notification at its own signedDate.
        let recovery = notes.first { $0["notificationType"] as? String == "DID_RENEW" }!
        let event = try LedgerEvent.verify(notification: recovery["signed"] as! String, with: LedgerFixtures.verifier).get()
        var withoutTransaction = s
        withoutTransaction.notifications[event.notification!.uuid] = event.notification
        let (_, d) = withoutTransaction.oracle()
        #expect(d.count == 1)
        #expect(d.first?.appleStatus == .active && d.first?.engineStatus == .billingRetry)
    }
}

/// Only verified input enters; the durable ledger in SQLite.
extension LedgerTests {
@Suite struct LedgerStorageTests {
    static func temporaryURL(_ name: String) -> (String, URL) {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("appstore-ledger-\(getpid())-\(name)")
        try? FileManager.default.removeItem(at: dir)
        try! FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("ledger.db")
        return ("sqlite:" + file.path, file)
    }

    func ingest(_ ledger: Ledger, _ kind: LedgerEventKind, _ signed: String) throws -> LedgerIngestResult {
        switch kind {
        case .transaction: try ledger.ingest(transaction: signed)
        case .renewalInfo: try ledger.ingest(renewalInfo: signed)
        default: try ledger.ingest(notification: signed)
        }
    }

    /// Forged, tampered, wrong bundle, wrong environment (outer and nested), malformed, wrong kind, oversized: each
    /// refused with the verifier's reason, and the ledger unchanged.
    @Test func unverifiedInputCannotEnter() throws {
        let ledger = try Ledger.open("sqlite::memory:", verifier: LedgerFixtures.verifier)
        let scenario = LedgerFixtures.scenarios[0]
        for (kind, signed) in LedgerFixtures.signed(scenario, delivery: "notifications") { _ = try ingest(ledger, kind, signed) }
        let before = try ledger.summary().json()
        let customers = try ledger.state().customerIds.sorted().map { try ledger.customer($0, at: 1_800_000_000_000).json() }
        for bad in LedgerFixtures.bad {
            let kind = LedgerEventKind(rawValue: bad["kind"] as! String)
            let signed = (bad["oversizedBytes"] as? Int).map { String(repeating: "a", count: $0) } ?? bad["signed"] as! String
            do {
                _ = try ingest(ledger, kind, signed)
                Issue.record("\(bad["name"]!): accepted")
            } catch let f as VerificationFailure {
                #expect(f.reason.name == bad["reason"] as! String, "\(bad["name"]!): \(f)")
                #expect(AppStoreStatus(f.status).name == bad["status"] as! String, "\(bad["name"]!): \(f)")
            }
        }
        #expect(try ledger.summary().json() == before)
        #expect(try ledger.state().customerIds.sorted().map { try ledger.customer($0, at: 1_800_000_000_000).json() } == customers)
        // A verified event from a verifier for another app is refused by the ledger too.
        let other = try SignedDataVerifier(rootCertificates: [try TestSigner().root], bundleId: "com.example.other",
                                           appAppleId: nil, environment: .sandbox, enableOnlineChecks: false)
        let lenient = try SignedDataVerifier(rootCertificates: [try TestSigner().root], bundleId: "com.example.testpki",
                                             appAppleId: nil, environment: .sandbox, enableOnlineChecks: false)
        let n = LedgerFixtures.signed(LedgerFixtures.scenarios[1], delivery: "notifications")[0].1
        #expect(throws: LedgerError.self) {
            _ = try ledger.ingest(try LedgerEvent.verify(notification: n, with: lenient).get().withIdentity(of: other))
        }
        #expect(try ledger.summary().json() == before)
    }

    /// Stored, reopened, rebuilt: the same answers; a second handle on the file sees the first one's writes; an
    /// event stored twice is stored once; every stored value verifies again.
    @Test func storesRebuildsAndCatchesUp() throws {
        let (url, file) = Self.temporaryURL("rebuild")
        let lifecycles = Array(LedgerFixtures.random.prefix(8)) + LedgerFixtures.scenarios
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let instants = lifecycles.flatMap { LedgerFixtures.instants($0) }.sorted().enumerated().filter { $0.offset % 7 == 0 }.map(\.element)
        var reference = LedgerState()
        for (kind, signed) in all { reference.apply(try LedgerEvent.verify(kind, signed, with: LedgerFixtures.verifier).get()) }
        let expected = LedgerFixtures.fingerprint(reference, instants: instants)
        do {
            let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
            let reader = try Ledger.open(url, verifier: LedgerFixtures.verifier)
            for (kind, signed) in all.prefix(all.count / 2) { #expect(try ingest(ledger, kind, signed).stored) }
            for (kind, signed) in all.dropFirst(all.count / 2) { #expect(try ingest(reader, kind, signed).stored) }
            for (kind, signed) in all.prefix(10) { #expect(try ingest(reader, kind, signed).stored == false) }
            #expect(LedgerFixtures.fingerprint(try ledger.state(), instants: instants) == expected)
            #expect(try ledger.summary().events == Int64(Set(all.map(\.1)).count))
        }
        let reopened = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        #expect(LedgerFixtures.fingerprint(try reopened.state(), instants: instants) == expected)
        #expect(try reopened.reverify().isEmpty)
        // The schema is versioned, and a database from a newer library is refused, not misread.
        let db = try SQLiteConnection(path: file.path)
        #expect(try db.integer("PRAGMA user_version") == LedgerSchema.version)
        #expect(try db.integer("PRAGMA journal_mode = WAL") == 0 || true)
        #expect(try db.integer("SELECT count(*) FROM transactions") == Int64(reference.transactionCount))
        try db.execute("PRAGMA user_version = 99", "test")
        #expect(throws: LedgerError.self) { _ = try Ledger.open(url, verifier: LedgerFixtures.verifier) }
    }

    /// Recent events come from the database, newest first, whichever handle (process) stored them; paged with
    /// `before`. The expected order is the order the test ingested them in, and the UUIDs are read from the signed
    /// payloads here, not by the ledger.
    @Test func recentEventsAreEveryWritersNewestFirst() throws {
        let (url, _) = Self.temporaryURL("recent")
        let a = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let b = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let signed = LedgerFixtures.signed(LedgerFixtures.scenarios[0], delivery: "notifications").map(\.1)
        #expect(signed.count >= 4)
        for (i, n) in signed.enumerated() { _ = try (i % 2 == 0 ? a : b).ingest(notification: n) }
        _ = try a.ingest(notification: signed[0])  // a duplicate is not a new event
        func uuid(_ jws: String) -> String {
            var part = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while part.count % 4 != 0 { part += "=" }
            let json = try! JSONSerialization.jsonObject(with: Data(base64Encoded: part)!) as! [String: Any]
            return json["notificationUUID"] as! String
        }
        let expected = signed.reversed().map(uuid)
        let first = try a.recentEvents(limit: 3)
        #expect(first.map(\.result.notificationUUID) == Array(expected.prefix(3)))
        #expect(first.allSatisfy { $0.result.stored && $0.result.kind == .notification && $0.receivedAt > 1_700_000_000_000 })
        var walked = first
        while let last = walked.last, case let page = try b.recentEvents(limit: 3, before: last.eventId), !page.isEmpty {
            walked += page
        }
        #expect(walked.map(\.result.notificationUUID) == expected)
        #expect(walked.map(\.eventId) == walked.map(\.eventId).sorted(by: >))
        #expect(throws: LedgerError.self) { _ = try a.recentEvents(limit: 0) }
        #expect(throws: LedgerError.self) { _ = try a.recentEvents(limit: 1001) }
    }

    /// The notifications table keeps the payload as signed with its nested signed values as null (they are events of
    /// their own inside `signed`); the expected text is made here with Foundation from the JWS itself.
    @Test func notificationRowsLeaveTheNestedSignedValuesOut() throws {
        let (url, file) = Self.temporaryURL("slim")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let signed = LedgerFixtures.signed(LedgerFixtures.scenarios[0], delivery: "notifications").map(\.1)
        for n in signed { _ = try ledger.ingest(notification: n) }
        let db = try SQLiteConnection(path: file.path)
        let rows = try db.prepare("SELECT notification_uuid, payload FROM notifications")
        var seen = 0
        while try rows.step() {
            let stored = rows.text(1) ?? ""
            let jws = try #require(signed.first { Self.payloadText($0).contains(rows.text(0) ?? "-") })
            var expected = Self.payloadText(jws)
            let object = try JSONSerialization.jsonObject(with: Data(expected.utf8)) as! [String: Any]
            let data = object["data"] as? [String: Any] ?? [:]
            for key in ["signedTransactionInfo", "signedRenewalInfo"] {
                if let v = data[key] as? String { expected = expected.replacingOccurrences(of: "\"\(v)\"", with: "null") }
            }
            #expect(stored == expected)
            #expect(stored.contains("\"signedTransactionInfo\":null"))
            #expect(stored.utf8.count * 3 < Self.payloadText(jws).utf8.count)
            seen += 1
        }
        #expect(seen == signed.count)
        // A value the payload does not hold as a plain string (here: escaped) is left as it is.
        let p = Array(#"{"a":"x\/y","b":"xy"}"#.utf8)
        #expect(NotificationFacts.nullingNested(p, ["x/y", "xy", "absent"]) == Array(#"{"a":"x\/y","b":null}"#.utf8))
        #expect(NotificationFacts.find(Array("bc".utf8), in: Array("abcbc".utf8)) == 1)
        #expect(NotificationFacts.find(Array("cd".utf8), in: Array("abc".utf8)) == nil)
    }

    /// The WAL is checkpointed while the ledger is open, off the committing thread (WALCheckpointer; its threshold
    /// lowered here), and restarts:
    /// the database file grows while writing goes on, and the log stays near its threshold instead of holding every
    /// page written (which it would with the checkpoint hook broken: SQLite's own is replaced by it).
    @Test func theLogIsCheckpointedWhileOpenAndStaysBounded() throws {
        let (url, file) = Self.temporaryURL("checkpoint")
        let wal = URL(fileURLWithPath: file.path + "-wal")
        WALCheckpointer.threshold = 100  // 400 KiB: the fixtures' pages make several checkpoints
        defer { WALCheckpointer.threshold = WALCheckpointer.pages }
        func size(_ u: URL) -> Int { (try? FileManager.default.attributesOfItem(atPath: u.path)[.size] as? Int) ?? 0 }
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let all = (LedgerFixtures.scenarios + LedgerFixtures.random).flatMap { LedgerFixtures.signed($0, delivery: "notifications") }
        var largestLog = 0, written = 0
        for (kind, signed) in all where kind == .notification {
            _ = try ledger.ingest(notification: signed)
            written += signed.utf8.count
            largestLog = max(largestLog, size(wal))
        }
        // ~430 notifications, 6 MB signed; stored with each chain once (docs/ledger.md, "Storage layout") they are
        // ~0.5 MB of text, and every commit logs its pages again: a log never checkpointed holds > 5 MB.
        #expect(written > 5 << 20, "too few notifications to tell a bounded log from one that holds everything: \(written)")
        let stored = Int(try SQLiteConnection(path: file.path).integer("SELECT sum(length(signed)) FROM events"))
        // The checkpoints run on their own thread: wait for the file to hold the data (up to 60 s, which a loaded
        // machine's fsyncs cannot reach; the loop ends as soon as it does). Never checkpointed, the file keeps the
        // few pages of the empty schema.
        for _ in 0..<1200 where size(file) < stored / 2 { usleep(50_000) }
        #expect(size(file) >= stored / 2, "database file \(size(file)) bytes after \(stored) bytes of stored text")
        // Four thresholds (1.6 MB) at most: beyond that a commit checkpoints itself; the bound leaves ~2x margin.
        #expect(largestLog < 3 << 20, "the log reached \(largestLog) bytes")
        print("ledger checkpoints: \(written) bytes signed, database \(size(file)), largest log \(largestLog)")
        _ = ledger
    }

    static func payloadText(_ jws: String) -> String {
        var part = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while part.count % 4 != 0 { part += "=" }
        return String(decoding: Data(base64Encoded: part)!, as: UTF8.self)
    }

    /// Group commit: eight threads ingesting at once (every value twice, in different orders) into one file: each
    /// call returns its own result, each distinct value is stored exactly once, and the state is the sequential one.
    @Test func concurrentCallersShareCommits() throws {
        let (url, _) = Self.temporaryURL("group-commit")
        let lifecycles = Array(LedgerFixtures.random.prefix(6)) + LedgerFixtures.scenarios.prefix(4)
        let all = lifecycles.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let instants = lifecycles.flatMap { LedgerFixtures.instants($0) }.sorted().enumerated().filter { $0.offset % 5 == 0 }.map(\.element)
        var reference = LedgerState()
        for (kind, signed) in all { reference.apply(try LedgerEvent.verify(kind, signed, with: LedgerFixtures.verifier).get()) }
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let stored = Locked(0)
        let failures = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var order = Array(all.indices)
            var rng = SplitMix64(state: UInt64(worker + 1))
            for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, rng.below(i + 1)) }
            for i in order where i % 8 == worker || i % 8 == (worker + 3) % 8 {
                do {
                    let r = try ingest(ledger, all[i].0, all[i].1)
                    if r.stored { stored.withLock { $0 += 1 } }
                    if r.kind != all[i].0 { failures.withLock { $0.append("#\(i): kind \(r.kind)") } }
                } catch {
                    failures.withLock { $0.append("#\(i): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(stored.withLock { $0 } == Set(all.map(\.1)).count)
        #expect(try ledger.summary().events == Int64(Set(all.map(\.1)).count))
        #expect(LedgerFixtures.fingerprint(try ledger.state(), instants: instants) == LedgerFixtures.fingerprint(reference, instants: instants))
        let reopened = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        #expect(LedgerFixtures.fingerprint(try reopened.state(), instants: instants) == LedgerFixtures.fingerprint(reference, instants: instants))
    }

    @Test func refusesURLsItCannotOpen() {
        for url in ["mysql://localhost/ledger", "postgresql://127.0.0.1:1/ledger?connect_timeout=3", "sqlite:", "/tmp/x.db",
                    "sqlite:/nonexistent-dir/sub/ledger.db"] {
            #expect(throws: LedgerError.self, "\(url)") { _ = try Ledger.open(url, verifier: LedgerFixtures.verifier) }
        }
    }
}
}

extension LedgerEvent {
    /// The same event as if another verifier had made it (tests only: proves the ledger checks who verified).
    func withIdentity(of verifier: SignedDataVerifier) -> LedgerEvent {
        LedgerEvent(kind: kind, signed: signed, signedDate: signedDate, notification: notification, transaction: transaction,
                    renewalInfo: renewalInfo, payload: payload, identity: LedgerIdentity(verifier))
    }
}
