import AppStoreServer
import ArgumentParser
import FoundationEssentials

struct API: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Call the App Store Server API (or print the request with --dry-run).",
        discussion: """
            ENDPOINT is the method name of Apple's libraries (getTransactionInfo, getTransactionHistory, …); \
            `appstoreserver api list` lists them with their parameters. Parameters: --param name=value (a string), \
            --param name:=JSON (a number, boolean, array or object), a name given twice makes an array; the request \
            body with --body FILE (JSON; the PNG for uploadImage). Parameters are checked strictly: an unknown, \
            missing or mistyped one is an error naming it.

            EXAMPLES
              appstoreserver api getTransactionInfo \\
                  --param transactionId=2000000123456789 \\
                  --key key.p8
              appstoreserver api getTransactionHistory \\
                  --param anyTransactionId=2000000123456789 \\
                  --param productTypes:='["AUTO_RENEWABLE"]' --param sort=DESCENDING \\
                  --all-pages --verify
              appstoreserver api requestTestNotification --environment production \\
                  --dry-run
              appstoreserver api extendSubscriptionRenewalDate \\
                  --param originalTransactionId=2000000123 --body extend.json
            """
    )

    @Argument(help: "The endpoint (or `list`).") var endpoint: String
    @Option(name: .customLong("param"), help: ArgumentHelp("name=value or name:=JSON (repeatable).", valueName: "param"))
    var params: [String] = []
    @Option(help: ArgumentHelp("The request body: JSON, or the PNG image for uploadImage.", valueName: "file"))
    var body: String?
    @OptionGroup var keys: KeyOptions
    @Option(help: "production | sandbox (default: $APPSTORE_ENVIRONMENT, else sandbox).")
    var environment: EnvironmentOption?
    @Option(help: "Another base URL (a test server); the Advanced Commerce endpoints use it too.")
    var baseURL: String?
    @Option(help: "Seconds before a request times out.") var timeout: Double = 30
    @Option(help: "Retries of HTTP 429 and Apple's retryable error codes (Retry-After honoured; transport failures are never retried: the request may have reached Apple).") var retries: Int = 2
    @Flag(help: "Print the request (method, URL, headers with the token redacted, body); send nothing.")
    var dryRun = false
    @Flag(help: "Follow every page of a paginated endpoint; prints a JSON array of the pages.")
    var allPages = false
    @Flag(help: "Verify the signed values in the answer and show them decoded (bundled Apple root, or --root).")
    var verify = false
    @Option(help: "The App Apple ID, for --verify in Production.") var appAppleId: Int64?
    @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor for --verify (repeatable).", valueName: "file"))
    var roots: [String] = []
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard timeout > 0, timeout <= 600 else { throw ValidationError("--timeout must be 0 < seconds <= 600") }
        guard (0...10).contains(retries) else { throw ValidationError("--retries must be 0...10") }
    }

    func run() throws {
        try reporting {
            if endpoint == "list" { return list() }
            guard let endpoint = AppStoreServerAPIEndpoint(name: endpoint) else {
                throw ToolFailure.usage("unknown endpoint \"\(self.endpoint)\": `appstoreserver api list` lists them")
            }
            let request = try makeRequest(endpoint)
            let environment = try resolvedEnvironment()
            let caller: AppStoreServerAPICaller
            let key = try keys.signingKey()
            let (keyId, issuerId, bundleId) = (try keys.resolvedKeyId(), try keys.resolvedIssuerId(), try keys.resolvedBundleId())
            do throws(AppStoreServerAPIError) {
                let configuration = AppStoreServerAPIConfiguration(
                    timeoutMilliseconds: UInt32(timeout * 1000),
                    retryPolicy: retries == 0 ? .none : APIRetryPolicy(maxRetries: retries), baseURL: baseURL)
                caller = try AppStoreServerAPICaller(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId,
                                                     environment: environment, configuration: configuration)
            } catch {
                throw ToolFailure(error)
            }
            if dryRun { return try printRequest(caller, request) }
            let transport = ToolHTTPTransport()
            if allPages && !endpoint.isPaginated { throw ToolFailure.usage("--all-pages: \(endpoint.name) is not paginated") }
            var body: [UInt8]
            do throws(AppStoreServerAPIError) {
                // Each answer checked as the library's clients check it: it must decode into the endpoint's model.
                if allPages {
                    let pages = try AppStoreServerAPIPagination.allPages(request, caller: caller, transport: transport).pages
                    for page in pages { _ = try AppStoreServerAPIResponseDecoder.json(endpoint: endpoint, response: page) }
                    body = AppStoreServerAPIPagination.pagesJSON(pages)
                } else {
                    let response = try caller.answer(request, transport: transport).response
                    body = try AppStoreServerAPIResponseDecoder.json(endpoint: endpoint, response: response)
                }
            } catch {
                throw ToolFailure(error)
            }
            if verify {
                body = try SignedFields(bundleId: bundleId, appAppleId: appAppleId, environment: environment, roots: roots)
                    .verified(body)
            }
            Output.json(body, output)
        }
    }

    func resolvedEnvironment() throws(ToolFailure) -> AppStoreEnvironment {
        if let environment {
            guard environment == .production || environment == .sandbox else {
                throw ToolFailure.usage("the App Store Server API has production and sandbox environments only")
            }
            return environment.environment
        }
        switch ProcessInfo.processInfo.environment["APPSTORE_ENVIRONMENT"]?.lowercased() {
        case nil, "", "sandbox": return .sandbox
        case "production": return .production
        case let other?: throw ToolFailure.usage("APPSTORE_ENVIRONMENT=\(other): use production or sandbox")
        }
    }

    /// The parameters object from --param and --body, checked by the library as the C ABI's params_json is.
    func makeRequest(_ endpoint: AppStoreServerAPIEndpoint) throws(ToolFailure) -> AppStoreServerAPIRequest {
        var members: [(String, JSONValue)] = []
        for p in params {
            let name: String, value: JSONValue
            if let r = p.firstRange(of: ":="), !p[..<r.lowerBound].contains("=") {
                name = String(p[..<r.lowerBound])
                let text = String(p[r.upperBound...])
                guard let v = JSONValue.parse(text) else {
                    throw ToolFailure.usage("--param \(name):= is followed by \"\(text)\", which is not JSON")
                }
                value = v
            } else if let eq = p.firstIndex(of: "=") {
                name = String(p[..<eq])
                value = .string(String(p[p.index(after: eq)...]))
            } else {
                throw ToolFailure.usage("--param \(p): expected name=value or name:=JSON")
            }
            guard !name.isEmpty else { throw ToolFailure.usage("--param \(p): the name is empty") }
            // A name given again makes an array (appended to, when the first value was one).
            if let k = members.firstIndex(where: { $0.0 == name }) {
                if case .array(let items) = members[k].1 {
                    members[k].1 = .array(items + [value])
                } else {
                    members[k].1 = .array([members[k].1, value])
                }
            } else {
                members.append((name, value))
            }
        }
        if let body {
            let keys = endpoint.parameterKeys.required + endpoint.parameterKeys.optional
            let bytes = try Input.read(body, what: "a request body")
            let member: (String, JSONValue)
            if keys.contains("body") {
                guard let json = JSONValue.parse(bytes), json.isContainer else {
                    throw ToolFailure.usage("--body \(body): not JSON")
                }
                member = ("body", json)
            } else if keys.contains("image") {
                member = ("image", .string(Data(bytes).base64EncodedString()))
            } else {
                throw ToolFailure.usage("\(endpoint.name) takes no request body")
            }
            members.removeAll { $0.0 == member.0 }
            members.append(member)
        }
        do {
            return try AppStoreServerAPIRequest(endpoint: endpoint, parametersJSON: Array(JSONValue.object(members).serialized().utf8))
        } catch {
            throw ToolFailure(error)
        }
    }

    func printRequest(_ caller: AppStoreServerAPICaller, _ request: AppStoreServerAPIRequest) throws(ToolFailure) {
        let http: HTTPRequest
        do { http = try caller.builder.build(request) } catch { throw ToolFailure(error) }
        Output.line("\(http.method) \(http.url)")
        for h in http.headers {
            let redacted = h.name.lowercased() == "authorization" ? "Bearer <token redacted>" : h.value
            Output.line("\(h.name): \(redacted)")
        }
        if !http.body.isEmpty {
            Output.line("")
            if let text = String(validating: http.body, as: UTF8.self) {
                Output.line(text)
            } else {
                Output.line("<\(http.body.count) bytes of binary body>")
            }
        }
    }

    func list() {
        for e in AppStoreServerAPIEndpoint.allCases {
            let keys = e.parameterKeys
            let params = keys.required + keys.optional.map { "[\($0)]" }
            Output.line("\(e.name.padded(to: 46)) \(e.method.padded(to: 6)) \(e.pathTemplate)"
                        + (params.isEmpty ? "" : "  " + params.joined(separator: " ")))
        }
    }
}

