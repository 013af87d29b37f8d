#if canImport(Glibc)
import Glibc
#endif

/// libpq, PostgreSQL's client library, loaded with dlopen the first time a `postgresql://` ledger is opened: the
/// library has no link-time dependency on it (a SQLite-only user never needs it installed; Debian: `libpq5`). Only
/// the few functions the ledger calls are declared, with their C signatures from libpq-fe.h (stable since 9.x).
final class LibPQ: @unchecked Sendable {
    typealias ConnectDB = @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
    typealias ConnStatus = @convention(c) (OpaquePointer?) -> Int32
    typealias ErrorMessage = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    typealias Finish = @convention(c) (OpaquePointer?) -> Void
    typealias Reset = @convention(c) (OpaquePointer?) -> Void
    typealias Exec = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?
    typealias ExecParams = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32, UnsafePointer<UInt32>?,
                                           UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                                           UnsafePointer<Int32>?, Int32) -> OpaquePointer?
    typealias Prepare = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32,
                                        UnsafePointer<UInt32>?) -> OpaquePointer?
    typealias ExecPrepared = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32,
                                             UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                                             UnsafePointer<Int32>?, Int32) -> OpaquePointer?
    typealias SendQuery = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    typealias GetResult = @convention(c) (OpaquePointer?) -> OpaquePointer?
    typealias ResultStatus = @convention(c) (OpaquePointer?) -> Int32
    typealias ResultErrorMessage = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    typealias NTuples = @convention(c) (OpaquePointer?) -> Int32
    typealias NFields = @convention(c) (OpaquePointer?) -> Int32
    typealias GetValue = @convention(c) (OpaquePointer?, Int32, Int32) -> UnsafePointer<CChar>?
    typealias GetIsNull = @convention(c) (OpaquePointer?, Int32, Int32) -> Int32
    typealias Clear = @convention(c) (OpaquePointer?) -> Void
    typealias NoticeProcessor = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void
    typealias SetNoticeProcessor = @convention(c) (OpaquePointer?, NoticeProcessor?, UnsafeMutableRawPointer?) -> NoticeProcessor?

    // ConnStatusType and ExecStatusType values (libpq-fe.h).
    static let connectionOK: Int32 = 0
    static let commandOK: Int32 = 1
    static let tuplesOK: Int32 = 2

    let connectdb: ConnectDB
    let status: ConnStatus
    let errorMessage: ErrorMessage
    let finish: Finish
    let reset: Reset
    let exec: Exec
    let execParams: ExecParams
    let prepare: Prepare
    let execPrepared: ExecPrepared
    let sendQuery: SendQuery
    let getResult: GetResult
    let resultStatus: ResultStatus
    let resultErrorMessage: ResultErrorMessage
    let ntuples: NTuples
    let nfields: NFields
    let getvalue: GetValue
    let getisnull: GetIsNull
    let clear: Clear
    let setNoticeProcessor: SetNoticeProcessor

    /// The names tried, in order: the runtime library's soname (Debian's libpq5), then the development symlink.
    static let names = ["libpq.so.5", "libpq.so"]

    /// Loaded once per process; the failure (libpq not installed) is reported on every open.
    static let shared: Result<LibPQ, LedgerError> = load()

    private init(_ handle: UnsafeMutableRawPointer) throws(LedgerError) {
        func symbol<T>(_ name: String, _: T.Type) throws(LedgerError) -> T {
            guard let p = dlsym(handle, name) else {
                throw .configuration("libpq has no \(name): it is too old or not libpq")
            }
            return unsafeBitCast(p, to: T.self)
        }
        connectdb = try symbol("PQconnectdb", ConnectDB.self)
        status = try symbol("PQstatus", ConnStatus.self)
        errorMessage = try symbol("PQerrorMessage", ErrorMessage.self)
        finish = try symbol("PQfinish", Finish.self)
        reset = try symbol("PQreset", Reset.self)
        exec = try symbol("PQexec", Exec.self)
        execParams = try symbol("PQexecParams", ExecParams.self)
        prepare = try symbol("PQprepare", Prepare.self)
        execPrepared = try symbol("PQexecPrepared", ExecPrepared.self)
        sendQuery = try symbol("PQsendQuery", SendQuery.self)
        getResult = try symbol("PQgetResult", GetResult.self)
        resultStatus = try symbol("PQresultStatus", ResultStatus.self)
        resultErrorMessage = try symbol("PQresultErrorMessage", ResultErrorMessage.self)
        ntuples = try symbol("PQntuples", NTuples.self)
        nfields = try symbol("PQnfields", NFields.self)
        getvalue = try symbol("PQgetvalue", GetValue.self)
        getisnull = try symbol("PQgetisnull", GetIsNull.self)
        clear = try symbol("PQclear", Clear.self)
        setNoticeProcessor = try symbol("PQsetNoticeProcessor", SetNoticeProcessor.self)
    }

    private static func load() -> Result<LibPQ, LedgerError> {
        var errors: [String] = []
        for name in names {
            if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) {
                do { return .success(try LibPQ(handle)) } catch { return .failure(error) }
            }
            errors.append(dlerror().map { String(cString: $0) } ?? name)
        }
        return .failure(.configuration("a postgresql:// ledger needs PostgreSQL's client library libpq, which cannot be "
            + "loaded (install it: Debian/Ubuntu libpq5, RHEL libpq): \(errors.joined(separator: "; "))"))
    }
}

