import AppStoreServer
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// One request, as the HTTP layer (CLIServe) hands it over: complete, within the limits.
struct ServeRequest {
    let method: String
    let path: String
    let query: String
    let authorization: String?
    let forwardedFor: String?
    let remote: String
    let body: [UInt8]
    let connection: UInt64
}

struct ServeResponse {
    var status: Int
    var body: [UInt8]
    var headers: [String] = []
    var contentType: ServeContentType = .json

    static func json(_ status: Int, _ text: String) -> ServeResponse {
        ServeResponse(status: status, body: Array(text.utf8))
    }

    /// `{"error": {"reason", "message"[, "status"]}}`: the library's reason and status names where there are.
    static func error(_ status: Int, _ reason: String, _ message: String, libraryStatus: String? = nil,
                      headers: [String] = []) -> ServeResponse {
        var members = [("reason", JSONText.string(reason))]
        if let libraryStatus { members.append(("status", JSONText.string(libraryStatus))) }
        members.append(("message", JSONText.string(message)))
        var r = json(status, JSONText.object([("error", JSONText.object(members))]))
        r.headers = headers
        return r
    }
}

enum ServeContentType {
    case json, prometheus
}

/// The routes, in one table: the OpenAPI description (spec/serve.openapi.json) is checked against it by the tool's
/// tests (`serve --print-routes`).
enum ServeRoute: String, CaseIterable {
    case notification, healthz, metrics, customer, subscription, events, summary

    var method: String { self == .notification ? "POST" : "GET" }

    var template: String {
        switch self {
        case .notification: "/notifications/{environment}"
        case .healthz: "/healthz"
        case .metrics: "/metrics"
        case .customer: "/v1/{environment}/customers/{customerId}"
        case .subscription: "/v1/{environment}/subscriptions/{originalTransactionId}"
        case .events: "/v1/{environment}/events"
        case .summary: "/v1/{environment}/summary"
        }
    }

    /// Query endpoints need the API key.
    var needsKey: Bool { [.customer, .subscription, .events, .summary].contains(self) }

    /// The path parameters if `segments` match the template.
    func match(_ segments: [Substring]) -> [String: String]? {
        let parts = template.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == segments.count else { return nil }
        var params: [String: String] = [:]
        for (p, s) in zip(parts, segments) {
            if p.hasPrefix("{") {
                guard !s.isEmpty, let value = ServeApp.percentDecoded(s) else { return nil }
                params[String(p.dropFirst().dropLast())] = value
            } else if p != s {
                return nil
            }
        }
        return params
    }

    static var table: String {
        JSONText.array(allCases.map { JSONText.object([("method", JSONText.string($0.method)), ("path", JSONText.string($0.template))]) })
    }
}

/// What `serve` does with a request: the routes, over the public Swift API (`LedgerEvent.verify`, `Ledger.ingest`,
/// `Ledger.customer` / `subscription` / `summary`). Called on the HTTP layer's connection threads, concurrently:
/// everything it holds is immutable, locked (`Locked`), or thread-safe (`Ledger`, `SignedDataVerifier`).
final class ServeApp: Sendable {
    let ledgers: [ServeEnvironment: Ledger]
    let apiKey: [UInt8]?
    let metricsWithoutKey: Bool
    let telemetry: ServeTelemetry
    let logPayloads: Bool
    /// How many connections are open, whether the server is stopping (from the HTTP layer).
    let connections: @Sendable () -> Int
    let stopping: @Sendable () -> Bool

    init(ledgers: [ServeEnvironment: Ledger], apiKey: [UInt8]?, metricsWithoutKey: Bool = false, telemetry: ServeTelemetry,
         logPayloads: Bool, connections: @escaping @Sendable () -> Int, stopping: @escaping @Sendable () -> Bool) {
        self.ledgers = ledgers
        self.apiKey = apiKey
        self.metricsWithoutKey = metricsWithoutKey
        self.telemetry = telemetry
        self.logPayloads = logPayloads
        self.connections = connections
        self.stopping = stopping
    }

