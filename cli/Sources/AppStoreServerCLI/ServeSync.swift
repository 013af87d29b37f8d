import AppStoreServer
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `serve --sync-interval`: `sync` run periodically inside the server, for each environment served, into the
/// server's own ledgers (docs/serve.md, "sync").
struct ServeSyncOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Also run `sync` every this many seconds (1-86400; e.g. 3600), for each environment served, with the API key below; its cursor beside each SQLite ledger, in each PostgreSQL ledger (one process of a fleet syncs at a time).", valueName: "seconds"))
    var syncInterval: Int?
    @Option(name: .customLong("key"), help: ArgumentHelp("For --sync-interval: the App Store Server API private key (.p8) (default: $APPSTORE_PRIVATE_KEY).", valueName: "file"))
    var apiKey: String?
    @Option(help: "For --sync-interval: the key's id (default: $APPSTORE_KEY_ID).")
    var keyId: String?
    @Option(help: "For --sync-interval: your team's issuer id (default: $APPSTORE_ISSUER_ID).")
    var issuerId: String?
    @Flag(help: "For --sync-interval: also Get Transaction History of every subscription the ledger knows.")
    var syncKnownSubscriptions = false
    @Option(help: ArgumentHelp("For --sync-interval: another base URL of the App Store Server API (a test server).", valueName: "url"))
    var apiBaseURL: String?

    /// The periodic sync asked for, checked now (a missing key is an error at start, not an hour later); nil: none.
    func make(_ config: ServeConfig, bundle: String) throws(ToolFailure) -> ServeSync? {
        guard let interval = syncInterval else {
            if apiKey != nil || keyId != nil || issuerId != nil || syncKnownSubscriptions || apiBaseURL != nil {
                throw ToolFailure.usage("--key, --key-id, --issuer-id, --sync-known-subscriptions and --api-base-url are for --sync-interval")
            }
            return nil
        }
        guard (1...86_400).contains(interval) else { throw ToolFailure.usage("--sync-interval: 1 to 86400 seconds") }
        let key = try KeySource.load(apiKey)
        let (kid, iss) = (try fromEnvironment(keyId, "APPSTORE_KEY_ID", option: "--key-id"),
                          try fromEnvironment(issuerId, "APPSTORE_ISSUER_ID", option: "--issuer-id"))
        var jobs: [ServeSync.Job] = []
        for (env, url) in config.ledgers.sorted(by: { $0.key < $1.key }) {
            let caller = try Sync.caller(key: key, keyId: kid, issuerId: iss, bundle: bundle, environment: env.environment,
                                         baseURL: apiBaseURL, timeout: 30, retries: 5)
            // SQLite: the cursor beside the ledger; PostgreSQL: in the ledger, under its sync lease (one process of
            // the fleet syncs; the others stand by and take over when it is gone).
            let postgres = url.hasPrefix("postgresql://") || url.hasPrefix("postgres://")
            jobs.append(ServeSync.Job(environment: env, caller: caller,
                                      statePath: postgres ? nil : try Sync.statePath(nil, ledgerURL: url)))
        }
        var plan = SyncPlan()
        plan.knownSubscriptions = syncKnownSubscriptions
        return ServeSync(interval: interval, plan: plan, bundle: bundle, jobs: jobs)
    }
}

/// The sync thread: a run for each environment, then a pause of the interval, until `stop`.
final class ServeSync: @unchecked Sendable {
    struct Job {
        let environment: ServeEnvironment
        let caller: AppStoreServerAPICaller
        /// The cursor's file (SQLite); nil: the ledger keeps it, under its sync lease (PostgreSQL).
        let statePath: String?
    }

    let interval: Int
    let plan: SyncPlan
    let bundle: String
    let jobs: [Job]
    private let stopping = Locked(false)
    private let finished = Locked(false)
    private var ledgers: [ServeEnvironment: Ledger] = [:]
    /// The sync leases this process holds (PostgreSQL), kept from run to run, and the cursor as its last run left
    /// it: the sync thread's alone.
    private var leases: [ServeEnvironment: (lease: LedgerSyncLease, state: SyncState)] = [:]
    private var telemetry: ServeTelemetry?
    private var thread = pthread_t()
    private var joinable = false

