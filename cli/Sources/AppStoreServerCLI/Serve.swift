import AppStoreServer
import ArgumentParser
import CLIServe
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// `appstoreserver serve`: App Store Server Notifications V2 in, verified, into the purchase ledger (docs/serve.md).
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Receive App Store Server Notifications: verify each, store it in the ledger, answer 200 once it is durable.",
        discussion: """
            An HTTP/1.1 server (loopback by default; put a TLS reverse proxy such as nginx in front, serve.md) \
            with one notification URL per environment: POST /notifications/production and \
            /notifications/sandbox, each with its own ledger (a ledger holds one app's data in one environment). \
            Each post is verified deeply (signature, Apple's chain, bundle id, App Apple ID, environment; the \
            transaction and renewal info inside too) and stored; the answer is 200 only once the ledger has made it \
            durable, and a notification already stored is 200 too. A forged, malformed or wrong-app post is a 4xx \
            and changes nothing; a failure of ours (the database, the disk) is a 5xx, so Apple sends it again.

            With an API key (--api-key-file, or $APPSTORE_SERVE_API_KEY; never a flag's value): GET \
            /v1/ENV/customers/ID (entitlements), /v1/ENV/subscriptions/ID, /v1/ENV/events, /v1/ENV/summary \
            (spec/serve.openapi.json), GET /metrics (Prometheus; --metrics-without-key opens it to loopback clients). \
            Always: GET /healthz. Logs: JSON lines on \
            stdout. SIGTERM or SIGINT: stop accepting, finish the requests begun, close the ledgers, exit 0.

            Flags override the configuration file (--config, JSON, serve.md).

            EXAMPLES
              appstoreserver serve --bundle-id com.example.app --app-apple-id 1234567890 \\
                  --ledger production=/var/lib/appstoreserver/production.db \\
                  --ledger sandbox=/var/lib/appstoreserver/sandbox.db \\
                  --api-key-file /etc/appstoreserver/api-key
              appstoreserver serve --config /etc/appstoreserver/serve.json
              # check the configuration, open the ledgers, exit:
              appstoreserver serve --config serve.json --check
              # and catch up on missed notifications hourly (serve.md, "sync"):
              appstoreserver serve --config serve.json --sync-interval 3600 --key key.p8 \\
                  --key-id ABC123 --issuer-id 57246542-96fe-1a63-e053-0824d011072a
            """
    )

    @Option(help: ArgumentHelp("A JSON configuration file (serve.md); the flags below override it.", valueName: "file"))
    var config: String?
    @Option(help: ArgumentHelp("Where to listen: host:port, [v6]:port or a port (default: 127.0.0.1:8080; port 0: any free one, logged).", valueName: "address"))
    var listen: String?
    @Option(help: "The app's bundle id (default: $APPSTORE_BUNDLE_ID).")
    var bundleId: String?
    @Option(help: "The app's App Apple ID (required to accept production notifications).")
    var appAppleId: Int64?
    @Option(name: .customLong("ledger"), help: ArgumentHelp("An environment to accept and its ledger: production=URL or sandbox=URL, the URL sqlite:/path/ledger.db, a path, or postgresql://user@host/db, which several servers may share (repeatable; replaces the file's \"ledgers\").", valueName: "env=url"))
    var ledgers: [String] = []
    @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: Apple's roots as the library carries them).", valueName: "file"))
    var roots: [String] = []
    @Option(help: ArgumentHelp("A file holding the API key for the query endpoints (or set $APPSTORE_SERVE_API_KEY).", valueName: "file"))
    var apiKeyFile: String?
    @Flag(help: "Also ask Apple's OCSP responders whether a certificate was revoked (an unreachable responder is a 503).")
    var onlineChecks = false
    @Option(help: "The largest request body accepted, in bytes (default 65536).")
    var maxBodyBytes: Int?
    @Option(help: "The most connections open at once (default 256); one more is answered 503.")
    var maxConnections: Int?
    @Option(help: "Seconds a client has to send a request's headers (default 10).")
    var headerTimeout: Double?
    @Option(help: "Seconds a kept-alive connection may wait for its next request (default 60).")
    var idleTimeout: Double?
    @Option(help: "The most requests one connection may send (default 1000); the last is answered with Connection: close.")
    var maxRequestsPerConnection: Int?
    @Option(help: "Seconds after which a connection takes no new request (default 60; its last answer says Connection: close).")
    var maxConnectionSeconds: Double?
    @Option(help: "The most connections open at once from one client address (default 0: no cap but --max-connections; behind a proxy all come from the proxy).")
    var maxConnectionsPerAddress: Int?
    @Flag(help: "Answer GET /metrics without the API key to clients on loopback (a local Prometheus); by default /metrics needs the key.")
    var metricsWithoutKey = false
    @Flag(help: "Log each notification's signedPayload (debugging only: the logs then hold customers' data).")
    var logPayloads = false
    @Flag(help: "Check the configuration and open the ledgers, then exit.")
    var check = false
    @OptionGroup var sync: ServeSyncOptions
    @Flag(help: .hidden) var printRoutes = false

    func run() throws {
        if printRoutes {
            Output.line(ServeRoute.table)
            return
        }
        try reporting {
            let config = try configuration()
            guard !config.ledgers.isEmpty else {
                throw ToolFailure.usage("no environment to serve: pass --ledger production=URL and/or --ledger sandbox=URL (or \"ledgers\" in --config)")
            }
            let bundle = try fromEnvironment(config.bundleId, "APPSTORE_BUNDLE_ID", option: "--bundle-id")
            let urls = config.ledgers.values.map { $0 }
            guard Set(urls).count == urls.count else {
                throw ServeConfig.configurationError("production and sandbox need ledgers of their own (one URL was given for both)")
            }
            let apiKey = try config.apiKey()
            let periodic = try sync.make(config, bundle: bundle)
            var ledgers: [ServeEnvironment: Ledger] = [:]
            for (env, url) in config.ledgers.sorted(by: { $0.key < $1.key }) {
                let verifier = try config.verifier(env, bundleId: bundle)
                try Serve.makeLedgerFolder(url)
                do throws(LedgerError) {
                    ledgers[env] = try Ledger.open(url, verifier: verifier)
                } catch {
                    throw ToolFailure(error, error.statusCode == .invalidArgument ? .usage : .configuration)
                }
            }
            if check {
                Output.error("serve: configuration ok: \(ledgers.keys.sorted().map { "\($0.rawValue) → \(ServeTelemetry.redactedURL(config.ledgers[$0]!))" }.joined(separator: ", "))"
                             + (apiKey == nil ? "; no API key (query endpoints off)" : "; API key set"))
                return
            }
            try Serve.serve(config, bundle, consume ledgers, apiKey, periodic)
        }
    }

    /// A SQLite ledger's folder: made (with its parents, mode 0750) when it does not exist yet, as a first run from the
    /// README's command needs; when it cannot be made, the error names the folder and why.
    static func makeLedgerFolder(_ url: String) throws(ToolFailure) {
        guard url.hasPrefix("sqlite:") else { return }
        var path = String(url.dropFirst("sqlite:".count))
        if let query = path.firstIndex(of: "?") { path = String(path[..<query]) }
        guard !path.hasPrefix(":memory:"), let slash = path.lastIndex(of: "/") else { return }
        let folder = String(path[..<slash])
        guard !folder.isEmpty else { return }
        var made: [String] = []
        var prefix = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            prefix += "/" + part
            var st = stat()
            if stat(prefix, &st) == 0 {
                guard (st.st_mode & S_IFMT) == S_IFDIR else {
                    throw ServeConfig.configurationError("the ledger's folder \(folder) cannot be made: \(prefix) is not a folder")
                }
                continue
            }
            guard errno == ENOENT, mkdir(prefix, 0o750) == 0 || errno == EEXIST else {
                let why = String(cString: strerror(errno))
                throw ServeConfig.configurationError("the ledger's folder \(folder) does not exist and cannot be made (\(prefix): \(why)); make it, or give --ledger another path")
            }
            made.append(prefix)
        }
        if !made.isEmpty { Output.error("serve: made the ledger's folder \(folder)") }
    }

    /// The file's values, then the flags.
    func configuration() throws(ToolFailure) -> ServeConfig {
        var c = ServeConfig()
        if let config { try c.load(file: config) }
        if let listen { try c.setListen(listen, "--listen") }
        if let bundleId { c.bundleId = bundleId }
        if let appAppleId { c.appAppleId = appAppleId }
        if !roots.isEmpty { c.roots = roots }
        if !ledgers.isEmpty {
            c.ledgers = [:]
            for item in ledgers {
                guard let eq = item.firstIndex(of: "=") else {
                    throw ToolFailure.usage("--ledger \(QuotedText.quote(item)): expected production=URL or sandbox=URL")
                }
                do throws(ToolFailure) {
                    try c.setLedger(String(item[..<eq]), String(item[item.index(after: eq)...]), "--ledger", relativeTo: nil)
                } catch {
                    throw ToolFailure.usage(error.message)
                }
            }
        }
        if let apiKeyFile {
            if QuotedText.looksLikeKey(apiKeyFile) || !apiKeyFile.contains("/") && access(apiKeyFile, F_OK) != 0 {
                throw ToolFailure.usage("--api-key-file takes the path of a file holding the key, and no such file exists (the key itself is never given on the command line: use the file or $\(ServeConfig.apiKeyVariable))")
            }
            c.apiKeyFile = apiKeyFile
        }
        if onlineChecks { c.onlineChecks = true }
        if let maxBodyBytes {
            guard (1024...(16 << 20)).contains(maxBodyBytes) else { throw ToolFailure.usage("--max-body-bytes: 1024 to 16777216") }
            c.limits.maxBodyBytes = maxBodyBytes
        }
        if let maxConnections {
            guard (1...10_000).contains(maxConnections) else { throw ToolFailure.usage("--max-connections: 1 to 10000") }
            c.limits.maxConnections = maxConnections
        }
        if let headerTimeout {
            guard headerTimeout > 0, headerTimeout <= 3600 else { throw ToolFailure.usage("--header-timeout: 0 < seconds <= 3600") }
            c.limits.headerTimeout = headerTimeout
        }
        if let idleTimeout {
            guard idleTimeout > 0, idleTimeout <= 3600 else { throw ToolFailure.usage("--idle-timeout: 0 < seconds <= 3600") }
            c.limits.idleTimeout = idleTimeout
        }
        if let maxRequestsPerConnection {
            guard (1...1_000_000).contains(maxRequestsPerConnection) else { throw ToolFailure.usage("--max-requests-per-connection: 1 to 1000000") }
            c.limits.maxRequestsPerConnection = maxRequestsPerConnection
        }
        if let maxConnectionSeconds {
            guard maxConnectionSeconds > 0, maxConnectionSeconds <= 3600 else { throw ToolFailure.usage("--max-connection-seconds: 0 < seconds <= 3600") }
            c.limits.maxConnectionSeconds = maxConnectionSeconds
        }
        if let maxConnectionsPerAddress {
            guard (0...10_000).contains(maxConnectionsPerAddress) else { throw ToolFailure.usage("--max-connections-per-address: 0 to 10000") }
            c.limits.maxConnectionsPerAddress = maxConnectionsPerAddress
        }
        if metricsWithoutKey { c.metricsWithoutKey = true }
        if logPayloads { c.logPayloads = true }
        return c
    }

    /// Serves until SIGTERM / SIGINT. The ledgers are consumed: the app holds the only references, so releasing it
    /// closes them.
    static func serve(_ config: ServeConfig, _ bundle: String, _ ledgers: consuming [ServeEnvironment: Ledger],
                      _ apiKey: [UInt8]?, _ periodic: ServeSync? = nil) throws(ToolFailure) {
        let l = config.limits
        func ms(_ seconds: Double) -> UInt32 { UInt32(min(seconds * 1000, Double(UInt32.max))) }
        var limits = cli_serve_limits(max_header_bytes: l.maxHeaderBytes, max_body_bytes: l.maxBodyBytes,
                                      header_timeout_ms: ms(l.headerTimeout), body_timeout_ms: ms(l.bodyTimeout),
                                      idle_timeout_ms: ms(l.idleTimeout), write_timeout_ms: ms(l.writeTimeout),
                                      max_connections: UInt32(l.maxConnections), drain_timeout_ms: ms(l.drainTimeout),
                                      max_requests_per_connection: UInt32(l.maxRequestsPerConnection),
                                      max_connection_lifetime_ms: ms(l.maxConnectionSeconds),
                                      max_connections_per_address: UInt32(l.maxConnectionsPerAddress))
        var error = [CChar](repeating: 0, count: 512)
        guard let server = cli_serve_listen(config.host, config.port, &limits, &error, error.count) else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ToolFailure(.configuration, status: "CONFIGURATION_ERROR", reason: "invalid_argument", message)
        }
        let handle = ServeServerHandle(server)
        let envs = ledgers.keys.sorted()
        let telemetry = ServeTelemetry(environments: envs.map(\.rawValue), syncs: periodic != nil)
        periodic?.attach(ledgers)  // shared with the sync thread, released by it when it stops
        // The context holds the app, and the app the only references to the ledgers (no local keeps them).
        let context = Unmanaged.passRetained(ServeContext(ServeApp(
            ledgers: consume ledgers, apiKey: apiKey, metricsWithoutKey: config.metricsWithoutKey, telemetry: telemetry,
            logPayloads: config.logPayloads,
            connections: { Int(cli_serve_connections(handle.pointer)) },
            stopping: { cli_serve_is_stopping(handle.pointer) != 0 })))
        let port = cli_serve_port(server)
        telemetry.log("info", "listening", [
            ("address", .string(config.host)), ("port", .int(Int64(port))),
            ("environments", .json(JSONText.array(envs.map { JSONText.string($0.rawValue) }))),
            ("ledgers", .json(JSONText.object(envs.map { ($0.rawValue, JSONText.string(ServeTelemetry.redactedURL(config.ledgers[$0]!))) }))),
            ("bundleId", .string(bundle)), ("appAppleId", config.appAppleId.map { .int($0) } ?? .json("null")),
            ("trustAnchors", .string(config.roots.isEmpty ? "Apple roots (library)" : config.roots.joined(separator: ", "))),
            ("onlineChecks", .bool(config.onlineChecks)), ("queryEndpoints", .bool(apiKey != nil)),
            ("maxBodyBytes", .int(Int64(l.maxBodyBytes))), ("maxHeaderBytes", .int(Int64(l.maxHeaderBytes))),
            ("maxConnections", .int(Int64(l.maxConnections))), ("headerTimeoutSeconds", .double(l.headerTimeout)),
            ("bodyTimeoutSeconds", .double(l.bodyTimeout)), ("idleTimeoutSeconds", .double(l.idleTimeout)),
            ("maxRequestsPerConnection", .int(Int64(l.maxRequestsPerConnection))),
            ("maxConnectionSeconds", .double(l.maxConnectionSeconds)),
            ("maxConnectionsPerAddress", .int(Int64(l.maxConnectionsPerAddress))),
            ("metricsWithoutKey", .bool(config.metricsWithoutKey)),
            ("version", .string(AppStoreServerVersion.string)),
        ])
        cli_serve_stop_on_signals(server)
        periodic?.start(telemetry)
        let busy = cli_serve_run(server, serveHandler, serveEvent, context.toOpaque())
        guard busy == 0 else {
            // Requests still running hold the ledgers: leave everything allocated and exit; SQLite's journal makes
            // an unfinished transaction as if it never began (and its request was never answered 200).
            telemetry.log("error", "stopped", [("busyConnections", .int(Int64(busy))),
                                               ("message", .string("the drain timeout passed with requests still running"))])
            Glibc.exit(1)
        }
        if let periodic, !periodic.stop(waitingUpTo: l.drainTimeout) {
            // Its cursor is at its last durable page: the next start resumes there.
            telemetry.log("warn", "stopped", [("message", .string("every request begun was answered; the sync was still running at the drain timeout"))])
            Glibc.exit(0)
        }
        cli_serve_free(server)
        context.release()  // the last references to the ledgers: each closes its database
        telemetry.log("info", "stopped", [("message", .string("every request begun was answered; ledgers closed"))])
    }
}

