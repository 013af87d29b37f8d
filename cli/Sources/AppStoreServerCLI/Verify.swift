import AppStoreServer
import ArgumentParser

enum KindOption: String, ExpressibleByArgument, CaseIterable {
    case auto
    case notification
    case transaction
    case renewalInfo = "renewal-info"
    case appTransaction = "app-transaction"
    case realtimeRequest = "realtime-request"

    var kind: SignedPayloadKind? {
        switch self {
        case .auto: nil
        case .notification: .notification
        case .transaction: .transaction
        case .renewalInfo: .renewalInfo
        case .appTransaction: .appTransaction
        case .realtimeRequest: .realtimeRequest
        }
    }
}

enum EnvironmentOption: String, ExpressibleByArgument, CaseIterable {
    case production, sandbox, xcode
    case localTesting = "local-testing"

    var environment: AppStoreEnvironment {
        switch self {
        case .production: .production
        case .sandbox: .sandbox
        case .xcode: .xcode
        case .localTesting: .localTesting
        }
    }
}

/// Who the data must be for: bundle id, App Apple ID and environment.
struct IdentityOptions: ParsableArguments {
    @Option(help: "The app's bundle id (default: the payload's own, reported as not checked).")
    var bundleId: String?
    @Option(help: "The app's App Apple ID (default: the payload's own; Apple requires one for Production).")
    var appAppleId: Int64?
    @Option(help: "production | sandbox | xcode | local-testing (default: the payload's own, except Xcode and LocalTesting, which skip signature checks and so must be asked for).")
    var environment: EnvironmentOption?
    @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: the bundled Apple root).", valueName: "file"))
    var roots: [String] = []
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a signed payload and print what it says.",
        discussion: """
            Reads a compact JWS, a notification or realtime-request body ({"signedPayload": …}), or an API answer \
            with one signed value ({"signedTransactionInfo": …}); tells its kind from its keys (or --kind); checks \
            the signature, Apple's certificate chain, the kind, bundle id, App Apple ID and environment exactly as \
            the library does; prints the payload JSON exactly as signed.

            Without --bundle-id / --app-apple-id / --environment the payload's own values are used and stderr says \
            they were not checked against yours: the signature and chain are still checked.

            EXAMPLES
              appstoreserver verify --summary notification.json
              curl -s … | appstoreserver verify --deep - | jq .transaction
              appstoreserver verify --bundle-id com.example.app --environment production \\
                  --app-apple-id 1234 tx.jws
              # also ask Apple's OCSP responders whether a certificate was revoked:
              appstoreserver verify --online tx.jws
            """
    )

    @Argument(help: ArgumentHelp("The signed data, or - (the default) for stdin.", valueName: "file"))
    var file: String?
    @Option(help: "auto | notification | transaction | renewal-info | app-transaction | realtime-request")
    var kind: KindOption = .auto
    @Flag(help: "For a notification: verify the signed transaction, renewal info and app transaction inside it too.")
    var deep = false
    @Flag(help: "Ask Apple's OCSP responders whether a certificate was revoked (network).")
    var online = false
    @Option(help: "Seconds to wait for an OCSP responder.")
    var ocspTimeout: Double = 10
    @Flag(help: "A few human lines instead of JSON (notifications are verified with --deep).")
    var summary = false
    @OptionGroup var identity: IdentityOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard ocspTimeout > 0, ocspTimeout <= 300 else { throw ValidationError("--ocsp-timeout must be 0 < seconds <= 300") }
    }

    func run() throws {
        try reporting {
            let input = try Input.signedPayload(try Input.read(file, what: "a signed payload"))
            let unverified: UnverifiedSignedData
            switch UnverifiedSignedData.read(input.jws) {
            case .success(let u): unverified = u
            case .failure(let f): throw ToolFailure(f)
            }
            guard let kind = kind.kind ?? unverified.kind else {
                throw ToolFailure(.invalid, status: "INVALID_JWS_FORMAT", reason: "wrong_kind",
                                  "cannot tell the payload's kind from its keys: pass --kind")
            }
            let deep = self.deep || (summary && kind == .notification)
            if deep && kind != .notification {
                throw ToolFailure.usage("--deep is for notifications; this is \(kind.rawValue)")
            }
            let setup = try VerifierSetup(identity: identity, payloadJSON: unverified.payloadJSON, kind: kind,
                                          online: online, ocspTimeout: ocspTimeout)
            for note in setup.notes { Output.error("note: \(note)") }
            let json = try setup.verify(input.jws, kind: kind, deep: deep)
            if summary {
                for line in Summary.lines(kind: kind, json: json, setup: setup, deep: deep) { Output.line(line) }
            } else {
                Output.json(json, output)
            }
        }
    }
}

