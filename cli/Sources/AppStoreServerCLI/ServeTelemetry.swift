import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

/// A value in a log line.
enum LogValue {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    /// JSON text already (a ledger model).
    case json(String)

    var jsonText: String {
        switch self {
        case .string(let s): JSONText.string(s)
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? String(d) : "null"
        case .bool(let b): b ? "true" : "false"
        case .json(let j): j
        }
    }
}

/// `serve`'s logs and metrics.
///
/// Logs: one JSON object per line on stdout (`time`, `level`, `event`, then the event's fields), written whole under
/// a lock. They never hold the API key, an Authorization header, or a signed payload (unless `logPayloads`).
///
/// Metrics: Prometheus text (docs/serve.md, "Metrics"), counted under one lock.
final class ServeTelemetry: Sendable {
    /// Seconds: from a fraction of a millisecond (a verification) to the SQLite busy timeout (10 s).
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Histogram {
        var counts = [Int](repeating: 0, count: ServeTelemetry.buckets.count)
        var count = 0
        var sum = 0.0

        mutating func observe(_ seconds: Double) {
            for (i, b) in ServeTelemetry.buckets.enumerated() where seconds <= b { counts[i] += 1 }
            count += 1
            sum += seconds
        }
    }

    struct Counters {
        var received: [String: Int] = [:]
        var verified: [String: Int] = [:]
        var stored: [String: Int] = [:]
        var duplicates: [String: Int] = [:]
        var rejected: [String: [String: Int]] = [:]   // environment → reason
        var failed: [String: [String: Int]] = [:]
        var disagreements: [String: Int] = [:]        // contradictions only (the alert)
        var incompleteHistory: [String: Int] = [:]
        var refused: [String: Int] = [:]              // the HTTP layer's refusals, by reason
        var requests: [String: [Int: Int]] = [:]      // route → status
        var verify = Histogram()
        var ingest = Histogram()
        var sync = SyncCounters()
    }

    /// `--sync-interval`'s runs, by environment.
    struct SyncCounters {
        var runs: [String: [String: Int]] = [:]       // environment → outcome
        var pages: [String: Int] = [:]
        var stored: [String: Int] = [:]
        var duplicates: [String: Int] = [:]
        var rejected: [String: [String: Int]] = [:]   // environment → reason
        var unverified: [String: [String: Int]] = [:] // environment → reason: not verified yet, the cursor held
        var lastSuccess: [String: Int64] = [:]
    }

    let environments: [String]
    /// Whether `--sync-interval` runs (its metrics are listed then).
    let syncs: Bool
    let started = Timestamp.nowMilliseconds()
    private let counters = Locked(Counters())
    private let output = Locked(())

    init(environments: [String], syncs: Bool = false) {
        self.environments = environments
        self.syncs = syncs
    }

    func count(_ update: (inout Counters) -> Void) {
        counters.withLock { update(&$0) }
    }

    // MARK: logs

