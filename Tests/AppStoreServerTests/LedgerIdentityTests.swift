import CSQLite
import Foundation
import Testing
@testable import AppStoreServer

/// A ledger is bound to one app in one environment (docs/ledger.md, "Identity"): the identity is recorded when the
/// ledger is created, a verifier of another identity is refused before anything is read or written, only events of
/// the ledger's identity are ever applied, and a 0.3.0 file is migrated in place. Expected outcomes come from the
/// identities the test chose, not from the ledger.
@Suite(.serialized) struct LedgerIdentityTests {
    static let signer = try! TestSigner()
    static let sandbox = LedgerFixtures.verifier
    static func verifier(_ env: AppStoreEnvironment, bundle: String = TestSigner.bundleId, appAppleId: Int64? = nil,
                         roots: [[UInt8]]? = nil) -> SignedDataVerifier {
        try! SignedDataVerifier(rootCertificates: roots ?? [signer.root], bundleId: bundle,
                                appAppleId: appAppleId ?? (env == .production ? 1234 : nil), environment: env,
                                enableOnlineChecks: false)
    }

    /// A file's bytes, with its write-ahead log's: what "nothing written" compares.
    static func bytes(_ file: URL) -> [Data?] {
        [file.path, file.path + "-wal"].map { try? Data(contentsOf: URL(fileURLWithPath: $0)) }
    }

