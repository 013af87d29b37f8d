import AppStoreServer
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

@main
struct AppStoreServerTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstoreserver",
        abstract: "Verify App Store signed data, sign offers and tokens, call the App Store Server API, read receipts, keep a purchase ledger, receive notifications and catch up on missed ones.",
        discussion: """
            Everything goes through the same library as the C, Python and Node bindings (libappstoreserver), so \
            the checks are the ones your servers make.

            EXAMPLES
              appstoreserver verify --summary notification.json  # real? what does it say?
              appstoreserver verify --bundle-id com.example.app --environment sandbox \\
                  tx.jws
              appstoreserver decode notification.json            # not verified: debugging
              APPSTORE_PRIVATE_KEY="$(cat key.p8)" appstoreserver sign token \\
                  --key-id ABC --issuer-id UUID --bundle-id com.example.app
              appstoreserver api getTransactionInfo --param transactionId=2000000123 \\
                  --key key.p8 --dry-run
              appstoreserver receipt ids receipt.b64
              appstoreserver ledger entitlements --db ledger.db \\
                  6b0404f2-b094-40b8-ab01-a1c12a3a2107
              # notifications in, verified, stored; and those missed, from Apple:
              appstoreserver serve --bundle-id com.example.app --ledger sandbox=sandbox.db
              appstoreserver sync --environment sandbox --db sandbox.db

            EXIT STATUS
              \(ExitStatus.table)

            DOCUMENTATION
              man appstoreserver-COMMAND: a page per command (appstoreserver-serve, ...);
              the guides cli.md, serve.md and ledger.md in share/doc/appstoreserver where
              the tool is installed (/usr/share/doc/appstoreserver from the .deb), also
              at https://github.com/OWNER/appstoreserver/tree/main/docs
            """,
        version: AppStoreServerVersion.string,
        subcommands: [Verify.self, Decode.self, Sign.self, API.self, Receipt.self, Roots.self, LedgerCommand.self, Serve.self, Sync.self]
    )

    /// ArgumentParser's main, with its messages (which quote argument values: `--timeout "$(cat key.p8)"`) passed
    /// through the same redaction as the tool's own.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if !message.isEmpty {
                if code == .success { print(message) } else { Output.error(message) }
            }
            Glibc.exit(code.rawValue)
        }
    }
}

/// The exit statuses, one per outcome, so scripts can tell a forgery from a typo from a network failure.
enum ExitStatus: Int32, CaseIterable {
    case success = 0
    /// The data was read and rejected: a signature, chain, identity or receipt check failed.
    case invalid = 1
    /// The App Store Server API answered with an error.
    case apiError = 2
    /// Network failure: a connection, a timeout, an OCSP responder that cannot be reached.
    case network = 3
    /// Bad usage: options, arguments, parameters (ArgumentParser's own usage errors use the same code).
    case usage = 64
    /// Input missing, unreadable or empty.
    case noInput = 66
    /// A failure inside the tool or the library.
    case `internal` = 70
    /// The ledger's storage failed (a full disk, a database that cannot be reached, a corrupt row): sysexits'
    /// EX_IOERR, so that a script or a timer retries on this status alone.
    case storage = 74
    /// Another process is doing it (sysexits' EX_TEMPFAIL): `sync` of a PostgreSQL ledger another process syncs now.
    case busy = 75
    /// Configuration: a key, a root certificate or the bundled Apple roots are not usable.
    case configuration = 78

    var meaning: String {
        switch self {
        case .success: "valid / done"
        case .invalid: "invalid: read and rejected (signature, chain, identity, receipt)"
        case .apiError: "the App Store Server API answered with an error"
        case .network: "network failure (connection, timeout, OCSP responder unreachable)"
        case .usage: "bad usage (options, arguments, parameters)"
        case .noInput: "input missing, unreadable or empty"
        case .internal: "internal error"
        case .storage: "storage failure (the ledger's database): retry later"
        case .busy: "busy: another process syncs this ledger: retry later"
        case .configuration: "configuration (key, root certificate, bundled Apple roots)"
        }
    }

    static var table: String {
        allCases.map { "\(String($0.rawValue).padded(to: 3)) \($0.meaning)" }
            .joined(separator: "\n  ")
    }
}

/// A failure the tool reports: one line on stderr (status, reason, message) and its exit status.
struct ToolFailure: Error {
    let exit: ExitStatus
    let status: String
    let reason: String
    let message: String

    init(_ exit: ExitStatus, status: String, reason: String, _ message: String) {
        self.exit = exit
        self.status = status
        self.reason = reason
        self.message = message
    }

    static func usage(_ message: String) -> ToolFailure {
        ToolFailure(.usage, status: "INVALID_ARGUMENT", reason: "invalid_argument", message)
    }
    static func noInput(_ message: String) -> ToolFailure {
        ToolFailure(.noInput, status: "INVALID_ARGUMENT", reason: "no_input", message)
    }

    /// Any of the library's failures: its status, reason and message as they are, with the tool's exit status.
    init(_ f: some AppStoreServerFailure, _ exit: ExitStatus) {
        self.init(exit, status: f.statusCode.name, reason: f.reason.name, f.message)
    }

    init(_ f: VerificationFailure) {
        let network: Set<FailureReason> = [.ocspUnreachable, .ocspTimeout]
        self.init(f, network.contains(f.reason) ? .network : (f.reason == .internal ? .internal : .invalid))
    }

    init(_ f: ConfigurationError) { self.init(f, f.reason == .internal ? .internal : .configuration) }
    init(_ f: ReceiptError) { self.init(f, f.reason == .internal ? .internal : .invalid) }
    init(_ f: SigningError) { self.init(f, .usage) }
    init(_ f: SigningKeyError) { self.init(f, .configuration) }

    init(_ f: AppStoreServerAPIError) {
        let exit: ExitStatus
        switch f.kind {
        case .invalidArgument, .invalidRequest: exit = .usage
        case .configuration, .signing, .signerFailed: exit = .configuration
        case .apiError, .httpError, .undecodableResponse, .rateLimitedLocally: exit = .apiError
        case .transport, .deadlineExceeded: exit = .network
        }
        self.init(f, exit)
    }
}

/// Runs a command body: a ToolFailure becomes one stderr line and its exit status.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let f as ToolFailure {
        Output.error("error: \(f.status) (\(f.reason)): \(f.message)")
        throw ExitCode(f.exit.rawValue)
    }
}
