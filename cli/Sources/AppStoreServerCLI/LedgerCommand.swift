import AppStoreServer
import ArgumentParser
import FoundationEssentials
import Glibc

/// `appstoreserver ledger`: the purchase ledger (docs/ledger.md) from the command line, over the Swift `Ledger`.
struct LedgerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Record verified App Store data in a purchase ledger; show who is entitled to what.",
        discussion: """
            The ledger keeps every verified notification, transaction and renewal info (SQLite) and answers, for any \
            instant, a subscription's status (Apple's 1-5) and a customer's entitlements (ledger.md). The same \
            ledger as the library's in every language: a database written here is read by Python, Node, C and Swift.

            --db names the ledger: sqlite:/path/ledger.db or a plain path, or postgresql://user@host/database (libpq, \
            loaded then; several processes may share it) (default: $APPSTORE_LEDGER).

            EXAMPLES
              appstoreserver ledger ingest --db ledger.db --bundle-id com.example.app \\
                  --environment production --app-apple-id 1234 \\
                  notification.json history-page.json
              appstoreserver ledger entitlements --db ledger.db \\
                  6b0404f2-b094-40b8-ab01-a1c12a3a2107
              appstoreserver ledger show --db ledger.db 2000000123456789 \\
                  --at 2025-04-01T00:00:00Z
              appstoreserver ledger entitlements --db ledger.db CUSTOMER \\
                  --at 2025-10-03T12:00:00Z --as-of 2025-10-03T12:00:00Z
              appstoreserver ledger show --db ledger.db    # counts, disagreements
              appstoreserver ledger disagreements --db ledger.db --limit 100 # paged
              appstoreserver ledger customers --db ledger.db    # customer ids, paged
              appstoreserver ledger reverify --db ledger.db    # verify again
              appstoreserver ledger import --db ledger.db --bundle-id com.example.app \\
                  --environment sandbox backfill.jsonl
              appstoreserver ledger export --db ledger.db backup.jsonl  # a backup
              appstoreserver ledger check --db ledger.db    # every stored row reads back
            """,
        subcommands: [Ingest.self, Import.self, Export.self, Show.self, Disagreements.self, Customers.self, Subscriptions.self,
                      Entitlements.self, Reverify.self, Check.self]
    )

    /// Where the ledger is.
    struct DatabaseOptions: ParsableArguments {
        @Option(help: ArgumentHelp("The ledger: sqlite:/path/ledger.db, a path, or postgresql://user@host/database (default: $APPSTORE_LEDGER).", valueName: "url"))
        var db: String?

        func url() throws(ToolFailure) -> String {
            let value = try fromEnvironment(db, "APPSTORE_LEDGER", option: "--db")
            // A plain path is a SQLite file (a URL names its scheme before the first colon, a path has a slash first).
            if let colon = value.firstIndex(of: ":"), !value[..<colon].contains("/") { return value }
            return "sqlite:" + value
        }
    }

    /// `--at` (the instant asked about) and `--as-of` (the knowledge time): milliseconds since 1970 or an ISO 8601
    /// date-time; nil: now.
    struct InstantOptions: ParsableArguments {
        @Option(help: ArgumentHelp("The instant asked about: an ISO 8601 date-time (2025-04-01T00:00:00Z) or milliseconds since 1970 (default: now).", valueName: "time"))
        var at: String?
        @Option(name: .customLong("as-of"), help: ArgumentHelp("Knowledge time: only what was signed by then counts; --as-of equal to --at answers as known then (default: now, everything known).", valueName: "time"))
        var asOf: String?

        func milliseconds() throws(ToolFailure) -> Int64? { try Self.parse(at, "--at") }
        func asOfMilliseconds() throws(ToolFailure) -> Int64? { try Self.parse(asOf, "--as-of") }

        static func parse(_ value: String?, _ option: String) throws(ToolFailure) -> Int64? {
            guard let value else { return nil }
            if let ms = Int64(value), ms > 0 { return ms }
            if let date = try? Date(value, strategy: .iso8601) {
                let ms = Int64((date.timeIntervalSince1970 * 1000).rounded())
                if ms >= 0 { return ms }
            }
            throw .usage("\(option) \(QuotedText.quote(value)): expected an ISO 8601 date-time (2025-04-01T00:00:00Z) "
                + "or milliseconds since 1970 (after 1970)")
        }
    }

    static func open(_ url: String, _ verifier: SignedDataVerifier) throws(ToolFailure) -> Ledger {
        do { return try Ledger.open(url, verifier: verifier) } catch { throw ToolFailure(error) }
    }

    /// The ledger for queries: they verify nothing (what is stored was verified when it was ingested), so it is
    /// opened with the identity it records (a ledger holds one app in one environment), and the bundled Apple root
    /// or `roots`.
    static func openForQueries(_ db: DatabaseOptions, roots: [String] = []) throws(ToolFailure) -> Ledger {
        let (ders, _) = try trustAnchors(roots, default: .g3)
        let url = try db.url()
        do throws(LedgerError) {
            return try Ledger.open(url) { bundleId, environment, appAppleId in
                try SignedDataVerifier(rootCertificates: ders, bundleId: bundleId, appAppleId: appAppleId,
                                       environment: environment, enableOnlineChecks: false, transport: nil)
            }
        } catch {
            throw ToolFailure(error)
        }
    }
}

