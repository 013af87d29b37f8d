import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

/// What one sync reads (the `sync` command's options; `serve --sync-interval` uses the same).
struct SyncPlan {
    var notificationHistory = true
    /// How far before the last finished window's end the next window starts: Apple lists a notification in the
    /// history by its first send attempt, which may show up there after a window ending later was read.
    var overlapMilliseconds: Int64 = 6 * 3_600_000
    /// The first window's start, when there is no cursor yet (nil: as far back as Apple allows).
    var sinceMilliseconds: Int64?
    /// Get Transaction History (v2) of these transactions (any id of the customer's), from the stored revision.
    var transactionIds: [String] = []
    /// And of every auto-renewable subscription the ledger knows (its originalTransactionId).
    var knownSubscriptions = false
}

/// A value the ledger refused, or a call that failed, with where it came from.
struct SyncProblem {
    let source: String
    let status: String
    let reason: String
    let message: String

    var json: JSONValue {
        .object([("source", .string(source)), ("status", .string(status)), ("reason", .string(reason)), ("message", .string(message))])
    }
}

/// What one sync did.
struct SyncSummary {
    var window: SyncState.Window?
    var resumed = false
    var restarted = false
    var gapMilliseconds: Int64 = 0
    var pages = 0
    var notifications = 0
    var transactions = 0
    var stored = 0
    var duplicates = 0
    var rejections: [SyncProblem] = []
    /// Values whose verification may pass later (an OCSP responder unreachable: RETRYABLE_VERIFICATION_FAILURE, or
    /// any status that is not a verdict on the data): neither stored nor refused, so the cursor stays before them.
    var unverified: [SyncProblem] = []
    var histories: [(id: String, pages: Int, transactions: Int, revision: String?)] = []
    /// Calls that failed: the first one decides the exit status.
    var errors: [(problem: SyncProblem, failure: ToolFailure)] = []

    func json(_ state: SyncState, cursor where: SyncCursor) -> JSONValue {
        func n(_ i: Int) -> JSONValue { .number(String(i)) }
        var history: JSONValue = .null
        if let w = window {
            history = .object([("startDate", .number(String(w.startDate))), ("endDate", .number(String(w.endDate))),
                               ("resumed", .bool(resumed)), ("restarted", .bool(restarted)),
                               ("gapMilliseconds", .number(String(gapMilliseconds)))])
        }
        var cursor = state.json.object ?? []
        cursor.insert(`where`.member, at: 0)
        return .object([
            ("ok", .bool(errors.isEmpty && rejections.isEmpty && unverified.isEmpty)), ("environment", .string(state.environment)),
            ("pages", n(pages)), ("notifications", n(notifications)), ("transactions", n(transactions)),
            ("stored", n(stored)), ("duplicates", n(duplicates)), ("rejected", n(rejections.count)),
            ("rejections", .array(rejections.map(\.json))),
            ("unverified", n(unverified.count)), ("unverifiedValues", .array(unverified.map(\.json))),
            ("notificationHistory", history),
            ("transactionHistory", .array(histories.map { h in
                .object([("transactionId", .string(h.id)), ("pages", n(h.pages)), ("transactions", n(h.transactions)),
                         ("revision", h.revision.map { .string($0) } ?? .null)])
            })),
            ("errors", .array(errors.map(\.problem.json))),
            ("cursor", .object(cursor)),
        ])
    }
}

/// One sync (docs/serve.md, "sync"): Get Notification History from the cursor, then Get Transaction History of the
/// customers asked about, every signed value through the ledger's verifier into the ledger. Each page is made durable
/// in the ledger before the cursor moves past it, so a sync killed at any instant, run again, reads again at most the
/// page it was on (whose values are then duplicates: the ledger stores nothing twice). Every call goes through the
/// library's call driver (rate limit, retries with Retry-After, pagination).
final class SyncRunner {
    /// Apple answers Get Notification History for the last 180 days; a window starts a little later than that, so
    /// that clocks apart by minutes do not make it "too far in the past".
    static let lookbackMilliseconds: Int64 = 180 * 86_400_000 - 15 * 60_000
    /// Apple's own limit: an unfinished window is resumed as it was while its start is within it.
    static let appleLookbackMilliseconds: Int64 = 180 * 86_400_000

    let ledger: Ledger
    let caller: AppStoreServerAPICaller
    let transport: any BlockingHTTPTransport
    let cursor: SyncCursor
    private(set) var state: SyncState
    private(set) var summary = SyncSummary()
    /// Asked before each page: true ends the sync there (`serve` stopping), the cursor at that page.
    let shouldStop: () -> Bool

    init(ledger: Ledger, caller: AppStoreServerAPICaller, transport: any BlockingHTTPTransport, cursor: SyncCursor,
         state: SyncState, shouldStop: @escaping () -> Bool = { false }) {
        self.ledger = ledger
        self.caller = caller
        self.transport = transport
        self.cursor = cursor
        self.state = state
        self.shouldStop = shouldStop
    }