    func handle(_ request: ServeRequest) -> ServeResponse {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false)
        var allowed: [String] = []
        for route in ServeRoute.allCases {
            guard let params = route.match(segments) else { continue }
            guard route.method == request.method else {
                allowed.append(route.method)
                continue
            }
            let response = dispatch(route, params, request)
            telemetry.count { $0.requests[route.rawValue, default: [:]][response.status, default: 0] += 1 }
            return response
        }
        if !allowed.isEmpty {
            return .error(405, "method_not_allowed", "\(request.method) is not allowed here",
                          headers: ["Allow: \(Set(allowed + (allowed.contains("GET") ? ["HEAD"] : [])).sorted().joined(separator: ", "))"])
        }
        return .error(404, "not_found", "no such route (docs/serve.md, spec/serve.openapi.json)")
    }

    private func dispatch(_ route: ServeRoute, _ params: [String: String], _ request: ServeRequest) -> ServeResponse {
        switch route {
        case .healthz: return health()
        case .metrics:
            // The counters tell how much each environment receives and the version: the API key's, unless a
            // scraper on loopback was let in explicitly (--metrics-without-key).
            if !(metricsWithoutKey && ServeApp.isLoopback(request.remote)), let refusal = authorize(request) { return refusal }
            var r = ServeResponse(status: 200, body: Array(telemetry.prometheus(connections: connections()).utf8))
            r.contentType = .prometheus
            return r
        default: break
        }
        // Every other route names an environment this server keeps a ledger for.
        let name = params["environment"] ?? ""
        guard let env = ServeEnvironment(rawValue: name), let ledger = ledgers[env] else {
            let served = ledgers.keys.sorted().map(\.rawValue).joined(separator: ", ")
            return .error(404, "environment_not_served",
                          "this server keeps no ledger for \(QuotedText.quote(name)) (it serves: \(served))")
        }
        if route == .notification { return notification(env, ledger, request) }
        if let refusal = authorize(request) { return refusal }
        let query: [String: String]
        switch ServeApp.queryItems(request.query) {
        case .success(let q): query = q
        case .failure(let r): return r.response
        }
        let response: ServeResponse
        do throws(LedgerError) {
            switch route {
            case .customer:
                let at: (at: Int64?, asOf: Int64?)
                switch ServeApp.instant(query) {
                case .success(let t): at = t
                case .failure(let r): return r.response
                }
                let c = try ledger.customer(params["customerId"] ?? "", at: at.at, asOf: at.asOf)
                response = ServeResponse(status: 200, body: c.json())
            case .subscription:
                let at: (at: Int64?, asOf: Int64?)
                switch ServeApp.instant(query) {
                case .success(let t): at = t
                case .failure(let r): return r.response
                }
                let id = params["originalTransactionId"] ?? ""
                guard let s = try ledger.subscription(id, at: at.at, asOf: at.asOf) else {
                    return .error(404, "not_found", "the ledger knows no transaction of subscription \(QuotedText.quote(id)) at that instant")
                }
                response = ServeResponse(status: 200, body: s.json())
            case .events:
                if let bad = query.keys.first(where: { $0 != "limit" && $0 != "before" }) {
                    return .error(400, "invalid_argument", "unknown query parameter \(QuotedText.quote(bad)) (limit, before)")
                }
                var limit = 100
                if let text = query["limit"] {
                    guard let n = Int(text), (1...Ledger.maximumRecentEvents).contains(n) else {
                        return .error(400, "invalid_argument", "limit: expected 1 to \(Ledger.maximumRecentEvents)")
                    }
                    limit = n
                }
                var before: Int64?
                if let text = query["before"] {
                    guard let n = Int64(text), n >= 1 else { return .error(400, "invalid_argument", "before: expected an eventId") }
                    before = n
                }
                // From the ledger's database: every process's events (several servers on one PostgreSQL ledger).
                let records = try ledger.recentEvents(limit: limit, before: before)
                let events = records.map {
                    JSONText.object([("eventId", String($0.eventId)), ("receivedAt", String($0.receivedAt)),
                                     ("result", String(decoding: $0.result.json(), as: UTF8.self))])
                }
                var members = [("events", JSONText.array(events))]
                if records.count == limit, let last = records.last { members.append(("nextBefore", String(last.eventId))) }
                response = .json(200, JSONText.object(members))
            case .summary:
                if let bad = query.keys.first { return .error(400, "invalid_argument", "unknown query parameter \(QuotedText.quote(bad))") }
                response = ServeResponse(status: 200, body: try ledger.summary().json())
            default:
                response = .error(404, "not_found", "no such route")
            }
        } catch {
            telemetry.log("error", "query_failed", [("environment", .string(env.rawValue)), ("route", .string(route.rawValue)),
                                                    ("status", .string(error.statusCode.name)), ("message", .string(error.message))])
            return .error(503, "storage_unavailable", "the ledger cannot be read now: \(error.message)",
                          libraryStatus: error.statusCode.name, headers: ["Retry-After: 5"])
        }
        telemetry.log("info", "query", [("environment", .string(env.rawValue)), ("route", .string(route.rawValue)),
                                        ("status", .int(Int64(response.status))), ("remote", .string(request.remote))])
        return response
    }

    // MARK: notifications

    /// The delivery contract (docs/serve.md): 200 only once the ledger has made the notification durable (a
    /// duplicate too); 4xx for what is not a genuine notification of this app in this environment (nothing
    /// stored); 5xx for a failure of ours, so that Apple sends it again.
    private func notification(_ env: ServeEnvironment, _ ledger: Ledger, _ request: ServeRequest) -> ServeResponse {
        let e = env.rawValue
        telemetry.count { $0.received[e, default: 0] += 1 }
        var fields: [(String, LogValue)] = [("environment", .string(e)), ("remote", .string(request.remote))]
        if let f = request.forwardedFor { fields.append(("forwardedFor", .string(String(f.prefix(200))))) }
        fields.append(("bodyBytes", .int(Int64(request.body.count))))

        guard let body = JSONValue.parse(request.body), body.object != nil, let jws = body["signedPayload"]?.stringValue else {
            telemetry.count { $0.rejected[e, default: [:]]["malformed_body", default: 0] += 1 }
            fields += [("status", .int(400)), ("outcome", .string("rejected")), ("reason", .string("malformed_body"))]
            telemetry.log("warn", "notification", fields)
            return .error(400, "malformed_body", "expected a JSON object with a \"signedPayload\" string (App Store Server Notifications V2)")
        }
        if logPayloads { fields.append(("signedPayload", .string(jws))) }

        let t0 = ServeApp.monotonicSeconds()
        let event: LedgerEvent
        switch LedgerEvent.verify(notification: jws, with: ledger.verifier) {
        case .success(let v): event = v
        case .failure(let f):
            let (status, ours) = ServeApp.httpStatus(f)
            telemetry.count {
                if ours { $0.failed[e, default: [:]][f.reason.name, default: 0] += 1 }
                else { $0.rejected[e, default: [:]][f.reason.name, default: 0] += 1 }
            }
            fields += [("status", .int(Int64(status))), ("outcome", .string(ours ? "failed" : "rejected")),
                       ("reason", .string(f.reason.name)), ("verifierStatus", .string(f.statusCode.name)),
                       ("message", .string(f.message))]
            telemetry.log(ours ? "error" : "warn", "notification", fields)
            return .error(status, f.reason.name, f.message, libraryStatus: f.statusCode.name,
                          headers: status == 503 ? ["Retry-After: 60"] : [])
        }
        let t1 = ServeApp.monotonicSeconds()
        telemetry.count {
            $0.verified[e, default: 0] += 1
            $0.verify.observe(t1 - t0)
        }
        let result: LedgerIngestResult
        do throws(LedgerError) {
            result = try ledger.ingest(event)
        } catch {
            telemetry.count { $0.failed[e, default: [:]]["storage", default: 0] += 1 }
            fields += [("status", .int(503)), ("outcome", .string("failed")), ("reason", .string("storage")),
                       ("verifierStatus", .string(error.statusCode.name)), ("message", .string(error.message))]
            telemetry.log("error", "notification", fields)
            return .error(503, "storage", "the notification was not stored: \(error.message)",
                          libraryStatus: error.statusCode.name, headers: ["Retry-After: 60"])
        }
        let t2 = ServeApp.monotonicSeconds()
        let json = String(decoding: result.json(), as: UTF8.self)
        telemetry.count {
            if result.stored { $0.stored[e, default: 0] += 1 } else { $0.duplicates[e, default: 0] += 1 }
            // Once per notification: a duplicate delivery (stored: false) counts nothing.
            if result.stored && result.verdict == .contradiction { $0.disagreements[e, default: 0] += 1 }
            if result.stored && result.verdict == .incompleteHistory { $0.incompleteHistory[e, default: 0] += 1 }
            $0.ingest.observe(t2 - t1)
        }
        fields += [("status", .int(200)), ("outcome", .string(result.stored ? "stored" : "duplicate"))]
        if let id = result.notificationUUID { fields.append(("notificationUUID", .string(id))) }
        if let t = result.notificationType { fields.append(("notificationType", .string(t.rawValue))) }
        if let s = result.subtype { fields.append(("subtype", .string(s.rawValue))) }
        if let o = result.originalTransactionId { fields.append(("originalTransactionId", .string(o))) }
        if let v = result.verdict, v != .agrees {
            fields.append(("agreesWithApple", .bool(false)))
            fields.append(("oracle", .string(v.rawValue)))
            if let m = result.missing { fields.append(("missing", .string(m))) }
        }
        fields += [("verifyMs", .double(((t1 - t0) * 1e6).rounded() / 1000)), ("ingestMs", .double(((t2 - t1) * 1e6).rounded() / 1000))]
        // A warning is a contradiction between signed facts and Apple's data.status, once (not a duplicate); missing
        // history is information (docs/ledger.md, "Disagreements").
        telemetry.log(result.stored && result.verdict == .contradiction ? "warn" : "info", "notification", fields)
        return .json(200, json)
    }

    /// The HTTP status for a refused notification, and whether the failure is ours (5xx: Apple should retry).
    ///   400 the body or the JWS is malformed (INVALID_JWT_FORMAT: not a JWS, undecodable, too large);
    ///   403 not genuine (VERIFICATION_FAILURE, INVALID_CHAIN_LENGTH, INVALID_CERTIFICATE: signature, chain, roots);
    ///   422 genuine but not for this endpoint (INVALID_APP_IDENTIFIER, INVALID_ENVIRONMENT: another app, another
    ///       environment, another kind of payload);
    ///   503 the revocation check could not be made (RETRYABLE_VERIFICATION_FAILURE: OCSP unreachable);
    ///   500 anything else (a configuration or internal failure).
    static func httpStatus(_ f: VerificationFailure) -> (Int, ours: Bool) {
        switch f.statusCode {
        case .invalidJwtFormat: (400, false)
        case .verificationFailure, .invalidChainLength, .invalidCertificate: (403, false)
        case .invalidAppIdentifier, .invalidEnvironment: (422, false)
        case .retryableVerificationFailure: (503, true)
        default: (500, true)
        }
    }

    // MARK: operations

    private func health() -> ServeResponse {
        if stopping() { return .error(503, "stopping", "the server is shutting down") }
        var problems: [String] = []
        for (env, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
            do throws(LedgerError) {
                _ = try ledger.subscription("", at: 0)  // reads the database (PRAGMA data_version): it must answer
            } catch {
                problems.append("\(env.rawValue): \(error.message)")
            }
        }
        let envs = JSONText.array(ledgers.keys.sorted().map { JSONText.string($0.rawValue) })
        guard problems.isEmpty else {
            return .json(503, JSONText.object([("status", JSONText.string("unavailable")), ("environments", envs),
                                               ("problems", JSONText.array(problems.map(JSONText.string)))]))
        }
        return .json(200, JSONText.object([("status", JSONText.string("ok")), ("environments", envs),
                                           ("version", JSONText.string(AppStoreServerVersion.string))]))
    }

    // MARK: the API key

    /// nil when the request may proceed; else the refusal (401 without a key or with a wrong one, 403 when this
    /// server has no key configured).
    /// Whether the peer ("address:port", "[v6]:port") is on loopback: 127.0.0.0/8, ::1, or ::ffff:127.x.
    static func isLoopback(_ remote: String) -> Bool {
        remote.hasPrefix("127.") || remote.hasPrefix("[::1]:") || remote.hasPrefix("[::ffff:127.")
    }

    private func authorize(_ request: ServeRequest) -> ServeResponse? {
        guard let apiKey else {
            return .error(403, "queries_disabled", "no API key is configured on this server (apiKeyFile, \(ServeConfig.apiKeyVariable)): the query endpoints and /metrics are off (--metrics-without-key opens /metrics to loopback)")
        }
        let challenge = ["WWW-Authenticate: Bearer realm=\"appstoreserver\""]
        guard let auth = request.authorization, auth.count > 7, auth.prefix(7).lowercased() == "bearer " else {
            return .error(401, "unauthorized", "send the API key as Authorization: Bearer KEY", headers: challenge)
        }
        guard ServeApp.constantTimeEquals(Array(auth.utf8.dropFirst(7)), apiKey) else {
            telemetry.log("warn", "unauthorized", [("remote", .string(request.remote)), ("path", .string(String(request.path.prefix(200))))])
            return .error(401, "unauthorized", "wrong API key", headers: challenge)
        }
        return nil
    }

    /// Compares in time that depends only on the length of what was sent, never on where the first difference is.
    static func constantTimeEquals(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
        var diff = UInt8(truncatingIfNeeded: given.count ^ expected.count)
        diff |= given.count == expected.count ? 0 : 1
        for i in 0..<given.count {
            diff |= given[i] ^ expected[i % expected.count]
        }
        return diff == 0
    }

    // MARK: parsing

    static func percentDecoded(_ s: Substring) -> String? {
        var bytes: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "%") {
                guard it.count >= 2, let hi = hex(it.popFirst()!), let lo = hex(it.popFirst()!) else { return nil }
                bytes.append(hi << 4 | lo)
            } else {
                bytes.append(b)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self), !text.contains("/"),
              !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else { return nil }
        return text
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func queryItems(_ query: String) -> Result<[String: String], ServeResponseError> {
        var items: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = percentDecoded(kv[0]), let value = percentDecoded(kv.count > 1 ? kv[1] : ""), items[key] == nil else {
                return .failure(ServeResponseError(.error(400, "invalid_argument", "malformed or repeated query parameter")))
            }
            items[key] = value
        }
        return .success(items)
    }

    /// `at` (the only parameter of the state queries): milliseconds since 1970 or an ISO 8601 date-time; absent: now.
    /// `?at=` (the instant asked about) and `?asOf=` (the knowledge time), each milliseconds since 1970 or an ISO
    /// 8601 date-time; absent: now.
    static func instant(_ query: [String: String]) -> Result<(at: Int64?, asOf: Int64?), ServeResponseError> {
        if let bad = query.keys.first(where: { $0 != "at" && $0 != "asOf" }) {
            return .failure(ServeResponseError(.error(400, "invalid_argument", "unknown query parameter \(QuotedText.quote(bad)) (at, asOf)")))
        }
        func parse(_ name: String) -> Result<Int64?, ServeResponseError> {
            guard let value = query[name] else { return .success(nil) }
            if let ms = Int64(value), ms > 0 { return .success(ms) }
            if let date = try? Date(value, strategy: .iso8601), date.timeIntervalSince1970 >= 0 {
                return .success(Int64((date.timeIntervalSince1970 * 1000).rounded()))
            }
            return .failure(ServeResponseError(.error(400, "invalid_argument",
                "\(name): expected milliseconds since 1970 or an ISO 8601 date-time (2025-04-01T00:00:00Z)")))
        }
        return parse("at").flatMap { at in parse("asOf").map { (at, $0) } }
    }

    static func monotonicSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// A response carried as an error (parsing helpers).
struct ServeResponseError: Error {
    let response: ServeResponse
    init(_ response: ServeResponse) { self.response = response }
}
