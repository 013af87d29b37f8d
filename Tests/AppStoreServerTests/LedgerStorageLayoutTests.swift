import Foundation
import Testing
@testable import AppStoreServer

/// The events table stores each distinct JWS header (certificate chain) once (docs/ledger.md, "Storage layout"):
/// every stored JWS must come back byte for byte, a row whose chain is missing or corrupt is a storage error naming
/// it (and `Ledger.check` lists it), and a ledger written before the layout is rewritten in place.
@Suite(.serialized) struct LedgerStorageLayoutTests {
    static let sandbox = LedgerFixtures.verifier

    /// Every compact JWS of the conformance data (real Apple-signed, Xcode's, and the negative cases: the layout
    /// must not lose a byte of anything, valid or not), through the stored form and back.
    @Test func everyConformanceJWSRoundTrips() throws {
        guard Paths.conformanceAvailable else {
            print("storage layout: SKIPPED — \(Paths.conformance.path) not found; real Apple JWS were NOT round-tripped")
            return
        }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: Paths.conformance
            .appendingPathComponent("manifest.json"))) as! [String: Any]
        var checked = 0, compacted = 0
        for f in manifest["files"] as! [[String: Any]] where (f["format"] as? String) == "jws-compact" {
            let data = try Data(contentsOf: Paths.conformance.appendingPathComponent(f["path"] as! String))
            let jws = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            try Self.expectRoundTrip(jws, f["id"] as! String) { compacted += $0 ? 1 : 0 }
            checked += 1
        }
        print("storage layout: \(checked) conformance JWS round-tripped, \(compacted) stored compacted")
        #expect(checked > 0)
        #expect(compacted >= checked / 2)  // Apple's values carry a chain: most must shrink
    }

    /// Every value of the test PKI's lifecycles, and hand-made edge cases around the form.
    @Test func ownPKIValuesAndEdgeCasesRoundTrip() throws {
        var n = 0
        for l in LedgerFixtures.scenarios + LedgerFixtures.random.prefix(20) {
            for (_, signed) in LedgerFixtures.signed(l, delivery: "both") {
                try Self.expectRoundTrip(signed, "lifecycle value \(n)") { #expect($0, "a test PKI value was not compacted") }
                n += 1
            }
        }
        let header = String(repeating: "eyJh", count: 40)
        for odd in ["", "a.b.c", "~1.x.y..jz", "~0.x", "~", "\(header).e30.sig", "\(header).e30=.sig", "\(header).@@@.sig",
                    "\(header).AA.sig", "\(header)..sig", "\(header).e30.si,g", "\(header).e30", "\(header).e30.s.t",
                    // base64url of {"a":"<header>.x.y"}: a nested header followed by a dot
                    "\(header).\(Base64.encode(Array("{\"a\":\"\(header).x.y\",\"b\":\"\(header)\"}".utf8), alphabet: .url)).sig"] {
            try Self.expectRoundTrip(odd, "edge case \(QuotedText.quote(odd))") { _ in }
        }
    }

    /// A query reads a stored event's payloads from its stored text without rebuilding the JWS
    /// (`EventFacts(stored:)`): the facts must be those of the JWS decoded as received, for every value Apple or the
    /// test PKI signs; true when the stored text was read that way (not expanded).
    @discardableResult
    static func expectSameFacts(_ jws: String, _ kind: LedgerEventKind, _ identity: LedgerIdentity, _ what: String) throws -> Bool {
        let slow = EventFacts(try LedgerEvent(stored: jws, kind: kind, identity: identity))
        var expanded = false
        let (text, headers) = StoredSigned.compact(jws)
        let known = Dictionary(headers.map { ($0.digest, $0.text) }, uniquingKeysWith: { a, _ in a })
        let fast = try EventFacts(stored: text, id: 1, kind: kind, digest: slow.key.hex, identity: identity,
                                  header: { known[$0] }, expand: { _ throws(LedgerError) in expanded = true; return jws })
        #expect(fast.key == slow.key, "\(what): key")
        #expect(fast.transaction?.payload == slow.transaction?.payload, "\(what): transaction payload")
        #expect(fast.transaction?.signedDate == slow.transaction?.signedDate, "\(what): transaction signedDate")
        #expect(fast.transaction?.expiresDate == slow.transaction?.expiresDate, "\(what): transaction expiresDate")
        #expect(fast.transaction?.customerId == slow.transaction?.customerId, "\(what): transaction customer")
        #expect(fast.renewalInfo?.payload == slow.renewalInfo?.payload, "\(what): renewal info payload")
        #expect(fast.renewalInfo?.signedDate == slow.renewalInfo?.signedDate, "\(what): renewal info signedDate")
        #expect(fast.notification?.payload == slow.notification?.payload, "\(what): notification payload")
        #expect(fast.notification?.uuid == slow.notification?.uuid, "\(what): notification uuid")
        #expect(fast.notification?.status == slow.notification?.status, "\(what): notification status")
        #expect(fast.notification?.originalTransactionId == slow.notification?.originalTransactionId, "\(what): notification subscription")
        #expect((fast.transaction == nil) == (slow.transaction == nil) && (fast.renewalInfo == nil) == (slow.renewalInfo == nil)
                && (fast.notification == nil) == (slow.notification == nil), "\(what): which facts")
        return !expanded
    }

    /// Every conformance value the ledger takes (Apple's notifications, transactions, renewal infos) gives the same
    /// facts read from its stored text as decoded from the JWS, and Apple's are read without expanding them.
    @Test func storedPayloadsGiveTheFactsOfTheJWS() throws {
        var fast = 0, n = 0
        for l in LedgerFixtures.scenarios + LedgerFixtures.random.prefix(20) {
            for (kind, signed) in LedgerFixtures.signed(l, delivery: "both") {
                #expect(try Self.expectSameFacts(signed, kind, LedgerIdentity(Self.sandbox), "lifecycle value \(n)"), "a test PKI value was expanded")
                n += 1
            }
        }
        guard Paths.conformanceAvailable else {
            print("stored payloads: SKIPPED — \(Paths.conformance.path) not found; real Apple JWS were NOT read from the stored form")
            return
        }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: Paths.conformance
            .appendingPathComponent("manifest.json"))) as! [String: Any]
        let kinds: [String: LedgerEventKind] = ["notification": .notification, "transaction": .transaction, "renewalInfo": .renewalInfo]
        var apple = 0
        for f in manifest["files"] as! [[String: Any]] where (f["format"] as? String) == "jws-compact" {
            guard let kind = kinds[f["kind"] as? String ?? ""] else { continue }
            let data = try Data(contentsOf: Paths.conformance.appendingPathComponent(f["path"] as! String))
            let jws = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let identity = LedgerIdentity(bundleId: f["bundleId"] as? String ?? "",  appAppleId: nil,
                                          environment: f["environment"] as? String == "Production" ? .production : .sandbox)
            // A negative case that does not decode, or names no identity, is not something a ledger stores.
            guard (try? LedgerEvent(stored: jws, kind: kind, identity: identity)) != nil else { continue }
            if try Self.expectSameFacts(jws, kind, identity, f["id"] as! String) { fast += 1 }
            apple += 1
        }
        print("stored payloads: \(n) test PKI values and \(apple) conformance values, \(fast) of those read without expanding")
        #expect(apple > 20)
        #expect(fast >= apple / 2)
    }

    /// A stored text the fast path must not read as such: placeholders that the signed JSON itself contains, a
    /// nested value stored as received, the base64url form: each decoded by expanding, with the JWS's facts.
    @Test func storedPayloadsFallBackWhenTheFormCannotSay() throws {
        #expect(StoredSigned.payloads(ofStored: "~0.abc") == nil)
        #expect(StoredSigned.payloads(ofStored: "~1.d.s..bZTMw") == nil)
        #expect(StoredSigned.payloads(ofStored: "~1.d.s.5:x.j{}") == nil)
        #expect(StoredSigned.payloads(ofStored: "~1.d.s.3:x:2.j{\"a\":\".{}.s\"}") == nil)  // offset not after a quote
        // A negative length or offset in a corrupt row: refused by both readers, never an index out of bounds.
        for bad in ["~1.d.s.6:x:-9.j{\"a\":\".{}.sig\"}", "~1.d.s.-1:x.j{\"a\":\"x\"}", "~1.d.s.99:x.j{}"] {
            #expect(StoredSigned.payloads(ofStored: bad) == nil)
            #expect(throws: LedgerError.self) { try StoredSigned.expand(bad, eventId: 7) { _ in "h" } }
        }
        let ok = StoredSigned.payloads(ofStored: "~1.d.s.6:x:2.j{\"a\":\".{}.sig\"}")
        #expect(ok?.outer == Array("{\"a\":\"~0~\"}".utf8) && ok?.nested == [Array("{}".utf8)] && ok?.headers == ["d", "x"])
        // The payload already holds the placeholder's text: not unique, so not read this way.
        #expect(StoredSigned.payloads(ofStored: "~1.d.s.6:x:2.j{\"a\":\".{}.sig\",\"b\":\"~0~\"}") == nil)
        // A nested value in a member the facts do not decode stays a placeholder: the slow path decides.
        let code = "\u{01}" + String(UnicodeScalar(UInt8(0x20 + MemberNames.names.firstIndex(of: "signedTransactionInfo")!)))
        var tried = 0
        for l in LedgerFixtures.scenarios.prefix(5) {
            for (kind, signed) in LedgerFixtures.signed(l, delivery: "both") where kind == .notification {
                // The same length as `"signedTransactionInfo":`, so the nested offsets still hold.
                let renamed = StoredSigned.compact(signed).text.replacingOccurrences(of: code, with: "\"signedTransactionInfX\":")
                guard let p = StoredSigned.payloads(ofStored: renamed), !p.nested.isEmpty else { continue }
                var expanded = false
                _ = try EventFacts(stored: renamed, id: 1, kind: kind, digest: String(repeating: "0", count: 64),
                                   identity: LedgerIdentity(Self.sandbox), header: { _ in "h" },
                                   expand: { _ throws(LedgerError) in expanded = true; return signed })
                #expect(expanded, "a placeholder no member claims must send the event to the slow path")
                tried += 1
            }
        }
        #expect(tried > 0)
    }

    static func expectRoundTrip(_ jws: String, _ what: String, compacted: (Bool) -> Void) throws {
        let (text, headers) = StoredSigned.compact(jws)
        let table = Dictionary(headers.map { ($0.digest, $0.text) }, uniquingKeysWith: { a, _ in a })
        let back = try StoredSigned.expand(text, eventId: 1) { table[$0] }
        #expect(Array(back.utf8) == Array(jws.utf8), "\(what) does not come back byte for byte")
        compacted(text.hasPrefix("~1."))
        if text.hasPrefix("~1.") { #expect(text.utf8.count < jws.utf8.count, "\(what): the stored form is not smaller") }
    }

    /// Stored in a ledger file and read back by another ledger object: the same bytes, the same verification.
    @Test func aLedgerGivesBackWhatItStored() throws {
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("layout")
        let values = LedgerFixtures.scenarios.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let writer = try Ledger.open(url, verifier: Self.sandbox)
        for (kind, signed) in values { _ = try writer.ingest(LedgerEvent.verify(kind, signed, with: Self.sandbox).get()) }
        let distinct = Set(values.map(\.1))
        let reader = try Ledger.open(url, verifier: Self.sandbox)
        let stored = try reader.recentEvents(limit: 1000)
        #expect(stored.count == distinct.count)
        let db = try SQLiteConnection(path: file.path)
        #expect(try db.integer("SELECT count(*) FROM events WHERE signed LIKE '~1.%'") == Int64(distinct.count))
        // The test PKI signs with one chain: one header row (outer and nested JWS share it).
        #expect(try db.integer("SELECT count(*) FROM jws_headers") == 1)
        #expect(try reader.reverify().isEmpty)
        var back: Set<String> = []
        try reader.withRefreshedStore { store throws(LedgerError) in
            try store.events(after: 0) { _, _, signed throws(LedgerError) in back.insert(signed) }
        }
        #expect(back == distinct)
        let report = try Ledger.check(url)
        #expect(report.checked == Int64(distinct.count))
        #expect(report.problems.isEmpty)
    }

    /// A row whose chain reference is missing, whose chain is altered, or whose text is not a stored form: a storage
    /// error naming the row, and `check` lists exactly those rows.
    @Test func aCorruptRowIsNamedNeverACrash() throws {
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("layout-corrupt")
        let values = LedgerFixtures.scenarios.prefix(2).flatMap { LedgerFixtures.signed($0, delivery: "notifications") }
        do {
            let ledger = try Ledger.open(url, verifier: Self.sandbox)
            for (kind, signed) in values { _ = try ledger.ingest(LedgerEvent.verify(kind, signed, with: Self.sandbox).get()) }
        }
        let db = try SQLiteConnection(path: file.path)
        var ids: [Int64] = []
        let s = try db.prepare("SELECT id FROM events ORDER BY id LIMIT 3")
        while try s.step() { ids.append(s.int64(0)) }
        try s.bind([])
        #expect(ids.count == 3)
        // Row 1: its outer header digest points nowhere.
        try db.execute("UPDATE events SET signed = '~1.' || substr('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 1, 43) "
            + "|| substr(signed, 47) WHERE id = \(ids[0])", "corrupt 1")
        // Row 2: not a form this library knows.
        try db.execute("UPDATE events SET signed = '~9.garbage' WHERE id = \(ids[1])", "corrupt 2")
        let report = try Ledger.check(url)
        #expect(report.problems.map(\.eventId) == [ids[0], ids[1]])
        #expect(report.problems.first?.message.contains("missing") == true, "\(report.problems)")
        // Opening reads no event (per-key queries: docs/ledger.md, "Queries"); what reads the row names it.
        let reopened = try Ledger.open(url, verifier: Self.sandbox)
        do {
            _ = try reopened.reverify()
            Issue.record("a ledger with corrupt rows was read without an error")
        } catch {
            #expect(error.statusCode == .storageError)
            #expect(error.message.contains("event \(ids[0])"), "\(error.message)")
        }
        // The shared chain altered: every row is reported, and names the mismatch.
        try db.execute("UPDATE jws_headers SET header = header || 'x'", "corrupt chain")
        let all = try Ledger.check(url)
        #expect(all.problems.count == Int(all.checked))
        #expect(all.problems.contains { $0.message.contains("does not match its digest") }, "\(all.problems)")
    }

    /// Nested references whose ranges overlap (`1::3` covers offsets 1 to 5, `2:` falls inside) are never written;
    /// reading them is a storage error naming the row, as for any reference out of place, not a JWS made of them.
    @Test func overlappingNestedReferencesAreCorrupt() throws {
        let header = String(repeating: "eyJh", count: 40)
        let stored = "~1.\(StoredSigned.digest(header)).sig.1::3,2:.ja.xyz.b"
        #expect(throws: LedgerError.self) { try StoredSigned.expand(stored, eventId: 7, header: { _ in header }) }
        do {
            _ = try StoredSigned.expand(stored, eventId: 7, header: { _ in header })
        } catch {
            #expect(error.statusCode == .storageError)
            #expect(error.message.contains("event 7") && error.message.contains("out of place"), "\(error.message)")
        }
        // The same references apart expand (the header put back at 5, after the nested payload).
        let apart = "~1.\(StoredSigned.digest(header)).sig.1::3,5:.ja.xyz.b"
        let jws = try StoredSigned.expand(apart, eventId: 7, header: { _ in header })
        let payload = Array("a\(header).\(Base64.encode(Array("xyz".utf8), alphabet: .url))\(header).b".utf8)
        #expect(jws == "\(header).\(Base64.encode(payload, alphabet: .url)).sig")
    }

    /// A ledger of the schema before the layout (its events as received) is rewritten on open, in batches that a
    /// killed process resumes (`resumed`: left as one killed after its first batch): the same values come back, and
    /// the file's events are compacted.
    @Test(arguments: [false, true]) func aLedgerStoredBeforeTheLayoutIsRewritten(resumed: Bool) throws {
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("layout-migrate-\(resumed)")
        let values = LedgerFixtures.scenarios.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let layout = LedgerSchema.migrations.firstIndex { $0.contains("CREATE TABLE jws_headers") }!
        do {
            let db = try SQLiteConnection(path: file.path)
            try db.execute("PRAGMA journal_mode = WAL", "wal")
            try db.execute("BEGIN", "begin")
            for m in LedgerSchema.migrations[..<layout] { try db.execute(m, "schema") }
            try db.execute("PRAGMA user_version = \(layout)", "version")
            try db.execute("INSERT INTO ledger_identity VALUES (1, '\(TestSigner.bundleId)', 'Sandbox', NULL)", "identity")
            let insert = try db.prepare("INSERT OR IGNORE INTO events (kind, payload_sha256, signed, signed_date, "
                + "received_at, bundle_id, environment, app_apple_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
            for (kind, signed) in values {
                try insert.run(LedgerRows.event(try LedgerEvent.verify(kind, signed, with: Self.sandbox).get(), receivedAt: 1))
            }
            try db.execute("COMMIT", "commit")
        }
        let before = try SQLiteConnection(path: file.path).integer("SELECT sum(length(signed)) FROM events")
        if resumed {
            // As a process killed after its first batch leaves it: migrated, the first rows rewritten, the cursor there.
            let db = try SQLiteConnection(path: file.path)
            try db.execute("BEGIN", "begin")
            for m in LedgerSchema.migrations[layout...] { try db.execute(m, "schema") }
            try db.execute("PRAGMA user_version = \(LedgerSchema.migrations.count)", "version")
            let rows = try db.prepare("SELECT id, signed FROM events ORDER BY id LIMIT 50")
            var first: [(Int64, String)] = []
            while try rows.step() { first.append((rows.int64(0), rows.text(1)!)) }
            try rows.bind([])
            for (id, signed) in first {
                let (text, headers) = StoredSigned.compact(signed)
                for h in headers {
                    try db.prepare("INSERT OR IGNORE INTO jws_headers VALUES (?, ?)").run([.text(h.digest), .text(h.text)], "h")
                }
                try db.prepare("UPDATE events SET signed = ? WHERE id = ?").run([.text(text), .int(id)], "rewrite")
            }
            try db.execute("UPDATE jws_compaction SET after_id = \(first.last!.0)", "cursor")
            try db.execute("COMMIT", "commit")
        }
        let ledger = try Ledger.open(url, verifier: Self.sandbox)
        let db = try SQLiteConnection(path: file.path)
        #expect(try db.integer("PRAGMA user_version") == LedgerSchema.version)
        #expect(try db.integer("SELECT count(*) FROM jws_compaction") == 0)
        #expect(try db.integer("SELECT count(*) FROM events WHERE signed NOT LIKE '~1.%'") == 0)
        let after = try db.integer("SELECT sum(length(signed)) FROM events")
        #expect(after * 3 < before, "stored JWS text \(before) -> \(after) bytes")
        var back: Set<String> = []
        try ledger.withRefreshedStore { store throws(LedgerError) in
            try store.events(after: 0) { _, _, signed throws(LedgerError) in back.insert(signed) }
        }
        #expect(back == Set(values.map(\.1)))
        #expect(try ledger.reverify().isEmpty)
    }
}

/// `Ledger.importJSONLines` (docs/ledger.md, "Bulk import"): every line format, bad lines reported with their line
/// number, batches, and a second run that stores nothing twice. The expected counts come from the file the test
/// writes, not from the ledger.
@Suite(.serialized) struct LedgerImportTests {
    static let sandbox = LedgerFixtures.verifier

    @Test func importsEveryLineFormatAndReportsBadLines() throws {
        let values = LedgerFixtures.scenarios.flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let small = try SignedDataVerifier(rootCertificates: [LedgerIdentityTests.signer.root], bundleId: TestSigner.bundleId,
                                           appAppleId: nil, environment: .sandbox, enableOnlineChecks: false,
                                           maxJWSBytes: 64 * 1024)
        var lines: [String] = []
        var bad: [Int64: String] = [:]  // line number -> reason name expected
        for (i, (kind, jws)) in values.enumerated() {
            switch (kind, i % 3) {
            case (.notification, 0): lines.append(jws)                                    // bare JWS
            case (.notification, 1): lines.append("{\"signedPayload\": \"\(jws)\"}")       // Apple's POST body
            case (.notification, _): lines.append("{\"notification\":\"\(jws)\"}")
            case (.transaction, _): lines.append("{\"transaction\":\"\(jws)\"}")
            default: lines.append("  {\"renewalInfo\":\"\(jws)\"}\r")
            }
            if i == 3 { lines.append("") }                                                  // skipped, not counted
            if i == 5 { lines.append("{oops"); bad[Int64(lines.count)] = "malformed" }
            if i == 8 { lines.append("{\"transaction\":\"x\",\"extra\":1}"); bad[Int64(lines.count)] = "malformed" }
            if i == 13 {
                // A signature of another value: refused by the verifier.
                let other = values[i + 1].1.split(separator: ".")[2]
                let parts = jws.split(separator: ".")
                lines.append("{\"\(kind == .transaction ? "transaction" : kind == .renewalInfo ? "renewalInfo" : "notification")\":"
                             + "\"\(parts[0]).\(parts[1]).\(other)\"}")
                bad[Int64(lines.count)] = "bad_signature"
            }
            if i == 21 { lines.append(String(repeating: "A", count: 200_000)); bad[Int64(lines.count)] = "input_too_large" }
        }
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("import")
        let input = file.deletingLastPathComponent().appendingPathComponent("in.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: input)
        let ledger = try Ledger.open(url, verifier: small)
        let progress = Locked<[Int64]>([])
        let first = try ledger.importJSONLines(path: input.path, options: LedgerImportOptions(batchSize: 7, workers: 3) { n, _, _ in
            progress.withLock { $0.append(n) }
        })
        let distinct = Set(values.map(\.1)).count
        #expect(first.read == Int64(lines.count - 1))
        #expect(first.stored == Int64(distinct))
        #expect(first.alreadyPresent == Int64(values.count - distinct))
        #expect(first.refusedCount == Int64(bad.count))
        #expect(Dictionary(uniqueKeysWithValues: first.refused.map { ($0.line, $0.reason) }) == bad, "\(first.refused)")
        #expect(first.refused.first { $0.line == bad.keys.max() }?.message.contains("maxJWSBytes") == true)
        #expect(progress.withLock { $0 }.count == (Int(first.read) + 6) / 7)
        #expect(Set(try ledger.recentEvents(limit: 1000).map { $0.result.kind }).count == 3)
        // Again: nothing stored twice, everything found.
        let again = try ledger.importJSONLines(path: input.path)
        #expect(again.stored == 0)
        #expect(again.alreadyPresent == Int64(values.count))
        #expect(again.refusedCount == Int64(bad.count))
        #expect(try ledger.summary().events == Int64(distinct))
        // The same bytes from memory.
        let fresh = try Ledger.open("sqlite::memory:", verifier: small)
        let mem = try fresh.importJSONLines(Array(lines.joined(separator: "\n").utf8))
        #expect(mem.stored == first.stored && mem.refusedCount == first.refusedCount)
    }

    @Test func anUnreadableFileIsAnArgumentError() throws {
        let ledger = try Ledger.open("sqlite::memory:", verifier: Self.sandbox)
        #expect(throws: LedgerError.self) { _ = try ledger.importJSONLines(path: "/nonexistent/import.jsonl") }
        let empty = try ledger.importJSONLines([])
        #expect(empty.read == 0 && empty.refusedCount == 0)
    }
}

/// `Ledger.exportJSONLines` (docs/ledger.md, "Export"): every stored value, byte for byte as given, as the JSON lines
/// import reads; imported into a new ledger (another file) it is the same ledger. Expected lines come from the values
/// the test ingested.
@Suite(.serialized) struct LedgerExportTests {
    @Test func exportIsEveryStoredValueAndImportsBackToTheSameLedger() throws {
        let values = LedgerFixtures.scenarios.prefix(12).flatMap { LedgerFixtures.signed($0, delivery: "both") }
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("export")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        var stored: [(LedgerEventKind, String)] = []
        for (kind, signed) in values + values.prefix(5) {  // the duplicates are stored once, exported once
            if try ledger.ingest(LedgerEvent.verify(kind, signed, with: ledger.verifier).get()).stored { stored.append((kind, signed)) }
        }
        let member: [LedgerEventKind: String] = [.notification: "notification", .transaction: "transaction", .renewalInfo: "renewalInfo"]
        let want = stored.map { "{\"\(member[$0.0]!)\":\"\($0.1)\"}" }

        let out = file.deletingLastPathComponent().appendingPathComponent("export.jsonl")
        try Data("an older export".utf8).write(to: out)
        let result = try ledger.exportJSONLines(path: out.path)
        let lines = try String(contentsOf: out, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "" && lines.dropLast().map(String.init) == want)  // in the order stored, one per line
        #expect(result.exported == Int64(stored.count) && result.notifications == Int64(stored.filter { $0.0 == .notification }.count)
                && result.transactions == Int64(stored.filter { $0.0 == .transaction }.count)
                && result.renewalInfos == Int64(stored.filter { $0.0 == .renewalInfo }.count))
        let mode = try FileManager.default.attributesOfItem(atPath: out.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let left = try FileManager.default.contentsOfDirectory(atPath: out.deletingLastPathComponent().path)
        #expect(!left.contains { $0.contains(".partial-") })

        // Imported into another file: every value stored, the same summary and answers.
        let (url2, _) = LedgerTests.LedgerStorageTests.temporaryURL("export-import")
        let copy = try Ledger.open(url2, verifier: LedgerFixtures.verifier)
        let imported = try copy.importJSONLines(path: out.path)
        #expect(imported.stored == Int64(stored.count) && imported.refusedCount == 0)
        #expect(try copy.summary().json() == ledger.summary().json())
        for id in try ledger.customerIds(limit: 10000).ids {
            #expect(try copy.customer(id, at: 1_800_000_000_000).json() == ledger.customer(id, at: 1_800_000_000_000).json())
        }
        // The streaming form writes the same bytes.
        var streamed: [UInt8] = []
        _ = try ledger.exportJSONLines { (chunk: [UInt8]) throws(LedgerError) in streamed += chunk }
        #expect(streamed == Array(try Data(contentsOf: out)))

        // A path that cannot be created: invalid argument, nothing left behind.
        do throws(LedgerError) {
            _ = try ledger.exportJSONLines(path: "/nonexistent-dir/export.jsonl")
            Issue.record("exported into a missing directory")
        } catch {
            #expect(error.statusCode == .invalidArgument && error.message.contains("/nonexistent-dir/export.jsonl"), "\(error)")
        }
        #expect(throws: LedgerError.self) { _ = try ledger.exportJSONLines(path: "") }
        // A failing write (a sink that fails: disk full) ends the export with that error.
        var calls = 0
        do throws(LedgerError) {
            _ = try ledger.exportJSONLines { (_: [UInt8]) throws(LedgerError) in
                calls += 1
                throw LedgerError(statusCode: .storageError, reason: .storageFailed, message: "no space")
            }
            Issue.record("a failing write was not reported")
        } catch {
            #expect(error.message == "no space" && calls == 1)
        }
    }
}
