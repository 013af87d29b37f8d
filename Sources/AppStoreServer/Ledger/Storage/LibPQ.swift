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
    typealias Exec = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?
    typealias ExecParams = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32, UnsafePointer<UInt32>?,
                                           UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                                           UnsafePointer<Int32>?, Int32) -> OpaquePointer?
    typealias Prepare = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32,
                                        UnsafePointer<UInt32>?) -> OpaquePointer?
    typealias ExecPrepared = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32,
                                             UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                                             UnsafePointer<Int32>?, Int32) -> OpaquePointer?
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
    let exec: Exec
    let execParams: ExecParams
    let prepare: Prepare
    let execPrepared: ExecPrepared
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
        exec = try symbol("PQexec", Exec.self)
        execParams = try symbol("PQexecParams", ExecParams.self)
        prepare = try symbol("PQprepare", Prepare.self)
        execPrepared = try symbol("PQexecPrepared", ExecPrepared.self)
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
final class PostgresConnection: @unchecked Sendable {
    let pq: LibPQ
    let handle: OpaquePointer
    /// The URL without its password, for messages.
    let shownURL: String

    init(url: String) throws(LedgerError) {
        pq = try LibPQ.shared.get()
        shownURL = Self.redacted(url)
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

    /// Runs `sql` (parameters $1... as text, nil as NULL; or a prepared statement's name); the rows, as text.
    @discardableResult
    func run(_ sql: String, _ values: [SQLiteValue?] = [], prepared: Bool = false, what: String) throws(LedgerError) -> [[String?]] {
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

    /// Prepares `sql` under `name` for `run(name, values, prepared: true)`.
    func prepare(_ name: String, _ sql: String, parameters: Int) throws(LedgerError) {
        guard let result = pq.prepare(handle, name, sql, Int32(parameters), nil) else {
            throw .storage("cannot prepare a ledger statement: \(Self.text(pq.errorMessage(handle)))")
        }
        defer { pq.clear(result) }
        guard pq.resultStatus(result) == LibPQ.commandOK else {
            throw .storage("cannot prepare a ledger statement: \(Self.text(pq.resultErrorMessage(result)))")
        }
    }
}