/// `api --verify`: every signed value of an answer replaced by its verified payload.
struct SignedFields {
    let verifier: SignedDataVerifier

    init(bundleId: String, appAppleId: Int64?, environment: AppStoreEnvironment, roots: [String]) throws(ToolFailure) {
        let anchors = try trustAnchors(roots, default: .g3)
        do {
            verifier = try SignedDataVerifier(rootCertificates: anchors.ders, bundleId: bundleId, appAppleId: appAppleId,
                                              environment: environment, enableOnlineChecks: false, transport: nil)
        } catch {
            throw ToolFailure(error)
        }
    }

    static func kind(forKey key: String, jws: String) -> SignedPayloadKind? {
        switch key {
        case "signedTransactionInfo", "signedTransactions": .transaction
        case "signedRenewalInfo": .renewalInfo
        case "signedPayload": .notification
        case "signedAppTransactionInfo": .appTransaction
        default: (try? UnverifiedSignedData.read(jws).get())?.kind
        }
    }

    func verified(_ body: [UInt8]) throws(ToolFailure) -> [UInt8] {
        guard let root = JSONValue.parse(body) else { return body }
        var failure: ToolFailure?
        func walk(_ value: JSONValue, key: String?, path: String) -> JSONValue {
            switch value {
            case .object(let members):
                return .object(members.map { k, v in (k, walk(v, key: k, path: path.isEmpty ? k : "\(path).\(k)")) })
            case .array(let items):
                return .array(items.enumerated().map { walk($1, key: key, path: "\(path)[\($0)]") })
            default:
                break
            }
            guard let key, key.hasPrefix("signed"), let jws = value.stringValue, let kind = Self.kind(forKey: key, jws: jws) else {
                return value
            }
            switch verifier.verifiedPayloadJSON(kind, jws) {
            case .success(let json):
                return JSONValue.parse(json) ?? value
            case .failure(let f):
                if failure == nil {
                    let t = ToolFailure(f)
                    failure = ToolFailure(t.exit, status: t.status, reason: t.reason, "\(path): \(t.message)")
                }
                return value
            }
        }
        let result = walk(root, key: nil, path: "")
        if let failure { throw failure }
        return Array(result.serialized(sortedKeys: true).utf8)
    }
}