/// The C server, shared with the app's closures (read-only after start).
final class ServeServerHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// What the C callbacks reach through their context pointer.
final class ServeContext {
    let app: ServeApp
    init(_ app: ServeApp) { self.app = app }
}

extension ServeTelemetry {
    /// A ledger URL for logs: a PostgreSQL URL's password (in the user info or the parameters) replaced.
    static func redactedURL(_ url: String) -> String {
        guard !url.hasPrefix("sqlite:") else { return url }
        var out = url
        if let scheme = out.firstRange(of: "://"), let at = out[scheme.upperBound...].firstIndex(of: "@"),
           let colon = out[scheme.upperBound..<at].firstIndex(of: ":") {
            out.replaceSubrange(colon..<at, with: ":***")
        }
        if let q = out.firstIndex(of: "?") {
            let params = out[out.index(after: q)...].split(separator: "&")
                .map { $0.lowercased().hasPrefix("password=") ? "password=***" : String($0) }
            out = String(out[...q]) + params.joined(separator: "&")
        }
        return out
    }
}

nonisolated(unsafe) private let prometheusContentType = strdup("text/plain; version=0.0.4; charset=utf-8")

private func mallocCopy(_ bytes: [UInt8]) -> UnsafeMutablePointer<UInt8>? {
    guard !bytes.isEmpty, let p = malloc(bytes.count)?.assumingMemoryBound(to: UInt8.self) else { return nil }
    bytes.withUnsafeBufferPointer { p.initialize(from: $0.baseAddress!, count: $0.count) }
    return p
}