extension ToolFailure {
    init(_ f: LedgerError) {
        let exit: ExitStatus = switch f.statusCode {
        case .invalidArgument: .usage
        case .configurationError: .configuration
        case .storageError: .storage
        default: .internal
        }
        self.init(f, exit)
    }
}

// MARK: reverify

extension LedgerCommand {
    struct Reverify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify every value stored in the ledger again.",
            discussion: """
                Opens the ledger with the app and environment it records and verifies every stored value again \
                with the bundled Apple root (or --root). stdout: LedgerReverifyResult (checked, and the refused \
                ones with the verifier's status, reason and message). Exit status 1 when any is refused now.
                """
        )

        @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: the bundled Apple root).", valueName: "file"))
        var roots: [String] = []
        @OptionGroup var database: DatabaseOptions

        func run() throws {
            try reporting {
                let ledger = try LedgerCommand.openForQueries(database, roots: roots)
                let report: LedgerReverifyResult
                do throws(LedgerError) { report = try ledger.reverifyReport() } catch { throw ToolFailure(error) }
                Output.line(String(decoding: report.json(), as: UTF8.self))
                Output.error("ledger: \(report.checked) stored value\(report.checked == 1 ? "" : "s") verified again, "
                             + "\(report.refused.count) refused")
                if !report.refused.isEmpty { throw ExitCode(ExitStatus.invalid.rawValue) }
            }
        }
    }
}

// MARK: export

extension LedgerCommand {
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every stored value as JSON lines that `ledger import` reads back.",
            discussion: """
                One line per value, in the order stored: {"notification": JWS}, {"transaction": JWS} or \
                {"renewalInfo": JWS}, each JWS byte for byte as it was ingested (docs/ledger.md, "Export"): a backup, \
                or a move to another store (`ledger import --db postgresql://... FILE`). FILE is written beside \
                itself under a temporary name (mode 0600), flushed, then renamed, so it is the whole export or what it \
                was before; stdout: LedgerExportResult. FILE `-`: the lines on stdout, the counts on stderr.
                """
        )

        @Argument(help: ArgumentHelp("The file to write, or - for stdout.", valueName: "file"))
        var file: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try reporting {
                let ledger = try LedgerCommand.openForQueries(database)
                // `-`: the lines go to stdout as they are read, a page at a time.
                func toStdout(_ chunk: [UInt8]) throws(LedgerError) {
                    var offset = 0
                    while offset < chunk.count {
                        let n = chunk.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
                        if n < 0 && errno == EINTR { continue }
                        guard n > 0 else {
                            throw LedgerError(statusCode: .storageError, reason: .storageFailed,
                                              message: "cannot write the export to stdout: \(String(cString: strerror(errno)))")
                        }
                        offset += n
                    }
                }
                let result: LedgerExportResult
                do throws(LedgerError) {
                    result = file == "-" ? try ledger.exportJSONLines(toStdout) : try ledger.exportJSONLines(path: file)
                } catch { throw ToolFailure(error) }
                if file == "-" {
                    Output.error(String(decoding: result.json(), as: UTF8.self))
                } else {
                    Output.json(result.json(), output)
                }
            }
        }
    }
}