    static func expectMismatch(_ url: String, _ v: SignedDataVerifier, _ what: String, mentions: String? = nil) {
        do {
            _ = try Ledger.open(url, verifier: v)
            Issue.record("\(what): opened")
        } catch {
            #expect(error.statusCode == .configurationError, "\(what): \(error)")
            #expect(error.reason == .ledgerIdentityMismatch, "\(what): \(error)")
            if let mentions { #expect(error.message.contains(mentions), "\(what): \(error.message)") }
        }
    }

    /// The lifecycle values this suite ingests (Sandbox, the test PKI's bundle).
    static var values: [(LedgerEventKind, String)] {
        LedgerFixtures.scenarios.prefix(4).flatMap { LedgerFixtures.signed($0, delivery: "both") }
    }

    static func ingest(_ ledger: Ledger, _ values: [(LedgerEventKind, String)]) throws {
        for (kind, signed) in values { _ = try ledger.ingest(LedgerEvent.verify(kind, signed, with: ledger.verifier).get()) }
    }

    @Test func anotherEnvironmentOrAppIsRefusedAndNothingIsWritten() throws {
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("identity")
        do {
            let ledger = try Ledger.open(url, verifier: Self.sandbox)
            try Self.ingest(ledger, Self.values)
        }
        let before = Self.bytes(file)
        Self.expectMismatch(url, Self.verifier(.production), "a Production verifier on a Sandbox ledger", mentions: "Sandbox")
        Self.expectMismatch(url, Self.verifier(.sandbox, bundle: "com.example.other"), "another app's verifier",
                            mentions: "com.example.other")
        #expect(Self.bytes(file) == before, "a refused open wrote to the file")
        // The rightful verifier still opens it, with everything in it.
        let again = try Ledger.open(url, verifier: Self.sandbox)
        #expect(try again.summary().events == Int64(Set(Self.values.map(\.1)).count))

        // A Production ledger and then a Sandbox one on one file: the second is refused (one identity per file).
        let (url2, _) = LedgerTests.LedgerStorageTests.temporaryURL("identity-two")
        _ = try Ledger.open(url2, verifier: Self.verifier(.production))
        Self.expectMismatch(url2, Self.sandbox, "a Sandbox verifier on a Production ledger", mentions: "Production")
        // Another app Apple ID in Production is another app.
        Self.expectMismatch(url2, Self.verifier(.production, appAppleId: 99), "another app Apple ID", mentions: "1234")
    }

    /// Rows written into the file by other means: one recorded for another identity is never read; one recorded for
    /// this identity whose payload is another app's is refused rather than applied.
    @Test func eventsOfAnotherIdentityAreNeverApplied() throws {
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL("identity-rows")
        do { try Self.ingest(try Ledger.open(url, verifier: Self.sandbox), Self.values) }
        let reference = try Ledger.open(url, verifier: Self.sandbox).summary().json()
        let foreign = try Self.signer.sign(TestSigner.transaction(signedDate: 1_748_736_000_000, extra: [
            "transactionId": "9000000000000001", "originalTransactionId": "9000000000000001", "environment": "Production"]))
        let db = try SQLiteConnection(path: file.path)
        func insert(_ signed: String, sha: String, bundle: String, env: String) throws {
            try db.prepare("INSERT INTO events (kind, payload_sha256, signed, signed_date, received_at, bundle_id, environment) "
                + "VALUES ('TRANSACTION', ?, ?, 1748736000000, 0, ?, ?)")
                .run([SQLiteValue.text(sha), .text(signed), .text(bundle), .text(env)], "insert")
        }
        try insert(foreign, sha: "a1", bundle: TestSigner.bundleId, env: "Production")
        let reader = try Ledger.open(url, verifier: Self.sandbox)
        #expect(try reader.summary().json() != reference)  // the count of rows includes it ...
        #expect(try reader.state().transactions["9000000000000001"] == nil)  // ... but it is not applied
        #expect(try reader.reverify().isEmpty)
        // The same payload recorded as Sandbox (a forged row), indexed under its customer: refused, not applied.
        // Opening reads no event (docs/ledger.md, "Queries"): the query that reads it refuses it.
        try insert(foreign, sha: "a2", bundle: TestSigner.bundleId, env: "Sandbox")
        try db.prepare("INSERT INTO event_keys (kind, key, event_id) SELECT 'c', '9000000000000001', id FROM events "
            + "WHERE payload_sha256 = 'a2'").run([], "index")
        let opened = try Ledger.open(url, verifier: Self.sandbox)
        do throws(LedgerError) {
            _ = try opened.customer("9000000000000001")
            Issue.record("a Production payload in a Sandbox row: applied")
        } catch {
            #expect(error.statusCode == .configurationError, "\(error)")
            #expect(error.reason == .ledgerIdentityMismatch, "\(error)")
            #expect(error.message.contains("Production"), "\(error.message)")
        }
        #expect(throws: LedgerError.self) { _ = try reader.state() }
    }

    /// A 0.3.0 file (schema version 1, built here from that version's SQL, which `LedgerSchema.migrations[0]` keeps
    /// verbatim, and that version's insert statement) is migrated in place: its identity from its events.
    static func legacyFile(_ name: String, _ values: [(LedgerEventKind, String)]) throws -> (String, URL) {
        let (url, file) = LedgerTests.LedgerStorageTests.temporaryURL(name)
        let db = try SQLiteConnection(path: file.path)
        try db.execute("PRAGMA journal_mode = WAL", "wal")
        try db.execute("BEGIN", "begin")
        try db.execute(LedgerSchema.migrations[0], "0.3.0 schema")
        try db.execute("PRAGMA user_version = 1", "version")
        let insert = try db.prepare(
            "INSERT OR IGNORE INTO events (kind, payload_sha256, signed, signed_date, received_at) VALUES (?, ?, ?, ?, ?)")
        for (kind, signed) in values {
            let p = try PayloadIdentity(stored: signed, kind: kind)  // any verifier would do; the stored bytes are what count
            let v = verifier(p.environment ?? .sandbox, bundle: p.bundleId ?? TestSigner.bundleId)
            let e = try LedgerEvent.verify(kind, signed, with: v).get()
            try insert.run(Array(LedgerRows.event(e, receivedAt: 1).prefix(5)))
        }
        try db.execute("COMMIT", "commit")
        return (url, file)
    }

    @Test func aLedgerOf030IsMigratedInPlace() throws {
        let (url, file) = try Self.legacyFile("legacy", Self.values)
        // Opened with a verifier of another environment: refused, and left at version 1.
        Self.expectMismatch(url, Self.verifier(.production), "0.3.0 Sandbox ledger, Production verifier")
        #expect(try SQLiteConnection(path: file.path).integer("PRAGMA user_version") == 1)
        let ledger = try Ledger.open(url, verifier: Self.sandbox)
        var reference = LedgerState()
        for (kind, signed) in Self.values { reference.apply(try LedgerEvent.verify(kind, signed, with: Self.sandbox).get()) }
        let instants = LedgerFixtures.scenarios.prefix(4).flatMap { LedgerFixtures.instants($0) }
        #expect(LedgerFixtures.fingerprint(try ledger.state(), instants: instants) == LedgerFixtures.fingerprint(reference, instants: instants))
        let db = try SQLiteConnection(path: file.path)
        #expect(try db.integer("PRAGMA user_version") == LedgerSchema.version)
        #expect(try db.integer("SELECT count(*) FROM events WHERE bundle_id = 'com.example.testpki' AND environment = 'Sandbox'")
                == Int64(Set(Self.values.map(\.1)).count))
        // Its identity is now recorded: Production is refused from now on.
        Self.expectMismatch(url, Self.verifier(.production), "migrated Sandbox ledger, Production verifier")

        // An empty 0.3.0 file takes the identity of the verifier that opens it.
        let (emptyURL, _) = try Self.legacyFile("legacy-empty", [])
        _ = try Ledger.open(emptyURL, verifier: Self.verifier(.production))
        Self.expectMismatch(emptyURL, Self.sandbox, "empty 0.3.0 file now Production")
    }

