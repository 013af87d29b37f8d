import Foundation
import Testing
@testable import AppStoreServer

/// The Sandbox fallback of lookups (two mock servers: a Production that knows no id, and a normal one playing
/// Sandbox) and the client-side rate limiter (its arithmetic, and threads against the mock server, which records
/// when each request arrived).
@Suite struct SandboxFallbackTests {
    static let ids = SigningFixtures.ids

    func client(production: String, sandbox: String?, fallback: Bool = true) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(signingKey: SigningFixtures.key(), keyId: Self.ids.keyId, issuerId: Self.ids.issuerId,
                                    bundleId: Self.ids.bundleId, environment: .production, transport: DefaultTransport.make(),
                                    configuration: .init(timeoutMilliseconds: 60_000, baseURL: production,
                                                         sandboxFallback: fallback, sandboxBaseURL: sandbox))
    }

    func urls() throws -> (notFound: String, normal: String) {
        (try #require(APIFixtures.notFoundMockBaseURL, "mock (not found) did not start"),
         try #require(APIFixtures.mockBaseURL, "mock did not start"))
    }

    @Test func everyLookupFallsBackAndSaysSandboxAnswered() async throws {
        let (notFound, normal) = try urls()
        let lookups = AppStoreServerAPIEndpoint.allCases.filter(\.hasSandboxFallback)
        #expect(Set(lookups.map(\.name)) == ["getTransactionInfo", "getTransactionHistory", "getTransactionHistoryV1",
                                             "getAllSubscriptionStatuses", "getRefundHistory", "getAppTransactionInfo"])
        let withFallback = try client(production: notFound, sandbox: normal)
        let without = try client(production: notFound, sandbox: nil, fallback: false)
        for e in lookups {
            let c = try #require(APIFixtures.case(e))
            let request = try AppStoreServerAPIRequest(endpoint: e, parametersJSON: c.paramsJSON)
            let answer = try await withFallback.answer(request)
            #expect(answer.environment == .sandbox, "\(e.name)")
            #expect(answer.response.status == 200, "\(e.name)")
            do {
                _ = try await without.answer(request)
                Issue.record("\(e.name): answered without the fallback")
            } catch {
                #expect(error.apiError == .transactionIdNotFound, "\(e.name)")
            }
        }
        // Typed: the model and the environment.
        let c = try #require(APIFixtures.case(.getTransactionInfo))
        let (info, env) = try await withFallback.answer(
            .getTransactionInfo(transactionId: c.params["transactionId"] as! String), as: TransactionInfoResponse.self)
        #expect(env == .sandbox)
        #expect(info.signedTransactionInfo != nil)
    }

    @Test func productionAnswersAndOtherEndpointsStayInProduction() async throws {
        let (notFound, normal) = try urls()
        // Production knows the id: no fallback.
        let known = try client(production: normal, sandbox: notFound)
        let c = try #require(APIFixtures.case(.getTransactionInfo))
        let request = try AppStoreServerAPIRequest(endpoint: .getTransactionInfo, parametersJSON: c.paramsJSON)
        #expect(try await known.answer(request).environment == .production)
        // Not a lookup: a 4040010 from Production is final (getNotificationHistory is served normally by either
        // mock; a Production error on a non-lookup is the error). Extend renewal date: not a lookup.
        let e = AppStoreServerAPIEndpoint.extendSubscriptionRenewalDate
        #expect(!e.hasSandboxFallback)
        let ext = try #require(APIFixtures.case(e))
        let answer = try await try client(production: notFound, sandbox: normal)
            .answer(AppStoreServerAPIRequest(endpoint: e, parametersJSON: ext.paramsJSON))
        #expect(answer.environment == .production)
        // Another error than 4040010 does not fall back.
        let caller = try client(production: normal, sandbox: notFound).caller
        let other = AppStoreServerAPIError(kind: .apiError, endpoint: .getTransactionInfo, message: "x", httpStatusCode: 400,
                                           rawApiError: APIError.invalidTransactionId.rawValue)
        #expect(!caller.fallsBack(.getTransactionInfo, after: other))
    }

    /// Production answers HTTP 401 (no JSON) for an app never released there: what App Review meets. With the
    /// fallback on, lookups are asked in Sandbox; without it, the 401 is the answer, with its headers.
    @Test func unreleasedAppsFallBackFromA401() async throws {
        let unauthorized = try #require(APIFixtures.unauthorizedMockBaseURL, "mock (unauthorized) did not start")
        let (_, normal) = try urls()
        let withFallback = try client(production: unauthorized, sandbox: normal)
        let without = try client(production: unauthorized, sandbox: nil, fallback: false)
        for e in AppStoreServerAPIEndpoint.allCases.filter(\.hasSandboxFallback) {
            let c = try #require(APIFixtures.case(e))
            let request = try AppStoreServerAPIRequest(endpoint: e, parametersJSON: c.paramsJSON)
            #expect(try await withFallback.answer(request).environment == .sandbox, "\(e.name)")
            do {
                _ = try await without.answer(request)
                Issue.record("\(e.name): answered without the fallback")
            } catch {
                #expect(error.kind == .httpError && error.httpStatusCode == 401, "\(e.name): \(error)")
                #expect(error.header("x-apple-request-id") == "mock-401", "\(e.name): \(error.headers)")
            }
        }
        // When Sandbox refuses too, the error says what Production answered.
        let both = try client(production: unauthorized, sandbox: unauthorized)
        do {
            _ = try await both.answer(.getTransactionInfo(transactionId: "1"))
            Issue.record("answered")
        } catch {
            #expect(error.httpStatusCode == 401)
            #expect(error.message.hasPrefix("Production answered HTTP 401 (an app never released there); then Sandbox: "), "\(error.message)")
            #expect(error.header("X-APPLE-REQUEST-ID") == "mock-401")
        }
        // A 401 of an endpoint that is not a lookup stays final.
        let caller = try client(production: unauthorized, sandbox: normal).caller
        let other = AppStoreServerAPIError(kind: .httpError, endpoint: .extendSubscriptionRenewalDate, message: "x", httpStatusCode: 401)
        #expect(!caller.fallsBack(.extendSubscriptionRenewalDate, after: other))
        #expect(caller.fallsBack(.getTransactionInfo, after: AppStoreServerAPIError(kind: .httpError, endpoint: .getTransactionInfo,
                                                                                    message: "x", httpStatusCode: 401)))
    }

    @Test func neitherEnvironmentKnowsTheId() async throws {
        let (_, normal) = try urls()
        // The mock's error scenario answers 4040010 in both roles.
        let both = try client(production: normal, sandbox: normal)
        do {
            _ = try await both.answer(.getTransactionInfo(transactionId: "error-404-4040010"))
            Issue.record("answered")
        } catch {
            #expect(error.apiError == .transactionIdNotFound)
            #expect(error.message.hasPrefix("Production answered transactionIdNotFound (4040010); then Sandbox: "))
        }
    }

    @Test func laterPagesGoToTheEnvironmentThatAnswered() throws {
        let (notFound, normal) = try urls()
        let caller = try client(production: notFound, sandbox: normal).caller
        let c = try #require(APIFixtures.case(.getTransactionHistory))
        let request = try AppStoreServerAPIRequest(endpoint: .getTransactionHistory, parametersJSON: c.paramsJSON)
        let before = try MockArrivals.count(notFound, path: "GET /inApps/v2/history/")
        let (pages, env) = try AppStoreServerAPIPagination.allPages(request, caller: caller, transport: SocketTransport())
        #expect(env == .sandbox)
        #expect(pages.count == (c.pages?.count ?? 0))
        #expect(pages.count > 1)
        // Production was asked for the first page only.
        #expect(try MockArrivals.count(notFound, path: "GET /inApps/v2/history/") - before == 1)
    }

    @Test func onlyProductionClientsFallBack() throws {
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(signingKey: SigningFixtures.key(), keyId: Self.ids.keyId, issuerId: Self.ids.issuerId,
                                        bundleId: Self.ids.bundleId, environment: .sandbox, transport: DefaultTransport.make(),
                                        configuration: .init(sandboxFallback: true))
        }
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(signingKey: SigningFixtures.key(), keyId: Self.ids.keyId, issuerId: Self.ids.issuerId,
                                        bundleId: Self.ids.bundleId, environment: .production, transport: DefaultTransport.make(),
                                        configuration: .init(sandboxBaseURL: "http://127.0.0.1:1"))
        }
    }
}