/// One libpq connection, used under the ledger's lock. Text parameters and results (every value the ledger stores is
/// text or a 64-bit integer); a failure becomes a `LedgerError` with the server's message.
///
/// **A lost connection** (the server restarted, a failover, a network cut) is re-established: the failure that
/// revealed it is the caller's (STORAGE_ERROR, nothing acknowledged), unless it came from a statement outside a
/// transaction (BEGIN, a query), which is safe to send again and is, once, on the new connection. While the server
/// cannot be reached, a call fails at once (no wait for the lock) until the next attempt is due: 100 ms after the loss,
/// doubling to 5 s. Every reconnection runs the session settings and prepares the statements again. A COMMIT whose
/// answer was lost may or may not have committed: it is reported as a failure (nothing acknowledged), and the next
/// call's catch-up reads what the server has, so a value given again is stored once (docs/ledger.md, "Reconnecting").
final class PostgresConnection: @unchecked Sendable {
    let pq: LibPQ
    let handle: OpaquePointer
    /// The URL without its password, for messages.
    let shownURL: String
    /// Run on every (re)connection: session settings, then prepared statements (name, SQL, parameter count).
    private var sessionStatements: [(sql: String, what: String)] = []
    private var prepared: [(name: String, sql: String, parameters: Int)] = []
    /// Between BEGIN and COMMIT/ROLLBACK: a statement there cannot be sent again on a new connection.
    private var inTransaction = false
    /// The connection was lost and is not re-established yet; the next attempt is not before `nextAttempt`.
    private var lost: String?
    private var nextAttempt: Double = 0
    private var backoff: Double = 0
    /// Reconnections so far (for debugging: a connection that keeps being re-established).
    private(set) var reconnections = 0
    /// A loss was noticed and the connection not re-established yet: the next call reconnects first (a write that
    /// must not run on a new connection unannounced asks before it sends: `PostgresLedgerStore.commitInOneTrip`).
    var reconnectPending: Bool { lost != nil }

    static let firstBackoff = 0.1
    static let maximumBackoff = 5.0

    init(url: String, shownURL shown: String? = nil) throws(LedgerError) {
        pq = try LibPQ.shared.get()
        shownURL = Self.redacted(shown ?? url)
        guard let conn = pq.connectdb(url) else { throw .storage("cannot connect to \(shownURL): out of memory") }
        guard pq.status(conn) == LibPQ.connectionOK else {
            let message = Self.text(pq.errorMessage(conn))
            pq.finish(conn)
            throw .storage("cannot connect to the PostgreSQL ledger \(shownURL): \(message)")
        }
        handle = conn
        // The server's notices (e.g. "relation already exists") are not the caller's business: no stderr output.
        _ = pq.setNoticeProcessor(conn, { _, _ in }, nil)
    }

    deinit { pq.finish(handle) }

    private static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Runs `sql` now and after every reconnection (a session setting).
    func session(_ sql: String, what: String) throws(LedgerError) {
        try run(sql, what: what)
        sessionStatements.append((sql, what))
    }