    @Test func a030LedgerOfSeveralIdentitiesIsRefusedWithHowToSplitIt() throws {
        let production = try Self.signer.sign(TestSigner.transaction(extra: [
            "transactionId": "9000000000000002", "originalTransactionId": "9000000000000002", "environment": "Production"]))
        let (url, file) = try Self.legacyFile("legacy-mixed", Self.values + [(.transaction, production)])
        let before = Self.bytes(file)
        Self.expectMismatch(url, Self.sandbox, "mixed 0.3.0 ledger", mentions: "Split it")
        Self.expectMismatch(url, Self.verifier(.production), "mixed 0.3.0 ledger", mentions: "Production: 1 events")
        #expect(Self.bytes(file) == before)
        #expect(try SQLiteConnection(path: file.path).integer("PRAGMA user_version") == 1)
    }

    /// Every stored value verified again: with the ledger's own verifier all pass; with a verifier of the same
    /// identity that trusts another root (Apple's), every one is refused, with the chain as the reason.
    @Test func reverifyReportsEveryStoredValue() throws {
        let (url, _) = LedgerTests.LedgerStorageTests.temporaryURL("reverify")
        try Self.ingest(try Ledger.open(url, verifier: Self.sandbox), Self.values)
        let count = Int64(Set(Self.values.map(\.1)).count)
        let ok = try Ledger.open(url, verifier: Self.sandbox).reverifyReport()
        #expect(ok.checked == count)
        #expect(ok.refused.isEmpty)
        let apple = try #require(AppleRootCertificate.appleRootCAG3)
        let strict = try Ledger.open(url, verifier: Self.verifier(.sandbox, roots: [apple.der])).reverifyReport()
        #expect(strict.checked == count)
        #expect(strict.refused.count == Int(count))
        #expect(Set(strict.refused.map { $0.reason }) == ["untrusted_chain"], "\(strict.refused.first.map { "\($0)" } ?? "")")
        let ids = strict.refused.map { $0.eventId }
        #expect(ids == ids.sorted())
    }
}

/// The oracle tells an incomplete history from a contradiction (docs/ledger.md, "Disagreements"). The expected
/// statuses are Apple's documentation's (apple-lifecycle.md §1-§2): DID_RENEW is ACTIVE (1); status 4
/// (BILLING_GRACE_PERIOD) comes with a gracePeriodExpiresDate, and retry without one is BILLING_RETRY (3).
@Suite struct LedgerOracleVerdictTests {
    static let signer = LedgerIdentityTests.signer
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_759_302_518_835  // a real Sandbox DID_RENEW's signedDate (2025-10-01)

    static func tx(_ id: String, purchase: Int64, expires: Int64, signed: Int64) -> [String: Any] {
        TestSigner.transaction(signedDate: Double(signed), extra: [
            "transactionId": id, "originalTransactionId": "7000000000000001", "purchaseDate": purchase, "expiresDate": expires])
    }