private let serveHandler: cli_serve_handler = { context, request, response in
    guard let context, let request, let response else { return }
    let app = Unmanaged<ServeContext>.fromOpaque(context).takeUnretainedValue().app
    let r = request.pointee
    func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } }
    let body = r.body_len == 0 ? [] : [UInt8](UnsafeBufferPointer(start: r.body, count: r.body_len))
    let req = ServeRequest(method: text(r.method) ?? "", path: text(r.path) ?? "/", query: text(r.query) ?? "",
                           authorization: text(r.authorization), forwardedFor: text(r.forwarded_for),
                           remote: text(r.remote) ?? "", body: body, connection: r.connection_id)
    let out = app.handle(req)
    response.pointee.status = Int32(out.status)
    response.pointee.content_type = out.contentType == .prometheus ? UnsafePointer(prometheusContentType) : nil
    response.pointee.headers = out.headers.isEmpty ? nil : strdup(out.headers.map { $0 + "\r\n" }.joined())
    response.pointee.body = mallocCopy(out.body)
    response.pointee.body_len = response.pointee.body == nil ? 0 : out.body.count
}

private let serveEvent: cli_serve_event = { context, event, status, remote, detail in
    guard let context, let event else { return }
    let app = Unmanaged<ServeContext>.fromOpaque(context).takeUnretainedValue().app
    let name = String(cString: event)
    var fields: [(String, LogValue)] = []
    if status > 0 { fields.append(("status", .int(Int64(status)))) }
    if let remote, remote.pointee != 0 { fields.append(("remote", .string(String(cString: remote)))) }
    if let detail, detail.pointee != 0 { fields.append(("message", .string(String(cString: detail)))) }
    switch name {
    case "stopped_accepting":
        app.telemetry.log("info", "stopping", fields)
    case "accept_failed", "poll_failed", "no_thread", "out_of_memory":
        app.telemetry.count { $0.refused[name, default: 0] += 1 }
        app.telemetry.log("error", name, fields)
    default:
        app.telemetry.count { $0.refused[name, default: 0] += 1 }
        app.telemetry.log("warn", "refused", [("reason", .string(name))] + fields)
    }
}
