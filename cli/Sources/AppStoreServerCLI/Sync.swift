import AppStoreServer
import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// `appstoreserver sync`: the catch-up Apple recommends for missed notifications, into the ledger (docs/serve.md,
/// "sync"). The work is SyncRunner's; this is its options and its output.
struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Catch up on missed notifications and transactions: App Store Server API history into the ledger.",
        discussion: """
            Reads Get Notification History from where the last sync stopped (its cursor, a JSON file beside the \
            ledger), and Get Transaction History (version 2) of the customers named with --transaction-id (and, with \
            --known-subscriptions, of every subscription the ledger knows) from the revision stored for each; every \
            signed value is verified (a notification deeply) with the app's identity and recorded in the ledger, \
            which stores nothing twice. The cursor moves only after a page's values are durable, and is written \
            atomically: a sync killed at any point and run again ends as an uninterrupted one. Each window starts \
            --overlap before the previous one ended, because Apple lists a notification late sometimes.

            Calls go through the library's call driver: Apple's rate limits, retries of 429 and Apple's retryable \
            errors with Retry-After (up to 300 s), pagination.

            stdout: a JSON summary (pages, notifications and transactions seen, stored, duplicates, rejected with \
            their reasons, values not verified yet, failed calls, the cursor). Exit 0; 1 when a value was rejected \
            (it is skipped: retrying cannot make it valid); 2, 3 when a call failed (the cursor stays before what \
            was not read); 3 also when a value could not be verified yet (--online-checks with an OCSP responder \
            unreachable: the cursor stays before it and the next run verifies it again); 64, 78, 70 as for the \
            other commands.

            EXAMPLES
              export APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123.p8)" \\
                  APPSTORE_KEY_ID=ABC123 APPSTORE_BUNDLE_ID=com.example.app \\
                  APPSTORE_ISSUER_ID=57246542-96fe-1a63-e053-0824d011072a
              # the cursor is kept in production.db.sync.json:
              appstoreserver sync --environment production --app-apple-id 1234567890 \\
                  --db /var/lib/appstoreserver/production.db
              appstoreserver sync --environment sandbox --db sandbox.db \\
                  --transaction-id 2000000123456789
              appstoreserver sync --environment production --app-apple-id 1234567890 \\
                  --db production.db --known-subscriptions --no-notification-history
            """
    )

    @OptionGroup var keys: KeyOptions
    @Option(help: "production | sandbox: the API's environment and the ledger's (default: $APPSTORE_ENVIRONMENT).")
    var environment: EnvironmentOption?
    @Option(help: "The app's App Apple ID (required for production).")
    var appAppleId: Int64?
    @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: Apple's roots as the library carries them).", valueName: "file"))
    var roots: [String] = []
    @OptionGroup var database: LedgerCommand.DatabaseOptions
    @Option(help: ArgumentHelp("The cursor file (default: the SQLite ledger's path + .sync.json). A PostgreSQL ledger keeps its cursor in its own table; a file given then is imported once, when that table has none.", valueName: "file"))
    var state: String?
    @Option(name: .customLong("transaction-id"), help: ArgumentHelp("Get Transaction History of this customer (any of its transaction ids; repeatable).", valueName: "id"))
    var transactionIds: [String] = []
    @Flag(help: "Also Get Transaction History of every auto-renewable subscription the ledger knows.")
    var knownSubscriptions = false
    @Flag(inversion: .prefixedNo, help: "Read Get Notification History (on by default).")
    var notificationHistory = true
    @Option(help: ArgumentHelp("The first window's start when there is no cursor: an ISO 8601 date-time or milliseconds since 1970 (default: as far back as Apple allows, 180 days).", valueName: "time"))
    var since: String?
    @Option(help: "Seconds each window reaches back before the previous one's end (default 21600: 6 hours).")
    var overlap: Int64 = 21600
    @Flag(help: "Also ask Apple's OCSP responders whether a certificate was revoked; a value whose responder cannot be asked holds the cursor before it (exit 3) until a later run verifies it.")
    var onlineChecks = false
    @Option(help: "Seconds to wait for an OCSP answer with --online-checks (default 10).")
    var ocspTimeout: Double = 10
    @Option(help: "Another base URL (a test server).")
    var baseURL: String?
    @Option(help: "Seconds before a request times out.") var timeout: Double = 30
    @Option(help: "Retries of HTTP 429 and Apple's retryable error codes (Retry-After honoured).") var retries: Int = 5
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard timeout > 0, timeout <= 600 else { throw ValidationError("--timeout must be 0 < seconds <= 600") }
        guard ocspTimeout > 0, ocspTimeout <= 3600 else { throw ValidationError("--ocsp-timeout must be 0 < seconds <= 3600") }
        guard (0...10).contains(retries) else { throw ValidationError("--retries must be 0...10") }
        guard (0...(30 * 86_400)).contains(overlap) else { throw ValidationError("--overlap must be 0...2592000 seconds") }
        guard notificationHistory || knownSubscriptions || !transactionIds.isEmpty else {
            throw ValidationError("nothing to read: --no-notification-history without --transaction-id or --known-subscriptions")
        }
    }

    func run() throws {
        try reporting {
            let env = try resolvedEnvironment()
            let bundle = try keys.resolvedBundleId()
            var plan = SyncPlan()
            plan.notificationHistory = notificationHistory
            plan.overlapMilliseconds = overlap * 1000
            plan.transactionIds = transactionIds
            plan.knownSubscriptions = knownSubscriptions
            if let since {
                guard let ms = Sync.instant(since) else {
                    throw ToolFailure.usage("--since \(QuotedText.quote(since)): expected an ISO 8601 date-time or milliseconds since 1970")
                }
                guard ms < Timestamp.nowMilliseconds() else { throw ToolFailure.usage("--since is in the future") }
                plan.sinceMilliseconds = ms
            }
            let url = try database.url()
            let postgres = url.hasPrefix("postgresql://") || url.hasPrefix("postgres://")
            // SQLite: the cursor's file, checked before anything else is done; PostgreSQL: the ledger's table.
            let statePath = postgres ? nil : try Sync.statePath(state, ledgerURL: url)
            let caller = try Sync.caller(key: try keys.signingKey(), keyId: try keys.resolvedKeyId(),
                                         issuerId: try keys.resolvedIssuerId(), bundle: bundle,
                                         environment: env.environment, baseURL: baseURL, timeout: timeout, retries: retries)
            var config = ServeConfig()
            config.roots = roots
            config.appAppleId = appAppleId
            config.onlineChecks = onlineChecks
            config.ocspTimeout = ocspTimeout
            let verifier = try config.verifier(env, bundleId: bundle)
            let ledger: Ledger
            do throws(LedgerError) {
                ledger = try Ledger.open(url, verifier: verifier)
            } catch {
                throw ToolFailure(error, error.statusCode == .invalidArgument ? .usage : .configuration)
            }
            let cursor: SyncCursor
            let loaded: SyncState
            var fileLock: Int32 = -1
            defer { if fileLock >= 0 { close(fileLock) } }
            if let statePath {
                fileLock = try SyncState.lock(statePath)
                cursor = .file(statePath)
                loaded = try SyncState.load(statePath, bundleId: bundle, environment: env.environment.rawValue)
            } else {
                let lease = try Sync.lease(ledger)
                cursor = .database(lease)
                loaded = try SyncCursor.load(lease, bundleId: bundle, environment: env.environment.rawValue, importing: state)
            }
            defer { if case .database(let lease) = cursor { lease.release() } }
            let runner = SyncRunner(ledger: ledger, caller: caller, transport: ToolHTTPTransport(), cursor: cursor, state: loaded)
            var thrown: ToolFailure?
            do throws(ToolFailure) { try runner.run(plan) } catch { thrown = error }
            let summary = runner.summary
            Output.json(Array(summary.json(runner.state, cursor: cursor).serialized().utf8), output)
            if let thrown { throw thrown }
            if let first = summary.errors.first {
                for e in summary.errors {
                    Output.error("error: \(e.failure.status) (\(e.failure.reason)): \(e.problem.source): \(e.failure.message)")
                }
                throw ExitCode(first.failure.exit.rawValue)
            }
            if !summary.unverified.isEmpty {
                // Not verified yet, so not passed: the next run asks for them again.
                for u in summary.unverified { Output.error("not verified yet: \(u.status) (\(u.reason)): \(u.source): \(u.message)") }
                Output.error("sync: \(summary.unverified.count) value(s) could not be verified yet; the cursor stays before them and the next run retries")
                let retryable = summary.unverified.allSatisfy { $0.status == AppStoreStatus.retryableVerificationFailure.name }
                throw ExitCode((retryable ? ExitStatus.network : ExitStatus.internal).rawValue)
            }
            if !summary.rejections.isEmpty {
                for r in summary.rejections { Output.error("rejected: \(r.status) (\(r.reason)): \(r.source): \(r.message)") }
                throw ExitCode(ExitStatus.invalid.rawValue)
            }
        }
    }

    func resolvedEnvironment() throws(ToolFailure) -> ServeEnvironment {
        if let environment {
            guard let e = ServeEnvironment(rawValue: environment.rawValue) else {
                throw ToolFailure.usage("--environment \(environment.rawValue): the App Store Server API has production and sandbox only")
            }
            return e
        }
        let value = ProcessInfo.processInfo.environment["APPSTORE_ENVIRONMENT"]?.lowercased() ?? ""
        guard !value.isEmpty else {
            throw ToolFailure.usage("missing --environment (or set APPSTORE_ENVIRONMENT): production or sandbox")
        }
        guard let e = ServeEnvironment(rawValue: value) else {
            throw ToolFailure.usage("APPSTORE_ENVIRONMENT=\(value): use production or sandbox")
        }
        return e
    }

    /// Milliseconds since 1970, or an ISO 8601 date-time.
    static func instant(_ text: String) -> Int64? {
        if let ms = Int64(text), ms > 0 { return ms }
        guard let date = try? Date(text, strategy: .iso8601) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// A PostgreSQL ledger's sync lease, or `busy` (exit 75) naming the process that holds it.
    static func lease(_ ledger: Ledger) throws(ToolFailure) -> LedgerSyncLease {
        let attempt: LedgerSyncLease.Attempt
        do throws(LedgerError) { attempt = try ledger.acquireSyncLease(holder: SyncCursor.holder) } catch {
            throw ToolFailure(error)
        }
        switch attempt {
        case .acquired(let lease): return lease
        case .held(let holder, let since):
            let when = since.map { " since \(iso8601(Date(timeIntervalSince1970: Double($0) / 1000)))" } ?? ""
            throw ToolFailure(.busy, status: "SYNC_IN_PROGRESS", reason: "sync_in_progress",
                              "another process syncs this ledger (\(holder ?? "holder unknown")\(when)): one sync at a "
                              + "time per PostgreSQL ledger (its advisory lock); nothing was read or written, try again later")
        }
    }

    /// The cursor's file: given, or beside a SQLite ledger.
    static func statePath(_ given: String?, ledgerURL url: String) throws(ToolFailure) -> String {
        if let given, !given.isEmpty { return given }
        guard url.hasPrefix("sqlite:") else {
            throw ToolFailure.usage("--state FILE is needed with a \(url.split(separator: ":").first ?? "") ledger (a SQLite ledger keeps its cursor beside it)")
        }
        var path = String(url.dropFirst("sqlite:".count))
        if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
        guard !path.isEmpty, !path.hasPrefix(":memory:") else { throw ToolFailure.usage("an in-memory ledger needs --state FILE") }
        return path + ".sync.json"
    }

    /// The API caller: the key options, Apple's rate limits (waiting up to a minute for a slot), retries.
    static func caller(key: SigningKey, keyId: String, issuerId: String, bundle: String, environment: AppStoreEnvironment,
                       baseURL: String?, timeout: Double, retries: Int) throws(ToolFailure) -> AppStoreServerAPICaller {
        do throws(AppStoreServerAPIError) {
            let configuration = AppStoreServerAPIConfiguration(
                timeoutMilliseconds: UInt32(timeout * 1000),
                retryPolicy: retries == 0 ? .none : APIRetryPolicy(maxRetries: retries, maxBackoffMilliseconds: 300_000),
                baseURL: baseURL, rateLimit: .wait(upTo: 60_000))
            return try AppStoreServerAPICaller(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundle,
                                               environment: environment, configuration: configuration)
        } catch {
            throw ToolFailure(error)
        }
    }
}