    static func notification(_ type: String, _ subtype: String?, signed: Int64, status: Int, tx: [String: Any],
                             ri: [String: Any]) throws -> String {
        var p: [String: Any] = [
            "notificationType": type, "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": signed,
            "data": ["bundleId": TestSigner.bundleId, "environment": "Sandbox", "status": status,
                     "signedTransactionInfo": try signer.sign(tx), "signedRenewalInfo": try signer.sign(ri)] as [String: Any]]
        if let subtype { p["subtype"] = subtype }
        return try signer.sign(p)
    }

    static func renewal(signed: Int64, retry: Bool, grace: Int64? = nil) -> [String: Any] {
        var r: [String: Any] = ["originalTransactionId": "7000000000000001", "autoRenewProductId": "com.example.testpki.monthly",
                                "productId": "com.example.testpki.monthly", "autoRenewStatus": 1,
                                "isInBillingRetryPeriod": retry, "environment": "Sandbox", "signedDate": signed]
        if let grace { r["gracePeriodExpiresDate"] = grace }
        return r
    }

    /// As Apple sends it: the DID_RENEW is signed before the new period's purchaseDate (33 s in the real one), so a
    /// ledger that never saw the previous period knows no current transaction then. That is missing history, not a
    /// contradiction; once the previous period is ingested (what `sync` does), the ledger agrees.
    @Test func aFreshLedgersFirstRenewalIsIncompleteHistory() throws {
        let ledger = try Ledger.open("sqlite::memory:", verifier: LedgerFixtures.verifier)
        let start = Self.t0 + 33_165
        let n = try Self.notification("DID_RENEW", nil, signed: Self.t0, status: 1,
                                      tx: Self.tx("7000000000000002", purchase: start, expires: start + 30 * Self.day, signed: Self.t0),
                                      ri: Self.renewal(signed: Self.t0, retry: false))
        let r = try ledger.ingest(notification: n)
        #expect(r.appleStatus == .active)
        #expect(r.agrees == false)
        #expect(r.verdict == .incompleteHistory)
        #expect(r.missing?.contains("sync") == true, "\(r.missing ?? "")")
        #expect(try ledger.summary().contradictions == 0)
        // A duplicate delivery: the same verdict, stored: false.
        let again = try ledger.ingest(notification: n)
        #expect(again.stored == false && again.verdict == .incompleteHistory)
        // The previous period (Get Transaction History): now the ledger reproduces Apple's status.
        _ = try ledger.ingest(transaction: try Self.signer.sign(Self.tx("7000000000000001", purchase: start - 30 * Self.day,
                                                                         expires: start, signed: start - 30 * Self.day)))
        #expect(try ledger.summary().disagreements.isEmpty)
    }

    /// DID_FAIL_TO_RENEW/GRACE_PERIOD with data.status 4 but no gracePeriodExpiresDate (AL §5.2): the ledger decides
    /// from the transaction and renewal info the notification carries, and they say retry without grace (3).
    @Test func signedFactsAgainstDataStatusIsAContradiction() throws {
        let ledger = try Ledger.open("sqlite::memory:", verifier: LedgerFixtures.verifier)
        let expired = Self.t0 - Self.day
        let n = try Self.notification("DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: Self.t0, status: 4,
                                      tx: Self.tx("7000000000000001", purchase: expired - 30 * Self.day, expires: expired,
                                                  signed: expired - 30 * Self.day),
                                      ri: Self.renewal(signed: Self.t0, retry: true))
        let r = try ledger.ingest(notification: n)
        #expect(r.appleStatus == .billingGracePeriod)
        #expect(r.engineStatus == .billingRetry)
        #expect(r.verdict == .contradiction)
        #expect(r.missing == nil)
        let s = try ledger.summary()
        #expect(s.contradictions == 1)
        #expect(s.disagreements.map(\.verdict) == [.contradiction])
    }