// MARK: ingest

extension LedgerCommand {
    enum IngestKind: String, ExpressibleByArgument, CaseIterable {
        case auto, notification, transaction
        case renewalInfo = "renewal-info"
    }

    struct Ingest: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify signed values and record them in the ledger.",
            discussion: """
                Each FILE (or stdin) holds compact JWS values, one per line, or JSON: a notification body \
                ({"signedPayload": …}), a Get Transaction History page ({"signedTransactions": […]}), a Get All \
                Subscription Statuses answer (every signedTransactionInfo and signedRenewalInfo in it), or JSON \
                lines of these. Every value is verified (a notification deeply) with your app's identity, then \
                recorded; each is durable before the next is read. Ingesting a value again changes nothing.

                stdout: one JSON line per value (LedgerIngestResult: kind, stored, the oracle's appleStatus / \
                engineStatus / agrees). stderr: a refused value's status and reason (the others are still \
                recorded; the exit status is then 1), and the totals.
                """
        )

        @Argument(help: ArgumentHelp("Files of signed values, or - (the default) for stdin.", valueName: "file"))
        var files: [String] = []
        @Option(help: "The kind of bare JWS lines: auto | notification | transaction | renewal-info (JSON members name their own).")
        var kind: IngestKind = .auto
        @Option(help: "The app's bundle id (default: $APPSTORE_BUNDLE_ID).")
        var bundleId: String?
        @Option(help: "The app's App Apple ID (required for production).")
        var appAppleId: Int64?
        @Option(help: "production | sandbox | xcode | local-testing (default: $APPSTORE_ENVIRONMENT).")
        var environment: EnvironmentOption?
        @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: the bundled Apple root).", valueName: "file"))
        var roots: [String] = []
        @OptionGroup var database: DatabaseOptions

        func run() throws {
            try reporting {
                let url = try database.url()
                let verifier = try makeVerifier()
                let ledger = try LedgerCommand.open(url, verifier)
                var counts = (stored: 0, again: 0, refused: 0, disagreements: 0)
                for file in files.isEmpty ? ["-"] : files {
                    let values = try SignedValues.read(file, bareKind: kind)
                    for v in values {
                        do {
                            let r: LedgerIngestResult
                            switch v.kind {
                            case .notification: r = try ledger.ingest(notification: v.jws)
                            case .transaction: r = try ledger.ingest(transaction: v.jws)
                            default: r = try ledger.ingest(renewalInfo: v.jws)
                            }
                            if r.stored { counts.stored += 1 } else { counts.again += 1 }
                            if r.stored && r.verdict == .contradiction { counts.disagreements += 1 }
                            Output.line(String(decoding: r.json(), as: UTF8.self))
                        } catch let f as VerificationFailure {
                            counts.refused += 1
                            Output.error("error: \(f.statusCode.name) (\(f.reason.name)): \(v.source): \(f.message)")
                        } catch let f as LedgerError {
                            throw ToolFailure(f)
                        } catch {
                            throw ToolFailure(.internal, status: "INTERNAL_ERROR", reason: "internal", "\(v.source): \(error)")
                        }
                    }
                }
                let total = counts.stored + counts.again + counts.refused
                Output.error("ledger: \(total) value\(total == 1 ? "" : "s"): \(counts.stored) stored, \(counts.again) already there, "
                             + "\(counts.refused) refused; \(counts.disagreements) contradicting Apple's status")
                if counts.refused > 0 { throw ExitCode(ExitStatus.invalid.rawValue) }
            }
        }

        func makeVerifier() throws(ToolFailure) -> SignedDataVerifier {
            try LedgerCommand.verifier(bundleId: bundleId, appAppleId: appAppleId, environment: environment, roots: roots)
        }
    }

    /// The verifier of `ingest` and `import`: the app's identity from the options or the environment.
    static func verifier(bundleId: String?, appAppleId: Int64?, environment: EnvironmentOption?,
                         roots: [String]) throws(ToolFailure) -> SignedDataVerifier {
        let bundle = try fromEnvironment(bundleId, "APPSTORE_BUNDLE_ID", option: "--bundle-id")
        let env: AppStoreEnvironment
        if let environment {
            env = environment.environment
        } else if let e = ProcessInfo.processInfo.environment["APPSTORE_ENVIRONMENT"]?.lowercased(), !e.isEmpty {
            guard let option = EnvironmentOption(rawValue: e) else {
                throw .usage("APPSTORE_ENVIRONMENT=\(e): use production, sandbox, xcode or local-testing")
            }
            env = option.environment
        } else {
            throw .usage("missing --environment (or set APPSTORE_ENVIRONMENT): the ledger records data of one environment")
        }
        let (ders, _) = try trustAnchors(roots, default: .g3)
        do {
            return try SignedDataVerifier(rootCertificates: ders, bundleId: bundle, appAppleId: appAppleId,
                                          environment: env, enableOnlineChecks: false, transport: nil)
        } catch {
            throw ToolFailure(error)
        }
    }
}

