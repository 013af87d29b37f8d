import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

/// Where `sync` keeps its cursor (docs/serve.md, "sync"; docs/ledger.md, "Fleet"):
/// - a SQLite ledger: a file beside it (`ledger.db.sync.json`, or --state FILE), under an flock of `FILE.lock`
///   (0.3.0's files are read as they are);
/// - a PostgreSQL ledger: its `sync_cursor` table, under the ledger's sync lease (a PostgreSQL advisory lock: one
///   syncing process at a time among every process on the database; `LedgerSyncLease`).
enum SyncCursor {
    case file(String)
    case database(LedgerSyncLease)

    /// Writes the cursor durably (the file atomically; the table fenced by the lease's generation).
    func save(_ state: SyncState) throws(ToolFailure) {
        switch self {
        case .file(let path): try state.save(path)
        case .database(let lease):
            do throws(LedgerError) { try lease.save(state.json.serialized()) } catch { throw ToolFailure(error) }
        }
    }

    /// The summary's `cursor` member names it: `file`, or `database` (the URL without its password, and the table).
    var member: (String, JSONValue) {
        switch self {
        case .file(let path): ("file", .string(path))
        case .database(let lease): ("database", .string(lease.location))
        }
    }

    /// The cursor the lease found (a fresh one when none was saved yet); `importing` (--state FILE, a 0.3.0 sync's
    /// cursor of this PostgreSQL ledger) is read when the database has none yet, and saved there at once.
    static func load(_ lease: LedgerSyncLease, bundleId: String, environment: String,
                     importing file: String?) throws(ToolFailure) -> SyncState {
        if let text = lease.cursor {
            return try SyncState.parse(Array(text.utf8), bundleId: bundleId, environment: environment, source: lease.location,
                                       remedy: "delete it to start again from --since: DELETE FROM <schema>.sync_cursor")
        }
        guard let file else { return SyncState(bundleId: bundleId, environment: environment) }
        let state = try SyncState.load(file, bundleId: bundleId, environment: environment)
        try SyncCursor.database(lease).save(state)
        return state
    }

    /// A name for this process in the lease's table (who holds it, in another process's message).
    static var holder: String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count - 1) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        return "\(host) pid \(getpid())"
    }
}