    init(interval: Int, plan: SyncPlan, bundle: String, jobs: [Job]) {
        self.interval = interval
        self.plan = plan
        self.bundle = bundle
        self.jobs = jobs
    }

    var isStopping: Bool { stopping.withLock { $0 } }

    /// The server's ledgers (shared: `Ledger` is thread-safe); `stop` releases them.
    func attach(_ ledgers: [ServeEnvironment: Ledger]) {
        self.ledgers = ledgers
    }

    /// Starts the thread: a run for each environment at once, then after each interval.
    func start(_ telemetry: ServeTelemetry) {
        self.telemetry = telemetry
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { p in
            let me = Unmanaged<ServeSync>.fromOpaque(p!).takeRetainedValue()
            me.loop()
            return nil
        }, box)
        joinable = rc == 0
        if rc != 0 {
            Unmanaged<ServeSync>.fromOpaque(box).release()
            finished.withLock { $0 = true }
            telemetry.log("error", "sync_failed", [("message", .string("cannot start the sync thread (error \(rc))"))])
        }
    }

    /// Asks the thread to stop (it finishes the page it is on) and waits up to `seconds`; whether it stopped. The
    /// ledgers are released only then, so that closing them waits for no sync.
    func stop(waitingUpTo seconds: Double) -> Bool {
        stopping.withLock { $0 = true }
        let deadline = Timestamp.nowMilliseconds() + Int64(seconds * 1000)
        while !finished.withLock({ $0 }) {
            guard Timestamp.nowMilliseconds() < deadline else { return false }
            usleep(50_000)
        }
        if joinable { pthread_join(thread, nil) }
        for (_, held) in leases { held.lease.release() }
        leases = [:]
        ledgers = [:]
        return true
    }

    private func loop() {
        defer { finished.withLock { $0 = true } }
        while !isStopping {
            for job in jobs where !isStopping { run(job) }
            // The pause, in steps, so that SIGTERM does not wait for it.
            let until = Timestamp.nowMilliseconds() + Int64(interval) * 1000
            while !isStopping && Timestamp.nowMilliseconds() < until { usleep(100_000) }
        }
    }

    /// The environment's sync lease: the one this process holds (checked: its connection never lost, no later
    /// holder), or taken now; nil when another process holds it (a `sync` log line, outcome `standby`).
    private func lease(_ job: Job, _ ledger: Ledger, _ telemetry: ServeTelemetry) throws(ToolFailure) -> (lease: LedgerSyncLease, state: SyncState)? {
        let env = job.environment
        if let held = leases[env] {
            if held.lease.isHeld() { return held }
            held.lease.release()
            leases[env] = nil
            telemetry.log("warn", "sync_lease_lost", [("environment", .string(env.rawValue)),
                                                      ("message", .string("the sync lease on \(held.lease.location) was lost; taking it again"))])
        }
        let attempt: LedgerSyncLease.Attempt
        do throws(LedgerError) { attempt = try ledger.acquireSyncLease(holder: SyncCursor.holder) } catch { throw ToolFailure(error) }
        switch attempt {
        case .acquired(let lease):
            let state = try SyncCursor.load(lease, bundleId: bundle, environment: env.environment.rawValue, importing: nil)
            leases[env] = (lease, state)
            telemetry.log("info", "sync_lease", [("environment", .string(env.rawValue)), ("generation", .int(lease.generation)),
                                                 ("cursor", .string(lease.location))])
            return (lease, state)
        case .held(let holder, let since):
            telemetry.count { c in c.sync.runs[env.rawValue, default: [:]]["standby", default: 0] += 1 }
            var fields: [(String, LogValue)] = [("environment", .string(env.rawValue)), ("outcome", .string("standby")),
                                                ("holder", .string(holder ?? "unknown"))]
            if let since { fields.append(("since", .int(since))) }
            telemetry.log("info", "sync", fields)
            return nil
        }
    }

    private func run(_ job: Job) {
        guard let ledger = ledgers[job.environment], let telemetry else { return }
        let env = job.environment.rawValue
        let started = Timestamp.nowMilliseconds()
        var fields: [(String, LogValue)] = [("environment", .string(env))]
        var runner: SyncRunner?
        var failure: ToolFailure?
        do throws(ToolFailure) {
            let cursor: SyncCursor
            let state: SyncState
            var lock: Int32 = -1
            defer { if lock >= 0 { close(lock) } }
            if let path = job.statePath {
                lock = try SyncState.lock(path)
                cursor = .file(path)
                state = try SyncState.load(path, bundleId: bundle, environment: job.environment.environment.rawValue)
            } else {
                guard let held = try lease(job, ledger, telemetry) else { return }
                cursor = .database(held.lease)
                state = held.state
            }
            let r = SyncRunner(ledger: ledger, caller: job.caller, transport: ToolHTTPTransport(), cursor: cursor,
                               state: state, shouldStop: { [weak self] in self?.isStopping ?? true })
            runner = r
            defer { if job.statePath == nil, leases[job.environment] != nil { leases[job.environment]?.state = r.state } }
            try r.run(plan)
        } catch {
            failure = error
        }
        let summary = runner?.summary ?? SyncSummary()
        let outcome = failure.map { "failed_\($0.reason)" } ?? summary.errors.first.map { "api_\($0.failure.reason)" }
            ?? (!summary.unverified.isEmpty ? "unverified" : summary.rejections.isEmpty ? "ok" : "rejected")
        telemetry.count { c in
            c.sync.runs[env, default: [:]][outcome, default: 0] += 1
            c.sync.pages[env, default: 0] += summary.pages
            c.sync.stored[env, default: 0] += summary.stored
            c.sync.duplicates[env, default: 0] += summary.duplicates
            for r in summary.rejections { c.sync.rejected[env, default: [:]][r.reason, default: 0] += 1 }
            for u in summary.unverified { c.sync.unverified[env, default: [:]][u.reason, default: 0] += 1 }
            if failure == nil && summary.errors.isEmpty && summary.unverified.isEmpty { c.sync.lastSuccess[env] = Timestamp.nowMilliseconds() }
        }
        fields += [("outcome", .string(outcome)), ("pages", .int(Int64(summary.pages))),
                   ("notifications", .int(Int64(summary.notifications))), ("transactions", .int(Int64(summary.transactions))),
                   ("stored", .int(Int64(summary.stored))), ("duplicates", .int(Int64(summary.duplicates))),
                   ("rejected", .int(Int64(summary.rejections.count))), ("unverified", .int(Int64(summary.unverified.count))),
                   ("durationMs", .int(Timestamp.nowMilliseconds() - started))]
        if let w = summary.window {
            fields += [("startDate", .int(w.startDate)), ("endDate", .int(w.endDate)), ("resumed", .bool(summary.resumed))]
        }
        if !summary.rejections.isEmpty {
            fields.append(("rejections", .json(JSONValue.array(summary.rejections.map(\.json)).serialized())))
        }
        if !summary.unverified.isEmpty {
            fields.append(("unverifiedValues", .json(JSONValue.array(summary.unverified.map(\.json)).serialized())))
        }
        if !summary.errors.isEmpty {
            fields.append(("errors", .json(JSONValue.array(summary.errors.map(\.problem.json)).serialized())))
        }
        if let failure { fields.append(("message", .string("\(failure.status) (\(failure.reason)): \(failure.message)"))) }
        let level = failure != nil || !summary.errors.isEmpty || !summary.unverified.isEmpty ? "error"
            : (summary.rejections.isEmpty ? "info" : "warn")
        telemetry.log(level, "sync", fields)
    }
}