/// The signed values of one input: bare JWS lines, or JSON (one value or JSON lines) whose `signed…` members name
/// their kinds.
struct SignedValues {
    let kind: LedgerEventKind
    let jws: String
    /// Where it came from, for messages: "file:line" or "file: signedTransactions[3]".
    let source: String

    static func read(_ file: String, bareKind: LedgerCommand.IngestKind) throws(ToolFailure) -> [SignedValues] {
        let name = file == "-" ? "stdin" : file
        let text = try Input.text(try Input.read(file, what: "signed values"), what: name)
        if text.hasPrefix("{") || text.hasPrefix("[") {
            if let whole = JSONValue.parse(text) {
                var out: [SignedValues] = []
                // An answer with none (an empty history page) is fine; JSON without any of the members is not input.
                guard collect(whole, name, &out) else {
                    throw .noInput("\(name): no signed value found in the JSON (signedPayload, signedTransactions, signedTransactionInfo, signedRenewalInfo)")
                }
                return out
            }
        }
        var out: [SignedValues] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw).trimmed()
            guard !line.isEmpty else { continue }
            let where_ = "\(name):\(i + 1)"
            if line.hasPrefix("{") || line.hasPrefix("[") {
                guard let value = JSONValue.parse(line) else {
                    throw ToolFailure(.invalid, status: "INVALID_JWT_FORMAT", reason: "malformed", "\(where_): not JSON")
                }
                guard collect(value, where_, &out) else { throw .noInput("\(where_): no signed value in this JSON line") }
            } else {
                out.append(SignedValues(kind: bare(line, bareKind), jws: line, source: where_))
            }
        }
        guard !out.isEmpty else { throw .noInput("\(name) holds no signed value") }
        return out
    }

    /// A bare JWS's kind: as asked, or from its payload's keys (the verifier then checks it is that kind).
    static func bare(_ jws: String, _ asked: LedgerCommand.IngestKind) -> LedgerEventKind {
        switch asked {
        case .notification: return .notification
        case .transaction: return .transaction
        case .renewalInfo: return .renewalInfo
        case .auto:
            switch (try? UnverifiedSignedData.read(jws).get())?.kind {
            case .transaction?: return .transaction
            case .renewalInfo?: return .renewalInfo
            default: return .notification  // and a malformed value is refused as a notification, with its reason
            }
        }
    }

    /// Appends the signed values in `value`; whether it holds any member that carries them (even none).
    @discardableResult
    static func collect(_ value: JSONValue, _ source: String, _ out: inout [SignedValues]) -> Bool {
        var found = false
        switch value {
        case .string(let s) where s.split(separator: ".", omittingEmptySubsequences: false).count == 3:
            out.append(SignedValues(kind: bare(s, .auto), jws: s, source: source))
            found = true
        case .array(let items):
            for (i, item) in items.enumerated() { found = collect(item, "\(source)[\(i)]", &out) || found }
        case .object(let members):
            if let s = value["signedPayload"]?.stringValue {
                out.append(SignedValues(kind: .notification, jws: s, source: "\(source): signedPayload"))
                return true
            }
            for (key, member) in members {
                let here = "\(source): \(key)"
                switch (key, member) {
                case ("signedTransactionInfo", .string(let s)), ("signedTransaction", .string(let s)):
                    out.append(SignedValues(kind: .transaction, jws: s, source: here))
                    found = true
                case ("signedRenewalInfo", .string(let s)):
                    out.append(SignedValues(kind: .renewalInfo, jws: s, source: here))
                    found = true
                case ("lastTransactions", .array(let items)) where items.isEmpty:
                    found = true  // a Get All Subscription Statuses answer without any
                case ("signedTransactions", .array(let items)):
                    for (i, item) in items.enumerated() {
                        if case .string(let s) = item {
                            out.append(SignedValues(kind: .transaction, jws: s, source: "\(here)[\(i)]"))
                        }
                    }
                    found = true
                case (_, .array), (_, .object):
                    found = collect(member, here, &out) || found
                default:
                    break
                }
            }
        default:
            break
        }
        return found
    }
}