/// The mock server's record of arrivals (GET /mock/arrivals).
enum MockArrivals {
    static func all(_ base: String) throws -> [String: [Double]] {
        let response = try SocketTransport().send(HTTPRequest(method: "GET", url: base + "/mock/arrivals", timeoutMilliseconds: 60_000))
        let doc = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (doc?["arrivals"] as? [String: [Double]]) ?? [:]
    }

    /// Requests whose "METHOD path" starts with `path`.
    static func count(_ base: String, path: String) throws -> Int {
        try all(base).filter { $0.key.hasPrefix(path) }.map(\.value.count).reduce(0, +)
    }
}

@Suite struct RateLimiterTests {
    @Test func slotsFollowApplesLimits() throws {
        let limiter = try APIRateLimiter(.failFast)
        // 50/s in Production: 50 in any one second.
        for _ in 0..<50 { #expect(try limiter.reserve(.getTransactionInfo, environment: .production, nowMilliseconds: 1_000) == 0) }
        do {
            _ = try limiter.reserve(.getTransactionInfo, environment: .production, nowMilliseconds: 1_000)
            Issue.record("51st request admitted")
        } catch {
            #expect(error.kind == .rateLimitedLocally)
            #expect(error.statusCode == .rateLimited)
            #expect(error.reason == .localRateLimit)
            #expect(error.isRetryable)
            #expect(error.retryAfter?.atMilliseconds == 2_000)
            #expect(error.message.contains("50 requests per second in Production"))
        }
        #expect(throws: AppStoreServerAPIError.self) { try limiter.reserve(.getTransactionInfo, environment: .production, nowMilliseconds: 1_999) }
        #expect(try limiter.reserve(.getTransactionInfo, environment: .production, nowMilliseconds: 2_000) == 0)
        // Sandbox: a tenth, in its own bucket.
        for _ in 0..<5 { #expect(try limiter.reserve(.getTransactionInfo, environment: .sandbox, nowMilliseconds: 1_000) == 0) }
        #expect(throws: AppStoreServerAPIError.self) { try limiter.reserve(.getTransactionInfo, environment: .sandbox, nowMilliseconds: 1_000) }
        // 1/s in Sandbox is one request every 10 s.
        #expect(try limiter.reserve(.requestTestNotification, environment: .sandbox, nowMilliseconds: 0) == 0)
        do {
            _ = try limiter.reserve(.requestTestNotification, environment: .sandbox, nowMilliseconds: 1)
            Issue.record("second test notification admitted")
        } catch {
            #expect(error.retryAfter?.atMilliseconds == 10_000)
            #expect(error.message.contains("one request every 10 s in Sandbox"))
        }
        // No published limit: never limited.
        for _ in 0..<1000 { #expect(try limiter.reserve(.getStatusOfSubscriptionRenewalDateExtensions, environment: .production, nowMilliseconds: 0) == 0) }
    }

    @Test func waitingCallersAreServedInOrderAndShareApplies() throws {
        let limiter = try APIRateLimiter(APIRateLimit(maxWaitMilliseconds: 1_000, share: 0.5))
        // 10/s in Production at half share: 5 in any one second, the next 5 a second later, reserved in order.
        var waits: [UInt64] = []
        for _ in 0..<10 { waits.append(try limiter.reserve(.getRefundHistory, environment: .production, nowMilliseconds: 0)) }
        #expect(waits == [0, 0, 0, 0, 0, 1_000, 1_000, 1_000, 1_000, 1_000])
        #expect(throws: AppStoreServerAPIError.self) { try limiter.reserve(.getRefundHistory, environment: .production, nowMilliseconds: 0) }
        // Half a second later the third second's slots are within the wait allowed.
        #expect(try limiter.reserve(.getRefundHistory, environment: .production, nowMilliseconds: 1_500) == 500)
        #expect(throws: AppStoreServerAPIError.self) { try APIRateLimiter(APIRateLimit(maxWaitMilliseconds: 0, share: 0)) }
        #expect(throws: AppStoreServerAPIError.self) { try APIRateLimiter(APIRateLimit(maxWaitMilliseconds: 0, share: 1.5)) }
    }

    func client(_ limit: APIRateLimit) throws -> AppStoreServerAPIClient {
        let url = try #require(APIFixtures.mockBaseURL, "mock did not start")
        return try AppStoreServerAPIClient(signingKey: SigningFixtures.key(), keyId: SigningFixtures.ids.keyId,
                                           issuerId: SigningFixtures.ids.issuerId, bundleId: SigningFixtures.ids.bundleId,
                                           environment: .production, transport: DefaultTransport.make(),
                                           configuration: .init(timeoutMilliseconds: 60_000, baseURL: url, rateLimit: limit))
    }

    /// 8 tasks share one client and send 160 requests to a 50/s endpoint: the mock server never sees more than 50
    /// in any one second (plus the requests in flight), and the run takes the 3 s the limit implies (without the
    /// limiter, all 160 arrive within a fraction of a second).
    @Test func manyTasksStayWithinTheLimitAtTheServer() async throws {
        let url = try #require(APIFixtures.mockBaseURL)
        let client = try client(.wait(upTo: 30_000))
        let tid = "ratelimited-\(UUID().uuidString)"
        let start = Date()
        let ok = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var n = 0
                    for _ in 0..<20 {
                        // An id the mock answers 400 (mismatch) after counting it: the limiter is what is tested.
                        _ = try? await client.send(.getTransactionInfo(transactionId: tid))
                        n += 1
                    }
                    return n
                }
            }
            return await group.reduce(0, +)
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(ok == 160)
        let times = try #require(try MockArrivals.all(url)["GET /inApps/v1/transactions/\(tid)"]).sorted()
        #expect(times.count == 160)
        var most = 0
        for (i, t) in times.enumerated() {
            let inWindow = times[i...].prefix { $0 < t + 1.0 }.count
            most = max(most, inWindow)
        }
        // Slots are kept on the client's clock; a request's travel time moves its arrival. Slack: the 8 in flight.
        #expect(most <= 58, "\(most) requests arrived within one second (limit 50)")
        #expect(elapsed >= 3.0, "160 requests at 50 per second took \(elapsed) s (expected at least 3)")
    }

    @Test func failFastSendsNothing() async throws {
        let url = try #require(APIFixtures.mockBaseURL)
        // 50/s at a 0.02 % share: one request per 100 s (a loaded machine cannot make the first call outlast it; at
        // one per 10 s it once did).
        let client = try client(APIRateLimit(maxWaitMilliseconds: 0, share: 0.0002))
        let tid = "failfast-\(UUID().uuidString)"
        _ = try? await client.send(.getTransactionInfo(transactionId: tid))
        do {
            _ = try await client.send(.getTransactionInfo(transactionId: tid))
            Issue.record("second request within the second admitted")
        } catch {
            #expect(error.kind == .rateLimitedLocally)
            let wait = (error.retryAfter?.atMilliseconds ?? 0) - Timestamp.nowMilliseconds()
            #expect(wait > 0 && wait <= 100_000)
        }
        #expect(try MockArrivals.count(url, path: "GET /inApps/v1/transactions/\(tid)") == 1)
    }
}