    /// Re-establishes a lost connection (PQreset: the same parameters), unless the next attempt is not due yet.
    private func reconnect() throws(LedgerError) {
        guard let reason = lost else { return }
        let now = Self.monotonic()
        guard now >= nextAttempt else {
            throw .storage("the connection to the PostgreSQL ledger \(shownURL) was lost (\(reason)); next attempt to "
                + "reconnect in \(Int(((nextAttempt - now) * 1000).rounded(.up))) ms")
        }
        pq.reset(handle)
        var failure: String?
        if pq.status(handle) != LibPQ.connectionOK {
            failure = Self.text(pq.errorMessage(handle))
        } else {
            inTransaction = false
            lost = nil
            do throws(LedgerError) {
                for s in sessionStatements { _ = try execute(s.sql, [], prepared: false, what: s.what) }
                for p in prepared { try prepareNow(p.name, p.sql, parameters: p.parameters) }
            } catch {
                failure = error.message
            }
        }
        if let failure {
            backoff = min(max(backoff * 2, Self.firstBackoff), Self.maximumBackoff)
            nextAttempt = Self.monotonic() + backoff
            lost = lost ?? failure
            throw .storage("cannot reconnect to the PostgreSQL ledger \(shownURL): \(failure)")
        }
        backoff = 0
        reconnections += 1
    }

    /// Notes a lost connection after a failed call: the first attempt to reconnect is due at once.
    private func noteLoss(_ message: String) {
        guard pq.status(handle) != LibPQ.connectionOK, lost == nil else { return }
        lost = message
        nextAttempt = 0
        backoff = 0
    }

    static func text(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        // libpq's messages span lines ("...failed: Connection refused\n\tIs the server running..."): one line here.
        return String(cString: p).split(whereSeparator: { $0 == "\n" || $0 == "\t" || $0 == " " }).joined(separator: " ")
    }

    /// `scheme://user:password@host/...` with the password replaced; a password in the parameters too.
    static func redacted(_ url: String) -> String {
        var out = url
        if let scheme = out.firstRange(of: "://"), let at = out[scheme.upperBound...].firstIndex(of: "@") {
            let userinfo = out[scheme.upperBound..<at]
            if let colon = userinfo.firstIndex(of: ":") { out.replaceSubrange(colon..<at, with: ":***") }
        }
        if let q = out.firstIndex(of: "?") {
            let params = out[out.index(after: q)...].split(separator: "&").map { p -> String in
                p.lowercased().hasPrefix("password=") ? "password=***" : String(p)
            }
            out = String(out[...q]) + params.joined(separator: "&")
        }
        return QuotedText.quote(out)
    }

    /// Runs `sql` (parameters $1... as text, nil as NULL; or a prepared statement's name); the rows, as text. A lost
    /// connection is re-established first; a statement outside a transaction that fails because the connection was
    /// lost is sent once more on the new one.
    /// `commits`: `sql` ends with the COMMIT of the transaction (it is one as far as reconnecting goes). `once`: never
    /// sent again on a new connection (a flush: the new server's WAL is not the one to wait for).
    @discardableResult
    func run(_ sql: String, _ values: [SQLiteValue?] = [], prepared: Bool = false, what: String,
             commits: Bool = false, once: Bool = false) throws(LedgerError) -> [[String?]] {
        try perform(sql, what: what, commits: commits, once: once, prepared: prepared) { () throws(LedgerError) in
            try execute(sql, values, prepared: prepared, what: what)
        }
    }

    /// `sql`, several statements without parameters in one simple query (one round trip), as `run` sends it; the
    /// rows of each statement, in order (the first that fails ends it: a failure). `commits` as `run`.
    func runAll(_ sql: String, what: String, commits: Bool = false) throws(LedgerError) -> [[[String?]]] {
        try perform(sql, what: what, commits: commits, once: false, prepared: false) { () throws(LedgerError) in
            try executeAll(sql, what: what)
        }
    }