// MARK: import, check

extension LedgerCommand {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a file of JSON lines of signed values (a backfill): parallel, in batches, resumable.",
            discussion: """
                Each line of FILE is {"notification": JWS}, {"signedPayload": JWS} (a notification body as Apple \
                posts it), {"transaction": JWS}, {"renewalInfo": JWS}, or a bare JWS (a notification); empty lines \
                are skipped (ledger.md, "Bulk import"). Values are verified on every core and committed \
                --batch-size lines per transaction. A value whose payload and signature are already stored is skipped \
                without being verified again: after an interruption (even kill -9), run the same command again; it \
                stores what is missing and nothing twice.

                stdout: LedgerImportResult (read, stored, alreadyPresent, refusedCount, and the first 1000 refused \
                lines). stderr: each refused line's number, status, reason and message, the totals, and progress \
                when stderr is a terminal. Exit status 1 when any line was refused.
                """
        )

        @Argument(help: ArgumentHelp("The JSON lines file.", valueName: "file"))
        var file: String
        @Option(help: "Lines per transaction (default 1000).")
        var batchSize: Int = 1000
        @Option(help: "The app's bundle id (default: $APPSTORE_BUNDLE_ID).")
        var bundleId: String?
        @Option(help: "The app's App Apple ID (required for production).")
        var appAppleId: Int64?
        @Option(help: "production | sandbox | xcode | local-testing (default: $APPSTORE_ENVIRONMENT).")
        var environment: EnvironmentOption?
        @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: the bundled Apple root).", valueName: "file"))
        var roots: [String] = []
        @OptionGroup var database: DatabaseOptions

        func run() throws {
            try reporting {
                guard batchSize > 0 else { throw ToolFailure.usage("--batch-size must be at least 1") }
                let verifier = try LedgerCommand.verifier(bundleId: bundleId, appAppleId: appAppleId,
                                                          environment: environment, roots: roots)
                let ledger = try LedgerCommand.open(try database.url(), verifier)
                let tty = isatty(STDERR_FILENO) == 1
                let options = LedgerImportOptions(batchSize: batchSize) { lines, bytes, total in
                    guard tty else { return }
                    let share = total > 0 ? " (\(bytes * 100 / total)%)" : ""
                    Output.partial("\rledger import: \(lines) lines\(share)")
                }
                let result: LedgerImportResult
                do throws(LedgerError) { result = try ledger.importJSONLines(path: file, options: options) } catch {
                    if tty { Output.partial("\n") }
                    throw ToolFailure(error)
                }
                if tty { Output.partial("\n") }
                for r in result.refused { Output.error("error: \(r.status) (\(r.reason)): \(file):\(r.line): \(r.message)") }
                if result.refusedCount > Int64(result.refused.count) {
                    Output.error("note: \(result.refusedCount - Int64(result.refused.count)) more refused lines not listed")
                }
                Output.line(String(decoding: result.json(), as: UTF8.self))
                Output.error("ledger: \(result.read) lines: \(result.stored) stored, \(result.alreadyPresent) already present, "
                             + "\(result.refusedCount) refused")
                if result.refusedCount > 0 { throw ExitCode(ExitStatus.invalid.rawValue) }
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read back every stored row; list those that do not (a missing or corrupt certificate chain).",
            discussion: """
                Reads every row of the events table (every identity; nothing is verified: reverify does that) and \
                checks that it reconstructs to its signed value and that the payload decodes. stdout: one JSON \
                object, {"checked": N, "problems": [{"eventId": ID, "message": WHY}]}. Exit status 74 when any row \
                does not read back.
                """
        )

        @OptionGroup var database: DatabaseOptions

        func run() throws {
            try reporting {
                let report: (checked: Int64, problems: [LedgerStorageProblem])
                let url = try database.url()
                do throws(LedgerError) { report = try Ledger.check(url) } catch { throw ToolFailure(error) }
                let problems = JSONValue.array(report.problems.map {
                    .object([("eventId", .number(String($0.eventId))), ("message", .string($0.message))])
                })
                Output.line(JSONValue.object([("checked", .number(String(report.checked))), ("problems", problems)]).serialized())
                for p in report.problems { Output.error("error: event \(p.eventId): \(p.message)") }
                Output.error("ledger: \(report.checked) stored row\(report.checked == 1 ? "" : "s") read back, "
                             + "\(report.problems.count) with a problem")
                if !report.problems.isEmpty { throw ExitCode(ExitStatus.storage.rawValue) }
            }
        }
    }
}

