import Foundation
import Testing
import AppStoreServer

/// The call driver's shared scenarios (Tests/driver/scenarios.json; its "doc" says the format), through
/// `AppStoreServerAPICall` directly, and through the blocking host loop (`AppStoreServerAPICaller.drive`) where a
/// scripted transport plays the sends.
@Suite struct DriverScenarioTests {
    struct Scenario: @unchecked Sendable, CustomStringConvertible {
        let raw: [String: Any]
        var name: String { raw["name"] as? String ?? "?" }
        var steps: [[String: Any]] { raw["steps"] as? [[String: Any]] ?? [] }
        var description: String { name }
    }

    static let scenarios: [Scenario] = {
        let url = Paths.repo.appendingPathComponent("Tests/driver/scenarios.json")
        guard let data = try? Data(contentsOf: url),
              let doc = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let list = doc["scenarios"] as? [[String: Any]] else { return [] }
        return list.map(Scenario.init(raw:))
    }()

    static func caller(_ s: Scenario) throws -> AppStoreServerAPICaller {
        let c = s.raw["client"] as? [String: Any] ?? [:]
        let env: AppStoreEnvironment = (c["environment"] as? String) == "SANDBOX" ? .sandbox : .production
        var config = AppStoreServerAPIConfiguration()
        if let timeout = c["timeoutMs"] as? Int { config.timeoutMilliseconds = UInt32(timeout) }
        if let retries = c["maxRetries"] as? Int {
            config.retryPolicy = APIRetryPolicy(maxRetries: retries, initialBackoffMilliseconds: UInt32(c["initialBackoffMs"] as? Int ?? 500),
                                                maxBackoffMilliseconds: UInt32(c["maxBackoffMs"] as? Int ?? 30_000))
        }
        config.sandboxFallback = c["sandboxFallback"] as? Bool ?? false
        if let rl = c["rateLimit"] as? [String: Any] {
            config.rateLimit = APIRateLimit(maxWaitMilliseconds: UInt32(rl["maxWaitMs"] as? Int ?? 0),
                                            share: Double(rl["sharePercent"] as? Int ?? 100) / 100)
        }
        let ids = SigningFixtures.ids
        return try AppStoreServerAPICaller(signingKey: try SigningFixtures.key(), keyId: ids.keyId, issuerId: ids.issuerId,
                                           bundleId: ids.bundleId, environment: env, configuration: config)
    }

    static func request(_ s: Scenario) throws -> AppStoreServerAPIRequest {
        let endpoint = try #require(AppStoreServerAPIEndpoint(name: s.raw["endpoint"] as? String ?? ""))
        let params = try JSONSerialization.data(withJSONObject: s.raw["params"] ?? [String: Any]())
        return try AppStoreServerAPIRequest(endpoint: endpoint, parametersJSON: [UInt8](params))
    }