    /// Runs the plan. A failed call is recorded in the summary (a transaction history's failure does not stop the
    /// other customers'; Get Notification History's ends its part); a failure of the ledger or of the cursor file is
    /// thrown, with the summary so far kept.
    func run(_ plan: SyncPlan) throws(ToolFailure) {
        if plan.notificationHistory {
            do {
                try notificationHistory(plan)
            } catch {
                try record(error, "notificationHistory")
            }
        }
        var ids: [String] = []
        for id in plan.transactionIds where !ids.contains(id) { ids.append(id) }
        guard try histories(ids) else { return }
        guard plan.knownSubscriptions else { return }
        // The ledger's subscriptions a page at a time (the ledger holds no list of them in memory).
        let named = Set(ids)
        var after: String?
        while !shouldStop() {
            let page: LedgerIdPage
            do throws(LedgerError) { page = try ledger.subscriptionIds(after: after, limit: 1000) } catch { throw ToolFailure(error) }
            guard try histories(page.ids.filter { !named.contains($0) }), let next = page.next else { return }
            after = next
        }
    }

    /// Get Transaction History for each of `ids`; false when the sync should go no further (stopped, or the
    /// network is down).
    private func histories(_ ids: [String]) throws(ToolFailure) -> Bool {
        for id in ids {
            guard !shouldStop() else { return false }
            do {
                try transactionHistory(id)
            } catch {
                try record(error, "transactionHistory \(id)")
                // The network is down: the next customers would fail too.
                if let e = error as? AppStoreServerAPIError, case .transport = e.kind { return false }
            }
        }
        return true
    }

    /// An API failure is recorded; the ledger's and the cursor file's failures end the sync.
    private func record(_ error: any Error, _ source: String) throws(ToolFailure) {
        if let f = error as? ToolFailure { throw f }
        guard let error = error as? AppStoreServerAPIError else {
            throw ToolFailure(.internal, status: "INTERNAL_ERROR", reason: "internal", "\(source): \(error)")
        }
        let t = ToolFailure(error)
        summary.errors.append((SyncProblem(source: source, status: t.status, reason: t.reason, message: t.message), t))
    }

    private func save() throws(ToolFailure) { try cursor.save(state) }

    // MARK: Get Notification History

    private func notificationHistory(_ plan: SyncPlan) throws {
        let now = Timestamp.nowMilliseconds()
        let oldest = now - Self.lookbackMilliseconds
        var w: SyncState.Window
        if let open = state.window, open.startDate >= now - Self.appleLookbackMilliseconds {
            w = open
            summary.resumed = true
        } else {
            // A new window from the cursor (minus the overlap), or a window left unfinished so long ago that its
            // start has left Apple's 180 days: whatever lies before them cannot be read any more (the gap).
            // Saturating arithmetic: the cursor's numbers are checked when it is read (SyncState.load), and even a
            // value that slipped through cannot trap here.
            var start = state.window?.startDate ?? state.syncedThrough.map { Self.minus($0, plan.overlapMilliseconds) }
                ?? plan.sinceMilliseconds ?? oldest
            if start < oldest {
                if state.window != nil || state.syncedThrough != nil { summary.gapMilliseconds = Self.minus(oldest, start) }
                start = oldest
            }
            w = SyncState.Window(startDate: start, endDate: max(now, Self.plus(start, 1)), paginationToken: nil, pages: 0)
            state.window = w
            try save()
        }
        summary.window = w
        var call = AppStoreServerAPICall(caller: caller, request: try historyRequest(w), checksBody: true)
        repeat {
            if shouldStop() { return }
            let answer: APIAnswer
            do throws(AppStoreServerAPIError) {
                answer = try caller.drive(call, transport: transport)
            } catch {
                // A token Apple no longer takes (a cursor from a sync stopped long ago): the window again from its
                // first page, once; what was ingested from it already comes back as duplicates.
                let refused: Set<APIError> = [.invalidPaginationToken, .paginationTokenExpired]
                guard w.paginationToken != nil, !summary.restarted, let code = error.apiError, refused.contains(code) else { throw error }
                summary.restarted = true
                w.paginationToken = nil
                w.pages = 0
                state.window = w
                try save()
                call = AppStoreServerAPICall(caller: caller, request: try historyRequest(w), checksBody: true)
                continue
            }
            let page = try decode(answer)
            summary.pages += 1
            if w.pages < Int(SyncState.maxPages) { w.pages += 1 }
            guard case .array(let items) = page["notificationHistory"] ?? .array([]) else {
                throw undecodable(.getNotificationHistory, "notificationHistory is not an array")
            }
            var settled = true
            for (i, item) in items.enumerated() {
                let source = "notificationHistory page \(w.pages) [\(i)]"
                summary.notifications += 1
                guard let jws = item["signedPayload"]?.stringValue else {
                    summary.rejections.append(SyncProblem(source: source, status: "INVALID_JWT_FORMAT", reason: "malformed",
                                                          message: "the item has no signedPayload string"))
                    continue
                }
                if !(try ingest(notification: jws, source)) { settled = false }
            }
            // A value that could not be verified yet (an OCSP responder unreachable) holds the window here: the
            // cursor keeps the token of this page (nothing after it is read), so the next run asks for this page
            // again and verifies that value again; what was stored of the page comes back as duplicates.
            guard settled else { return }
            // Every value of the page is durable (or refused for good): the cursor may pass it.
            if call.hasNextPage {
                w.paginationToken = page["paginationToken"]?.stringValue
                state.window = w
            } else {
                state.window = nil
                state.syncedThrough = w.endDate
            }
            try save()
        } while call.hasNextPage
    }

