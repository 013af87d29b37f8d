import AppStoreServer
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The environments `serve` accepts notifications from. (Xcode and LocalTesting data carry no Apple signature and
/// are never posted by Apple: they are not served.)
enum ServeEnvironment: String, CaseIterable, Comparable {
    case production, sandbox

    var environment: AppStoreEnvironment { self == .production ? .production : .sandbox }

    static func < (a: ServeEnvironment, b: ServeEnvironment) -> Bool { a.rawValue < b.rawValue }
}

/// The server's limits (docs/serve.md, "Limits"): each is a flag and a member of the configuration file's "limits".
struct ServeLimits {
    /// Apple's notifications are 5-20 KB (a notification with its signed transaction and renewal info, each with
    /// its three-certificate x5c); 64 KiB leaves three times the largest seen and refuses anything else cheaply.
    var maxBodyBytes = 64 * 1024
    var maxHeaderBytes = 16 * 1024
    var headerTimeout = 10.0
    var bodyTimeout = 10.0
    var idleTimeout = 60.0
    var writeTimeout = 10.0
    var maxConnections = 256
    var drainTimeout = 30.0
    /// A kept-alive connection's caps (docs/serve.md, "Limits"): after either, its last answer says Connection:
    /// close, so a client sending a request now and then cannot hold a slot for good.
    var maxRequestsPerConnection = 1000
    var maxConnectionSeconds = 60.0
    /// Connections open at once from one client address; 0: only maxConnections (behind a proxy every connection
    /// comes from the proxy's address).
    var maxConnectionsPerAddress = 0
}

/// What `serve` runs with: the configuration file's values, then the flags over them.
struct ServeConfig {
    var host = "127.0.0.1"
    var port: UInt32 = 8080
    var bundleId: String?
    var appAppleId: Int64?
    /// Trust anchor files; empty: the library's Apple roots (`AppleRootCertificate.all`).
    var roots: [String] = []
    /// One ledger per environment: a ledger holds the data of one app in one environment.
    var ledgers: [ServeEnvironment: String] = [:]
    var apiKeyFile: String?
    var onlineChecks = false
    var ocspTimeout = 10.0
    var limits = ServeLimits()
    var logPayloads = false
    /// GET /metrics without the API key, for clients on loopback (a local scraper); off: /metrics needs the key.
    var metricsWithoutKey = false

    static func configurationError(_ message: String) -> ToolFailure {
        ToolFailure(.configuration, status: "CONFIGURATION_ERROR", reason: "invalid_argument", message)
    }

    /// `host:port`, `[v6]:port`, or a port alone (loopback).
    mutating func setListen(_ text: String, _ source: String) throws(ToolFailure) {
        var host = "127.0.0.1"
        var portText = text
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ServeConfig.configurationError("\(source) \(QuotedText.quote(text)): expected [address]:port")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(close, offsetBy: 2)...])
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, let port = UInt32(portText), port <= 65535 else {
            throw ServeConfig.configurationError("\(source) \(QuotedText.quote(text)): expected host:port, [address]:port or a port (0-65535)")
        }
        self.host = host
        self.port = port
    }

    /// `environment=url` (a flag), or a member of the file's "ledgers".
    mutating func setLedger(_ environment: String, _ url: String, _ source: String, relativeTo base: String?) throws(ToolFailure) {
        guard let env = ServeEnvironment(rawValue: environment.lowercased()) else {
            throw ServeConfig.configurationError("\(source): environment \(QuotedText.quote(environment)): use production or sandbox")
        }
        guard !url.isEmpty else { throw ServeConfig.configurationError("\(source): the \(env.rawValue) ledger URL is empty") }
        ledgers[env] = ServeConfig.ledgerURL(url, relativeTo: base)
    }

    /// A plain path is a SQLite file; a relative one (in a configuration file) is relative to the file's folder.
    static func ledgerURL(_ value: String, relativeTo base: String?) -> String {
        // A URL names its scheme before the first colon; a path has a slash first (or no colon).
        var url = value
        if value.firstIndex(of: ":").map({ value[..<$0].contains("/") }) ?? true { url = "sqlite:" + value }
        guard let base, url.hasPrefix("sqlite:") else { return url }
        let path = String(url.dropFirst("sqlite:".count))
        guard !path.hasPrefix("/"), !path.hasPrefix(":memory:") else { return url }
        return "sqlite:" + resolve(path, relativeTo: base)
    }

    static func resolve(_ path: String, relativeTo base: String?) -> String {
        guard let base, !path.hasPrefix("/") else { return path }
        return base + "/" + path
    }

    /// Reads a configuration file (JSON; docs/serve.md). Unknown members are refused: a misspelt limit must not
    /// silently be the default.
    mutating func load(file path: String) throws(ToolFailure) {
        let bytes = try Input.read(path, what: "a configuration file")
        guard let root = JSONValue.parse(bytes), let members = root.object else {
            throw ServeConfig.configurationError("\(path): not a JSON object")
        }
        let base: String? = {
            guard let slash = path.lastIndex(of: "/") else { return "." }
            let dir = String(path[..<slash])
            return dir.isEmpty ? "/" : dir
        }()
        func fail(_ key: String, _ expected: String) -> ToolFailure {
            ServeConfig.configurationError("\(path): \(QuotedText.quote(key)): expected \(expected)")
        }
        func string(_ key: String, _ v: JSONValue) throws(ToolFailure) -> String {
            guard let s = v.stringValue else { throw fail(key, "a string") }
            return s
        }
        func bool(_ key: String, _ v: JSONValue) throws(ToolFailure) -> Bool {
            guard case .bool(let b) = v else { throw fail(key, "true or false") }
            return b
        }
        func seconds(_ key: String, _ v: JSONValue) throws(ToolFailure) -> Double {
            guard let d = v.doubleValue, d > 0, d <= 3600 else { throw fail(key, "seconds, 0 < s <= 3600") }
            return d
        }
        func count(_ key: String, _ v: JSONValue, _ range: ClosedRange<Int>) throws(ToolFailure) -> Int {
            guard let i = v.int64Value, range.contains(Int(i)) else { throw fail(key, "an integer in \(range.lowerBound)...\(range.upperBound)") }
            return Int(i)
        }
        for (key, value) in members {
            switch key {
            case "listen": try setListen(try string(key, value), "\(path): listen")
            case "bundleId": bundleId = try string(key, value)
            case "appAppleId":
                guard let id = value.int64Value else { throw fail(key, "an integer") }
                appAppleId = id
            case "roots":
                guard case .array(let items) = value else { throw fail(key, "an array of certificate files") }
                roots = []
                for item in items { roots.append(ServeConfig.resolve(try string(key, item), relativeTo: base)) }
            case "ledgers":
                guard let envs = value.object else { throw fail(key, "an object {\"production\": url, \"sandbox\": url}") }
                ledgers = [:]
                for (env, url) in envs { try setLedger(env, try string("ledgers.\(env)", url), path, relativeTo: base) }
            case "apiKeyFile": apiKeyFile = ServeConfig.resolve(try string(key, value), relativeTo: base)
            case "onlineChecks": onlineChecks = try bool(key, value)
            case "ocspTimeoutSeconds": ocspTimeout = try seconds(key, value)
            case "logPayloads": logPayloads = try bool(key, value)
            case "metricsWithoutKey": metricsWithoutKey = try bool(key, value)
            case "limits":
                guard let items = value.object else { throw fail(key, "an object") }
                for (name, v) in items {
                    let k = "limits.\(name)"
                    switch name {
                    case "maxBodyBytes": limits.maxBodyBytes = try count(k, v, 1024...(16 << 20))
                    case "maxHeaderBytes": limits.maxHeaderBytes = try count(k, v, 1024...(1 << 20))
                    case "maxConnections": limits.maxConnections = try count(k, v, 1...10_000)
                    case "headerTimeoutSeconds": limits.headerTimeout = try seconds(k, v)
                    case "bodyTimeoutSeconds": limits.bodyTimeout = try seconds(k, v)
                    case "idleTimeoutSeconds": limits.idleTimeout = try seconds(k, v)
                    case "writeTimeoutSeconds": limits.writeTimeout = try seconds(k, v)
                    case "drainTimeoutSeconds": limits.drainTimeout = try seconds(k, v)
                    case "maxRequestsPerConnection": limits.maxRequestsPerConnection = try count(k, v, 1...1_000_000)
                    case "maxConnectionSeconds": limits.maxConnectionSeconds = try seconds(k, v)
                    case "maxConnectionsPerAddress": limits.maxConnectionsPerAddress = try count(k, v, 0...10_000)
                    default: throw ServeConfig.configurationError("\(path): unknown member \(QuotedText.quote(k))")
                    }
                }
            default:
                throw ServeConfig.configurationError("\(path): unknown member \(QuotedText.quote(key)) (see serve.md)")
            }
        }
    }

    /// The API key for the query endpoints: from apiKeyFile, else $APPSTORE_SERVE_API_KEY, else none (the query
    /// endpoints then answer 403). Never from a flag's value: arguments are visible to every user through /proc.
    func apiKey() throws(ToolFailure) -> [UInt8]? {
        let text: String
        let source: String
        if let file = apiKeyFile {
            text = try Input.text(try Input.read(file, what: "an API key"), what: file)
            source = file
        } else if let value = ProcessInfo.processInfo.environment[ServeConfig.apiKeyVariable], !value.isEmpty {
            text = value.trimmed()
            source = "$\(ServeConfig.apiKeyVariable)"
        } else {
            return nil
        }
        let bytes = Array(text.utf8)
        guard bytes.count >= 16, bytes.count <= 512, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw ServeConfig.configurationError("the API key in \(source) must be 16 to 512 printable ASCII characters without spaces (e.g. openssl rand -hex 32)")
        }
        return bytes
    }

    static let apiKeyVariable = "APPSTORE_SERVE_API_KEY"

    /// The verifier of one environment: the configured anchors (else the library's Apple roots), the app's identity.
    func verifier(_ env: ServeEnvironment, bundleId: String) throws(ToolFailure) -> SignedDataVerifier {
        var ders: [[UInt8]] = []
        if roots.isEmpty {
            _ = try AppleRoot.g3.certificate()  // the anchor of every JWS must be there (and match Apple's fingerprint)
            ders = AppleRootCertificate.all.map(\.der)
        } else {
            for path in roots { ders += try Input.certificates(path) }
        }
        do {
            if onlineChecks {
                return try SignedDataVerifier(rootCertificates: ders, bundleId: bundleId, appAppleId: appAppleId,
                                              environment: env.environment, enableOnlineChecks: true,
                                              transport: ToolHTTPTransport(),
                                              ocspTimeoutMilliseconds: UInt32(ocspTimeout * 1000))
            }
            return try SignedDataVerifier(rootCertificates: ders, bundleId: bundleId, appAppleId: appAppleId,
                                          environment: env.environment, enableOnlineChecks: false, transport: nil)
        } catch {
            throw ToolFailure(error)
        }
    }
}