    static func response(_ r: [String: Any]) throws -> HTTPResponse {
        let headers = (r["headers"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }.map { HTTPHeader($0.key, $0.value) }
        let body: [UInt8]
        if let b = r["body"] {
            body = [UInt8](try JSONSerialization.data(withJSONObject: b, options: [.fragmentsAllowed]))
        } else {
            body = Array((r["bodyText"] as? String ?? "").utf8)
        }
        return HTTPResponse(status: r["status"] as? Int ?? 0, headers: headers, body: body)
    }

    static func transportFailure(_ f: [String: Any]) -> TransportError {
        let kind: TransportError.Kind = switch f["result"] as? String {
        case "TIMEOUT": .timeout
        case "UNREACHABLE": .unreachable
        default: .failed
        }
        return TransportError(kind, f["message"] as? String ?? "")
    }

    static func environmentName(_ e: AppStoreEnvironment) -> String { e == .sandbox ? "SANDBOX" : e == .production ? "PRODUCTION" : "OTHER" }

    static func checkError(_ error: AppStoreServerAPIError, _ want: [String: Any], _ at: String, times: Bool = true) {
        #expect(error.statusCode.name == want["status"] as? String, "\(at): status \(error.statusCode.name): \(error.message)")
        if let reason = want["reason"] as? String { #expect(error.reason.name == reason, "\(at): reason \(error.reason.name)") }
        if let http = want["httpStatus"] as? Int { #expect(error.httpStatusCode == http, "\(at)") }
        if let code = want["apiErrorCode"] as? Int { #expect(error.rawApiError == Int64(code), "\(at)") }
        if times, let at2 = want["retryAfterMs"] as? Int64 ?? (want["retryAfterMs"] as? Int).map(Int64.init) {
            #expect(error.retryAfter?.atMilliseconds == at2, "\(at): retry after \(String(describing: error.retryAfter))")
        }
        for text in want["messageContains"] as? [String] ?? [] { #expect(error.message.contains(text), "\(at): \(error.message)") }
        for text in want["messageLacks"] as? [String] ?? [] { #expect(!error.message.contains(text), "\(at): \(error.message)") }
    }

    static func checkDone(_ call: AppStoreServerAPICall, _ answer: APIAnswer, _ want: [String: Any], _ at: String) throws {
        let got = try JSONSerialization.jsonObject(with: Data(call.answerJSON ?? []), options: [.fragmentsAllowed]) as? NSObject
        let expected = want["json"] as? NSObject
        #expect(got == expected, "\(at): json \(String(decoding: call.answerJSON ?? [], as: UTF8.self))")
        #expect(environmentName(answer.environment) == want["environment"] as? String, "\(at)")
        #expect(call.hasNextPage == (want["hasNextPage"] as? Bool ?? false), "\(at): hasNextPage")
    }

    /// Step by step, each `next` with the step's time.
    @Test(arguments: scenarios) func driverAlone(_ s: Scenario) throws {
        let call = AppStoreServerAPICall(caller: try Self.caller(s), request: try Self.request(s))
        for (i, step) in s.steps.enumerated() {
            let at = "\(s.name), step \(i + 1)"
            let now = (step["now"] as? Int64) ?? Int64(step["now"] as? Int ?? 0)
            if let r = step["receive"] as? [String: Any] {
                #expect(call.receive(try Self.response(r), nowMilliseconds: now), "\(at)")
                continue
            }
            if let f = step["fail"] as? [String: Any] {
                #expect(call.receive(failure: Self.transportFailure(f)), "\(at)")
                continue
            }
            let action: APICallAction
            do {
                action = try call.next(nowMilliseconds: now)
            } catch {
                if let want = step["error"] as? [String: Any] { Self.checkError(error, want, at) } else {
                    Issue.record("\(at): next failed: \(error.message)")
                }
                continue
            }
            switch action {
            case .send(let http):
                let want = step["send"] as? [String: Any]
                #expect(http.method == want?["method"] as? String && http.url == want?["url"] as? String, "\(at): sent \(http.method) \(http.url)")
                if let ms = want?["timeoutMs"] as? Int { #expect(http.timeoutMilliseconds == UInt32(ms), "\(at): timeout \(http.timeoutMilliseconds)") }
                #expect(http.headers.first { $0.name == "Authorization" }?.value.hasPrefix("Bearer ey") == true, "\(at)")
            case .wait(let ms):
                #expect((step["wait"] as? Int).map(UInt64.init) == ms, "\(at): wait \(ms)")
            case .done(let answer):
                guard let want = step["done"] as? [String: Any] else { Issue.record("\(at): done, not expected"); continue }
                try Self.checkDone(call, answer, want, at)
            }
        }
    }

    /// The blocking host loop over a scripted transport. Its clock is the system's, so the sends and the outcome are
    /// compared, not the times; scenarios whose times matter (a Retry-After date, waits over 300 ms in all, which the
    /// loop would really sleep) are left to `driverAlone`.
    @Test(arguments: scenarios.filter { $0.raw["driverOnly"] == nil }) func blockingHostLoop(_ s: Scenario) throws {
        let waits = s.steps.compactMap { $0["wait"] as? Int }.reduce(0, +)
        let retryAfter = s.steps.contains { (($0["receive"] as? [String: Any])?["headers"] as? [String: String])?["Retry-After"] != nil }
        // A client timeout makes the scenario's times matter too: the deadline counts on the system clock here.
        guard waits <= 300, !retryAfter, (s.raw["client"] as? [String: Any])?["timeoutMs"] == nil else { return }
        final class Script: BlockingHTTPTransport, @unchecked Sendable {
            var steps: [[String: Any]]
            var sent: [String] = []
            init(_ steps: [[String: Any]]) { self.steps = steps }
            func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
                sent.append(request.url)
                while let s = steps.first, s["receive"] == nil, s["fail"] == nil { steps.removeFirst() }
                guard !steps.isEmpty else { throw TransportError(.failed, "script ran out") }
                let s = steps.removeFirst()
                if let f = s["fail"] as? [String: Any] { throw DriverScenarioTests.transportFailure(f) }
                do { return try DriverScenarioTests.response(s["receive"] as? [String: Any] ?? [:]) } catch {
                    throw TransportError(.failed, "bad script")
                }
            }
        }
        let script = Script(s.steps)
        let caller = try Self.caller(s)
        let call = AppStoreServerAPICall(caller: caller, request: try Self.request(s))
        let wantSends = s.steps.compactMap { ($0["send"] as? [String: Any])?["url"] as? String }
        let dones = s.steps.compactMap { $0["done"] as? [String: Any] }
        var answered = 0
        do {
            repeat {
                let answer = try caller.drive(call, transport: script)
                try Self.checkDone(call, answer, dones[min(answered, dones.count - 1)], s.name)
                answered += 1
            } while call.hasNextPage && s.raw["pages"] as? Bool == true
            #expect(s.steps.last?["done"] != nil, "\(s.name): succeeded")
        } catch let error as AppStoreServerAPIError {
            Self.checkError(error, s.steps.last?["error"] as? [String: Any] ?? [:], s.name, times: false)
        }
        #expect(answered == dones.count, "\(s.name): \(answered) answers")
        #expect(script.sent == wantSends, "\(s.name): sent \(script.sent)")
    }

    @Test func everyScenarioLoaded() { #expect(Self.scenarios.count >= 20) }
}
