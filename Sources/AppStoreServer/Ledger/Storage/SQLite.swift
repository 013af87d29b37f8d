import CSQLite

/// The few SQLite calls the ledger makes, each checked: a failure becomes a `LedgerError` naming what failed, with
/// SQLite's own message. One connection, used under the ledger's lock.
final class SQLiteConnection: @unchecked Sendable {
    let handle: OpaquePointer

    init(path: String) throws(LedgerError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw .storage("cannot open the ledger database \(QuotedText.quote(path)): \(message) (SQLite \(rc))")
        }
        handle = db
        sqlite3_busy_timeout(db, 10_000)  // another process's write transaction: wait for it, up to 10 s
    }

    deinit { sqlite3_close_v2(handle) }

    var lastError: String { "\(String(cString: sqlite3_errmsg(handle))) (SQLite \(sqlite3_extended_errcode(handle)))" }

    func execute(_ sql: String, _ what: String) throws(LedgerError) {
        var err: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &err) == SQLITE_OK else {
            let message = err.map { String(cString: $0) } ?? lastError
            sqlite3_free(err)
            throw .storage("\(what): \(message)")
        }
    }

    func prepare(_ sql: String) throws(LedgerError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil) == SQLITE_OK, let stmt else {
            throw .storage("cannot prepare a ledger statement: \(lastError)")
        }
        return SQLiteStatement(stmt, connection: self)
    }

    /// One integer from a query (a PRAGMA, a count).
    func integer(_ sql: String) throws(LedgerError) -> Int64 {
        let s = try prepare(sql)
        guard try s.step() else { throw .storage("\(sql) returned no row") }
        return s.int64(0)
    }

    var changes: Int32 { sqlite3_changes(handle) }
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
}

final class SQLiteStatement: @unchecked Sendable {
    let stmt: OpaquePointer
    let connection: SQLiteConnection

    init(_ stmt: OpaquePointer, connection: SQLiteConnection) {
        self.stmt = stmt
        self.connection = connection
    }

    deinit { sqlite3_finalize(stmt) }

    /// Binds parameters 1... in order (nil is NULL) after resetting the statement.
    func bind(_ values: [SQLiteValue?]) throws(LedgerError) {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch v {
            case nil: rc = sqlite3_bind_null(stmt, index)
            case .int(let x)?: rc = sqlite3_bind_int64(stmt, index, x)
            case .text(let s)?:
                rc = s.withCString { appstore_sqlite3_bind_text(stmt, index, $0, -1) }
            }
            guard rc == SQLITE_OK else { throw .storage("cannot bind a ledger value: \(connection.lastError)") }
        }
    }

    /// One step: true when a row is ready, false when done.
    func step() throws(LedgerError) -> Bool {
        switch sqlite3_step(stmt) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw .storage("ledger statement failed: \(connection.lastError)")
        }
    }

    /// Binds and runs a statement that returns no rows.
    func run(_ values: [SQLiteValue?]) throws(LedgerError) {
        try bind(values)
        while try step() {}
    }

    /// The same, a failure's message starting with `what` (BEGIN and COMMIT, prepared once instead of parsed per
    /// transaction).
    func run(_ values: [SQLiteValue?], _ what: String) throws(LedgerError) {
        do { try run(values) } catch { throw .storage("\(what): \(connection.lastError)") }
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(stmt, column) else { return nil }
        return String(cString: p)
    }
}

enum SQLiteValue {
    case int(Int64)
    case text(String)
}

extension Optional where Wrapped == Int64 { var sql: SQLiteValue? { map { .int($0) } } }
extension Optional where Wrapped == String { var sql: SQLiteValue? { map { .text($0) } } }