    private func perform<T>(_ sql: String, what: String, commits: Bool, once: Bool, prepared: Bool,
                            _ execute: () throws(LedgerError) -> T) throws(LedgerError) -> T {
        try reconnect()
        let command = commits ? "COMMIT" : prepared ? "" : sql.prefix(8).uppercased()
        let wasInTransaction = inTransaction
        func succeeded(_ rows: T) -> T {
            if command.hasPrefix("BEGIN") { inTransaction = true }
            if command.hasPrefix("COMMIT") || command.hasPrefix("ROLLBACK") { inTransaction = false }
            return rows
        }
        do throws(LedgerError) {
            return succeeded(try execute())
        } catch {
            noteLoss(error.message)
            guard lost != nil else {
                if command.hasPrefix("COMMIT") || command.hasPrefix("ROLLBACK") { inTransaction = false }
                throw error
            }
            inTransaction = false
            if command.hasPrefix("COMMIT") {
                throw .storage("\(what): the connection was lost before the server answered, so the commit may or may "
                    + "not have happened; nothing was acknowledged, and a value given again is stored once (\(error.message))")
            }
            guard !wasInTransaction, !once else { throw error }
            try reconnect()
            return succeeded(try execute())
        }
    }

    private func executeAll(_ sql: String, what: String) throws(LedgerError) -> [[[String?]]] {
        guard pq.sendQuery(handle, sql) == 1 else { throw .storage("\(what): \(Self.text(pq.errorMessage(handle)))") }
        var all: [[[String?]]] = []
        var failure: LedgerError?
        // Every result is read (the connection is ready for the next query only then); the first failure is kept.
        while let result = pq.getResult(handle) {
            defer { pq.clear(result) }
            guard failure == nil else { continue }
            do throws(LedgerError) { all.append(try rows(of: result, what: what)) } catch { failure = error }
        }
        if let failure { throw failure }
        return all
    }

    private func execute(_ sql: String, _ values: [SQLiteValue?], prepared: Bool, what: String) throws(LedgerError) -> [[String?]] {
        let texts: [String?] = values.map { v in
            switch v {
            case nil: nil
            case .int(let x)?: String(x)
            case .text(let s)?: s
            }
        }
        var pointers: [UnsafeMutablePointer<CChar>?] = texts.map { $0.map { strdup($0) } ?? nil }
        defer { for p in pointers { free(p) } }
        let count = Int32(texts.count)
        let result: OpaquePointer? = pointers.withUnsafeMutableBufferPointer { buffer in
            guard count > 0, let base = buffer.baseAddress else {
                // No parameters: a simple query (which may hold several statements, as a migration does).
                return prepared ? pq.execPrepared(handle, sql, 0, nil, nil, nil, 0) : pq.exec(handle, sql)
            }
            return base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { params in
                prepared ? pq.execPrepared(handle, sql, count, params, nil, nil, 0)
                         : pq.execParams(handle, sql, count, nil, params, nil, nil, 0)
            }
        }
        guard let result else { throw .storage("\(what): \(Self.text(pq.errorMessage(handle)))") }
        defer { pq.clear(result) }
        return try rows(of: result, what: what)
    }

    private func rows(of result: OpaquePointer, what: String) throws(LedgerError) -> [[String?]] {
        let status = pq.resultStatus(result)
        guard status == LibPQ.commandOK || status == LibPQ.tuplesOK else {
            throw .storage("\(what): \(Self.text(pq.resultErrorMessage(result)))")
        }
        let n = pq.ntuples(result), fields = pq.nfields(result)
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(n))
        for r in 0..<n {
            var row: [String?] = []
            for c in 0..<fields {
                row.append(pq.getisnull(result, r, c) == 0 ? pq.getvalue(result, r, c).map { String(cString: $0) } : nil)
            }
            rows.append(row)
        }
        return rows
    }

    /// The first column of the first row.
    static func scalar(_ rows: [[String?]]) -> String? { rows.first?.first ?? nil }

    /// Prepares `sql` under `name` for `run(name, values, prepared: true)`, now and after every reconnection.
    func prepare(_ name: String, _ sql: String, parameters: Int) throws(LedgerError) {
        try reconnect()
        try prepareNow(name, sql, parameters: parameters)
        prepared.append((name, sql, parameters))
    }

    private func prepareNow(_ name: String, _ sql: String, parameters: Int) throws(LedgerError) {
        guard let result = pq.prepare(handle, name, sql, Int32(parameters), nil) else {
            throw .storage("cannot prepare a ledger statement: \(Self.text(pq.errorMessage(handle)))")
        }
        defer { pq.clear(result) }
        guard pq.resultStatus(result) == LibPQ.commandOK else {
            throw .storage("cannot prepare a ledger statement: \(Self.text(pq.resultErrorMessage(result)))")
        }
    }
}