/// A verifier built from the options, with the payload's own identity filling what was not given.
struct VerifierSetup {
    let verifier: SignedDataVerifier
    let anchors: String
    let environment: AppStoreEnvironment
    let online: Bool
    let notes: [String]

    init(identity: IdentityOptions, payloadJSON: [UInt8], kind: SignedPayloadKind, online: Bool, ocspTimeout: Double) throws(ToolFailure) {
        let claimed = ClaimedIdentity(payloadJSON)
        var notes: [String] = []
        var unchecked: [String] = []
        let environment: AppStoreEnvironment
        if let e = identity.environment {
            environment = e.environment
        } else if let e = claimed.environment {
            guard e != .xcode && e != .localTesting else {
                throw ToolFailure(.invalid, status: "INVALID_ENVIRONMENT", reason: "wrong_environment",
                                  "the payload says environment \(e.rawValue), whose data is not signed by Apple and is not checked: "
                                  + "pass --environment \(e == .xcode ? "xcode" : "local-testing") to decode it that way knowingly")
            }
            environment = e
            unchecked.append("environment \(e.rawValue)")
        } else {
            throw ToolFailure.usage("the payload names no environment: pass --environment")
        }
        var bundleId = identity.bundleId
        if bundleId == nil, let b = claimed.bundleId {
            bundleId = b
            unchecked.append("bundle id \(b)")
        }
        if bundleId == nil && kind == .renewalInfo { bundleId = "-" }  // renewal info carries no bundle id to check
        guard let bundleId else { throw ToolFailure.usage("the payload names no bundle id: pass --bundle-id") }
        var appAppleId = identity.appAppleId
        if appAppleId == nil, environment == .production, let a = claimed.appAppleId {
            appAppleId = a
            unchecked.append("App Apple ID \(a)")
        }
        if !unchecked.isEmpty {
            notes.append("taken from the payload, not checked against yours: \(unchecked.joined(separator: ", ")) "
                         + "(pass --bundle-id / --app-apple-id / --environment to check them)")
        }
        let (roots, anchors) = try trustAnchors(identity.roots, default: .g3)
        do {
            if online {
                verifier = try SignedDataVerifier(rootCertificates: roots, bundleId: bundleId, appAppleId: appAppleId,
                                                  environment: environment, enableOnlineChecks: true,
                                                  transport: ToolHTTPTransport(),
                                                  ocspTimeoutMilliseconds: UInt32(ocspTimeout * 1000))
            } else {
                verifier = try SignedDataVerifier(rootCertificates: roots, bundleId: bundleId, appAppleId: appAppleId,
                                                  environment: environment, enableOnlineChecks: false, transport: nil)
            }
        } catch {
            throw ToolFailure(error)
        }
        if environment == .xcode || environment == .localTesting {
            notes.append("environment \(environment.rawValue): Apple's rules check no signature for this data")
        }
        self.anchors = anchors
        self.environment = environment
        self.online = online
        self.notes = notes
    }

    func verify(_ jws: String, kind: SignedPayloadKind, deep: Bool) throws(ToolFailure) -> [UInt8] {
        var text = jws
        let result = text.withUTF8 { utf8 in
            deep ? verifier.verifiedNotificationDeepJSON(UnsafeRawBufferPointer(utf8))
                 : verifier.verifiedPayloadJSON(kind, UnsafeRawBufferPointer(utf8))
        }
        switch result {
        case .success(let json): return json
        case .failure(let f): throw ToolFailure(f)
        }
    }
}

/// The identity a payload claims for itself (not trusted: only used where the user gave none).
struct ClaimedIdentity {
    var bundleId: String?
    var appAppleId: Int64?
    var environment: AppStoreEnvironment?

    init(_ payloadJSON: [UInt8]) {
        guard let object = JSONValue.parse(payloadJSON), object.object != nil else { return }
        // Notifications keep them in data, summary or externalPurchaseToken; the other kinds at the top.
        let places = [object] + ["data", "summary", "externalPurchaseToken"].compactMap { object[$0].flatMap { $0.object != nil ? $0 : nil } }
        for place in places {
            bundleId = bundleId ?? place["bundleId"]?.stringValue
            appAppleId = appAppleId ?? place["appAppleId"]?.int64Value
            let env = place["environment"]?.stringValue ?? place["receiptType"]?.stringValue
            if environment == nil, let env, AppStoreEnvironment(rawValue: env).isKnown { environment = AppStoreEnvironment(rawValue: env) }
        }
    }
}