    private func historyRequest(_ w: SyncState.Window) throws(AppStoreServerAPIError) -> AppStoreServerAPIRequest {
        var members: [(String, JSONValue)] = [("body", .object([("startDate", .number(String(w.startDate))),
                                                                 ("endDate", .number(String(w.endDate)))]))]
        if let token = w.paginationToken { members.append(("paginationToken", .string(token))) }
        return try AppStoreServerAPIRequest(endpoint: .getNotificationHistory,
                                            parametersJSON: Array(JSONValue.object(members).serialized().utf8))
    }

    // MARK: Get Transaction History

    private func transactionHistory(_ id: String) throws {
        let start = state.transactions[id]?.revision
        let call = AppStoreServerAPICall(
            caller: caller, request: .transactionHistory(anyTransactionId: id, revision: start,
                                                         transactionHistoryRequest: TransactionHistoryRequest(), version: .v2),
            checksBody: true)
        var entry = (id: id, pages: 0, transactions: 0, revision: start)
        defer { summary.histories.append(entry) }
        repeat {
            if shouldStop() { return }
            let page = try decode(try caller.drive(call, transport: transport))
            summary.pages += 1
            entry.pages += 1
            guard case .array(let items) = page["signedTransactions"] ?? .array([]) else {
                throw undecodable(.getTransactionHistory, "signedTransactions is not an array")
            }
            var settled = true
            for (i, item) in items.enumerated() {
                let source = "transactionHistory \(id) page \(entry.pages) [\(i)]"
                summary.transactions += 1
                entry.transactions += 1
                guard let jws = item.stringValue else {
                    summary.rejections.append(SyncProblem(source: source, status: "INVALID_JWT_FORMAT", reason: "malformed",
                                                          message: "the item is not a string"))
                    continue
                }
                if !(try ingest(transaction: jws, source)) { settled = false }
            }
            // As for notifications: the stored revision stays the one that asks for this page.
            guard settled else { return }
            // The page's revision asks for what follows it: the next page, or (after the last) whatever is new later.
            if let revision = page["revision"]?.stringValue {
                entry.revision = revision
                state.transactions[id] = SyncState.History(revision: revision, syncedAt: Timestamp.nowMilliseconds())
                try save()
            }
        } while call.hasNextPage
    }

    // MARK: ingest

    /// Whether the value is settled: stored, a duplicate, or refused for good. False: its verification may pass
    /// later, and the cursor must not move past it.
    private func ingest(notification jws: String, _ source: String) throws(ToolFailure) -> Bool {
        try ingest(source) { try ledger.ingest(notification: jws) }
    }

    private func ingest(transaction jws: String, _ source: String) throws(ToolFailure) -> Bool {
        try ingest(source) { try ledger.ingest(transaction: jws) }
    }

    private func ingest(_ source: String, _ body: () throws -> LedgerIngestResult) throws(ToolFailure) -> Bool {
        do {
            if try body().stored { summary.stored += 1 } else { summary.duplicates += 1 }
            return true
        } catch let f as VerificationFailure {
            let problem = SyncProblem(source: source, status: f.statusCode.name, reason: f.reason.name, message: f.message)
            // The statuses `serve` answers 4xx (a verdict on the data: forged, another app's, malformed) are final:
            // counted and skipped, since retrying cannot change them. Every other one (RETRYABLE_VERIFICATION_FAILURE:
            // no OCSP answer, nothing learnt; a failure inside the library) is not: Apple's retry would get a 5xx.
            if ServeApp.httpStatus(f).ours {
                summary.unverified.append(problem)
                return false
            }
            summary.rejections.append(problem)
            return true
        } catch let f as LedgerError {
            throw ToolFailure(f)
        } catch {
            throw ToolFailure(.internal, status: "INTERNAL_ERROR", reason: "internal", "\(source): \(error)")
        }
    }

    // MARK: helpers

    static func minus(_ a: Int64, _ b: Int64) -> Int64 {
        let (r, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b > 0 ? .min : .max) : r
    }

    static func plus(_ a: Int64, _ b: Int64) -> Int64 {
        let (r, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : r
    }

    private func decode(_ answer: APIAnswer) throws(AppStoreServerAPIError) -> JSONValue {
        guard let page = JSONValue.parse(answer.response.body), page.object != nil else {
            throw undecodable(nil, "the answer is not a JSON object")
        }
        return page
    }

    private func undecodable(_ endpoint: AppStoreServerAPIEndpoint?, _ message: String) -> AppStoreServerAPIError {
        AppStoreServerAPIError(kind: .undecodableResponse, endpoint: endpoint, message: message)
    }
}