// MARK: queries

extension LedgerCommand {
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A subscription's state (Apple's status, product, expiry, grace, renewal, revocation), or the ledger's counts.",
            discussion: """
                With ORIGINAL_TRANSACTION_ID: the subscription at --at (default now) as JSON (LedgerSubscription), \
                from what was signed by --as-of (default now; equal to --at: as known then), or null when the \
                ledger knows no transaction of it. Without: the ledger's counts and the \
                oracle's disagreements with Apple's data.status (LedgerSummary).
                """
        )

        @Argument(help: ArgumentHelp("The subscription's originalTransactionId (default: the ledger's counts).", valueName: "original-transaction-id"))
        var originalTransactionId: String?
        @OptionGroup var instant: InstantOptions
        @Option(help: ArgumentHelp("The counts' list: at most N disagreements, contradictions first (0...1000000; the counts are exact either way).",
                                   valueName: "n"))
        var disagreements: Int = Ledger.summaryDisagreementLimit
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try reporting {
                if originalTransactionId != nil && disagreements != Ledger.summaryDisagreementLimit {
                    throw ToolFailure.usage("--disagreements is for the counts: name no subscription")
                }
                if originalTransactionId == nil && (instant.at != nil || instant.asOf != nil) {
                    throw ToolFailure.usage("\(instant.at != nil ? "--at" : "--as-of") is for a subscription: name one")
                }
                let at = try instant.milliseconds()
                let asOf = try instant.asOfMilliseconds()
                let ledger = try LedgerCommand.openForQueries(database)
                do throws(LedgerError) {
                    guard let id = originalTransactionId else {
                        let summary = try ledger.summary(disagreementLimit: disagreements)
                        let all = (summary.contradictions ?? 0) + (summary.incompleteHistories ?? 0)
                        if all > summary.disagreements.count {
                            Output.error("note: \(summary.disagreements.count) of \(all) disagreements listed "
                                + "(contradictions first); --disagreements N lists more, `ledger disagreements` pages through all")
                        }
                        Output.json(summary.json(), output)
                        return
                    }
                    guard let s = try ledger.subscription(id, at: at, asOf: asOf) else {
                        Output.error("note: the ledger knows no transaction of subscription \(QuotedText.quote(id)) at that instant")
                        Output.line("null")
                        return
                    }
                    Output.json(s.json(), output)
                } catch {
                    throw ToolFailure(error)
                }
            }
        }
    }

    struct Disagreements: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every disagreement of the oracle with Apple's data.status, a page at a time.",
            discussion: """
                Prints a page as JSON (LedgerDisagreementPage): at most --limit disagreements in the summary's order \
                (every CONTRADICTION first, then INCOMPLETE_HISTORY, each by signedDate), and "next", the cursor of \
                the next page, absent after the last. Give it as --after for the next page (stderr says so).
                """
        )

        @Option(help: ArgumentHelp("The \"next\" of the previous page (default: the first page).", valueName: "cursor"))
        var after: String?
        @Option(help: ArgumentHelp("At most N disagreements (1...10000).", valueName: "n"))
        var limit: Int = 1000
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try reporting {
                let ledger = try LedgerCommand.openForQueries(database)
                let page: LedgerDisagreementPage
                do throws(LedgerError) { page = try ledger.disagreements(after: after, limit: limit) } catch { throw ToolFailure(error) }
                if let next = page.next { Output.error("note: more follow: --after \(next)") }
                Output.json(page.json(), output)
            }
        }
    }

    /// `ledger customers` and `ledger subscriptions`: one page of ids, as JSON (LedgerIdPage).
    struct IdPageOptions: ParsableArguments {
        @Option(help: ArgumentHelp("The \"next\" of the previous page, its last id (default: the first page).", valueName: "id"))
        var after: String?
        @Option(help: ArgumentHelp("At most N ids (1...10000).", valueName: "n"))
        var limit: Int = 1000
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func print(_ read: (Ledger, String?, Int) throws(LedgerError) -> LedgerIdPage) throws {
            try reporting {
                let ledger = try LedgerCommand.openForQueries(database)
                let page: LedgerIdPage
                do throws(LedgerError) { page = try read(ledger, after, limit) } catch { throw ToolFailure(error) }
                if let next = page.next { Output.error("note: more follow: --after \(next)") }
                Output.json(page.json(), output)
            }
        }
    }

    struct Customers: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The ledger's customer ids, a page at a time.",
            discussion: """
                Prints a page as JSON (LedgerIdPage): at most --limit customer ids (appAccountTokens in lowercase, \
                else originalTransactionIds: what `ledger entitlements` answers for) in the database's order, and "next", \
                absent after the last page. Give it as --after for the next page (stderr says so).
                """
        )
        @OptionGroup var page: IdPageOptions
        func run() throws { try page.print { (l, a, n) throws(LedgerError) in try l.customerIds(after: a, limit: n) } }
    }

    struct Subscriptions: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The ledger's subscription ids (originalTransactionIds), a page at a time.",
            discussion: """
                Prints a page as JSON (LedgerIdPage): at most --limit originalTransactionIds of auto-renewable \
                subscriptions in the database's order, and "next", absent after the last page. Give it as --after for the \
                next page (stderr says so).
                """
        )
        @OptionGroup var page: IdPageOptions
        func run() throws { try page.print { (l, a, n) throws(LedgerError) in try l.subscriptionIds(after: a, limit: n) } }
    }

    struct Entitlements: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What a customer is entitled to, why, and until when.",
            discussion: """
                CUSTOMER is an appAccountToken (any case), or the originalTransactionId of purchases made without one. \
                Prints the customer at --at (default now), from what was signed by --as-of (default now; equal to \
                --at: as known then), as JSON (LedgerCustomer: entitlements, subscriptions, one-time purchases, \
                consumables), or with --summary one line per entitled product.
                """
        )

        @Argument(help: ArgumentHelp("An appAccountToken, or an originalTransactionId.", valueName: "customer"))
        var customer: String
        @Flag(help: "One line per entitled product (product, why, until) instead of JSON.")
        var summary = false
        @OptionGroup var instant: InstantOptions
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            try reporting {
                let at = try instant.milliseconds()
                let asOf = try instant.asOfMilliseconds()
                let ledger = try LedgerCommand.openForQueries(database)
                let c: LedgerCustomer
                do throws(LedgerError) {
                    c = try ledger.customer(customer, at: at, asOf: asOf)
                } catch {
                    throw ToolFailure(error)
                }
                guard summary else {
                    Output.json(c.json(), output)
                    return
                }
                if c.entitlements.isEmpty { Output.line("no entitlements at \(iso8601(c.at))") }
                for e in c.entitlements {
                    let until = e.until.map { "until \(iso8601($0))" } ?? "no end"
                    Output.line("\(e.productId.padded(to: 40)) \(e.reason.rawValue.padded(to: 26)) \(until)")
                }
            }
        }
    }
}