    /// The summary's list is bounded, contradictions first (a backlog of incomplete histories, as a fresh ledger has
    /// until `sync`, never hides one), each kind by signedDate; the counts are exact whatever the list holds, kept by
    /// the commits as verdicts change, and read back by another handle. By construction (AL §1-§2, as above): four
    /// DID_RENEWs of every other month, none with its previous period, are incomplete histories; a later
    /// DID_FAIL_TO_RENEW/GRACE_PERIOD without a grace period is a contradiction.
    @Test func theSummaryListsContradictionsFirstAndCountsThemAll() throws {
        let (url, _) = LedgerTests.LedgerStorageTests.temporaryURL("summary-list")
        let ledger = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        let month = 30 * Self.day
        func start(_ i: Int64) -> Int64 { Self.t0 + i * month + 33_165 }
        var renewals: [Int64] = []
        for i: Int64 in [3, 1, 7, 5] {  // delivered out of order: the list is by signedDate all the same
            let signed = start(i) - 33_165
            renewals.append(signed)
            let r = try ledger.ingest(notification: try Self.notification(
                "DID_RENEW", nil, signed: signed, status: 1,
                tx: Self.tx("70000000000001\(10 + i)", purchase: start(i), expires: start(i + 1), signed: signed),
                ri: Self.renewal(signed: signed, retry: false)))
            #expect(r.verdict == .incompleteHistory)
        }
        let lapsed = start(9) + 40 * Self.day
        let c = try ledger.ingest(notification: try Self.notification(
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: lapsed, status: 4,
            tx: Self.tx("7000000000000199", purchase: start(9), expires: lapsed - Self.day, signed: start(9)),
            ri: Self.renewal(signed: lapsed, retry: true)))
        #expect(c.verdict == .contradiction)

        let all = try ledger.summary()
        #expect(all.contradictions == 1 && all.incompleteHistories == 4)
        #expect(all.disagreements.map(\.verdict) == [.contradiction] + Array(repeating: .incompleteHistory, count: 4))
        #expect(all.disagreements.dropFirst().map(\.signedDate) == renewals.sorted().map(LedgerTime.date))
        let two = try ledger.summary(disagreementLimit: 2)
        #expect(two.disagreements.map(\.notificationUUID) == all.disagreements.prefix(2).map(\.notificationUUID))
        #expect(two.contradictions == 1 && two.incompleteHistories == 4)
        #expect(try ledger.summary(disagreementLimit: 0).disagreements.isEmpty)
        for bad in [-1, 1_000_001] {
            #expect(throws: LedgerError.self) { try ledger.summary(disagreementLimit: bad) }
        }
        // Every disagreement a page at a time, in the list's order: pages of two, the last one without a cursor.
        var pages: [LedgerDisagreementPage] = [try ledger.disagreements(limit: 2)]
        while let next = pages.last?.next, pages.count < 10 { pages.append(try ledger.disagreements(after: next, limit: 2)) }
        #expect(pages.map(\.disagreements.count) == [2, 2, 1])
        #expect(pages.flatMap(\.disagreements) == all.disagreements)
        #expect(try ledger.disagreements(after: "", limit: 5) == LedgerDisagreementPage(disagreements: all.disagreements))
        #expect(try ledger.disagreements(limit: 5).next == nil)  // a page that holds the rest has no next
        for bad in ["x", "AGREES:1:u", "CONTRADICTION:1", "CONTRADICTION:x:u", "CONTRADICTION:1:", String(repeating: "C", count: 300)] {
            let e = #expect(throws: LedgerError.self) { try ledger.disagreements(after: bad) }
            #expect(e?.statusCode == .invalidArgument && e?.message.contains("not a cursor") == true)
        }
        for bad in [0, 10_001] {
            #expect(throws: LedgerError.self) { try ledger.disagreements(limit: bad) }
        }
        let second = try #require(pages[0].next)
        // The missing periods (Get Transaction History): the renewals agree now, and the counts follow.
        for i: Int64 in [0, 2, 4, 6] {
            _ = try ledger.ingest(transaction: try Self.signer.sign(
                Self.tx("70000000000001\(10 + i)", purchase: start(i), expires: start(i + 1), signed: start(i) + 3_600_000)))
        }
        let other = try Ledger.open(url, verifier: LedgerFixtures.verifier)
        for s in [try ledger.summary(), try other.summary()] {
            #expect(s.contradictions == 1 && s.incompleteHistories == 0)
            #expect(s.disagreements.map(\.verdict) == [.contradiction])
        }
        // A cursor made before the catch-up still reads on: nothing is left after it.
        #expect(try other.disagreements(after: second) == LedgerDisagreementPage(disagreements: []))
        #expect(try other.disagreements().disagreements.map(\.verdict) == [.contradiction])
    }
}