    func log(_ level: String, _ event: String, _ fields: [(String, LogValue)]) {
        var line = "{\"time\":\(JSONText.string(ServeTelemetry.timestamp(Timestamp.nowMilliseconds()))),"
            + "\"level\":\(JSONText.string(level)),\"event\":\(JSONText.string(event))"
        for (key, value) in fields { line += ",\(JSONText.string(key)):\(value.jsonText)" }
        line += "}\n"
        output.withLock { _ in
            var bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeMutableBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
                if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
                offset += n
            }
        }
    }

    /// UTC, milliseconds: 2025-03-03T10:00:00.123Z.
    static func timestamp(_ ms: Int64) -> String {
        var t = time_t(ms / 1000)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return String(ms) }
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))T"
            + "\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2)).\(pad(Int(ms % 1000), 3))Z"
    }

    // MARK: metrics

    func prometheus(connections: Int) -> String {
        let c = counters.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
            let l = labels.isEmpty ? "" : "{" + labels.map { "\($0.0)=\"\(ServeTelemetry.escape($0.1))\"" }.joined(separator: ",") + "}"
            out += "\(name)\(l) \(value)\n"
        }
        func perEnvironment(_ name: String, _ help: String, _ values: [String: Int]) {
            family(name, "counter", help)
            for env in environments { sample(name, [("environment", env)], String(values[env] ?? 0)) }
        }
        func perReason(_ name: String, _ help: String, _ values: [String: [String: Int]]) {
            family(name, "counter", help)
            for env in environments {
                for (reason, n) in (values[env] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    sample(name, [("environment", env), ("reason", reason)], String(n))
                }
            }
        }
        func histogram(_ name: String, _ help: String, _ h: Histogram) {
            family(name, "histogram", help)
            for (i, b) in ServeTelemetry.buckets.enumerated() { sample("\(name)_bucket", [("le", String(b))], String(h.counts[i])) }
            sample("\(name)_bucket", [("le", "+Inf")], String(h.count))
            sample("\(name)_sum", [], String(h.sum))
            sample("\(name)_count", [], String(h.count))
        }
        perEnvironment("appstoreserver_notifications_received_total", "Notification posts received with a complete body.", c.received)
        perEnvironment("appstoreserver_notifications_verified_total", "Notifications the verifier accepted (deep: the transaction and renewal info inside too).", c.verified)
        perEnvironment("appstoreserver_notifications_stored_total", "Notifications made durable in the ledger (200).", c.stored)
        perEnvironment("appstoreserver_notifications_duplicates_total", "Notifications already in the ledger (200, nothing changed).", c.duplicates)
        perReason("appstoreserver_notifications_rejected_total", "Notifications refused with a 4xx, by the verifier's reason (or malformed_body).", c.rejected)
        perReason("appstoreserver_notifications_failed_total", "Notifications answered 5xx because of a failure of ours (storage, online checks unreachable, internal).", c.failed)
        perEnvironment("appstoreserver_oracle_disagreements_total", "Stored notifications whose data.status contradicts the signed facts the ledger decided from (verdict CONTRADICTION; each notification once).", c.disagreements)
        perEnvironment("appstoreserver_oracle_incomplete_history_total", "Stored notifications the ledger cannot check yet: it lacks the history before them (verdict INCOMPLETE_HISTORY; a sync fills it).", c.incompleteHistory)
        family("appstoreserver_http_refused_total", "counter", "Requests and connections refused by the HTTP layer (limits, timeouts, malformed requests), by reason.")
        for (reason, n) in c.refused.sorted(by: { $0.key < $1.key }) { sample("appstoreserver_http_refused_total", [("reason", reason)], String(n)) }
        family("appstoreserver_http_requests_total", "counter", "Requests answered by a route, by route and status.")
        for (route, statuses) in c.requests.sorted(by: { $0.key < $1.key }) {
            for (status, n) in statuses.sorted(by: { $0.key < $1.key }) {
                sample("appstoreserver_http_requests_total", [("route", route), ("code", String(status))], String(n))
            }
        }
        histogram("appstoreserver_verify_duration_seconds", "Time to verify a notification deeply.", c.verify)
        histogram("appstoreserver_ingest_duration_seconds", "Time to make a verified notification durable in the ledger (the SQLite commit and its fsync).", c.ingest)
        if syncs {
            family("appstoreserver_sync_runs_total", "counter", "Runs of --sync-interval's sync, by outcome (ok, rejected, unverified, api_<reason>, failed_<reason>).")
            for env in environments {
                for (outcome, n) in (c.sync.runs[env] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    sample("appstoreserver_sync_runs_total", [("environment", env), ("outcome", outcome)], String(n))
                }
            }
            perEnvironment("appstoreserver_sync_pages_total", "History pages read by the sync.", c.sync.pages)
            perEnvironment("appstoreserver_sync_stored_total", "Values the sync stored in the ledger (missed before).", c.sync.stored)
            perEnvironment("appstoreserver_sync_duplicates_total", "Values the sync found in the ledger already.", c.sync.duplicates)
            perReason("appstoreserver_sync_rejected_total", "Values of Apple's history the verifier refused, by reason.", c.sync.rejected)
            perReason("appstoreserver_sync_unverified_total", "Values that could not be verified yet (an OCSP responder unreachable): the cursor stays before them, the next run retries.", c.sync.unverified)
            family("appstoreserver_sync_last_success_seconds", "gauge", "When a sync last ended without a failed call (seconds since 1970; 0: not yet).")
            for env in environments {
                sample("appstoreserver_sync_last_success_seconds", [("environment", env)], String(Double(c.sync.lastSuccess[env] ?? 0) / 1000))
            }
        }
        family("appstoreserver_connections_open", "gauge", "Connections open now.")
        sample("appstoreserver_connections_open", [], String(connections))
        family("appstoreserver_start_time_seconds", "gauge", "When the server started (seconds since 1970).")
        sample("appstoreserver_start_time_seconds", [], String(Double(started) / 1000))
        family("appstoreserver_build_info", "gauge", "The tool's version.")
        sample("appstoreserver_build_info", [("version", AppStoreServerVersion.string)], "1")
        return out
    }

    static func escape(_ s: String) -> String {
        s.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }
}
