import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

/// `sync`'s cursor (docs/serve.md, "sync"): a small JSON file beside the ledger, rewritten whole and atomically
/// (a temporary file, fsync, rename, fsync of the folder) after each page's events are durable in the ledger. A
/// crash leaves the previous version, which names a page whose events may be in the ledger already: fetched again,
/// they are duplicates, which change nothing.
///
///     {"format": 1, "bundleId": "com.example.app", "environment": "Sandbox",
///      "notificationHistory": {"syncedThrough": 1764000000000,
///                              "window": {"startDate": …, "endDate": …, "paginationToken": "…", "pages": 2}},
///      "transactionHistory": {"2000000123456789": {"revision": "…", "syncedAt": 1764000000000}}}
///
/// `syncedThrough`: every notification Apple's history listed before it (endDate of the last finished window) is
/// in the ledger. `window`: the window being read, and the token of its next page (null: its first page).
struct SyncState: Equatable {
    struct Window: Equatable {
        var startDate: Int64
        var endDate: Int64
        var paginationToken: String?
        var pages: Int
    }

    struct History: Equatable {
        var revision: String
        var syncedAt: Int64
    }

    static let format: Int64 = 1
    var bundleId: String
    var environment: String
    var syncedThrough: Int64?
    var window: Window?
    var transactions: [String: History] = [:]

    init(bundleId: String, environment: String) {
        self.bundleId = bundleId
        self.environment = environment
    }

    var json: JSONValue {
        var n: [(String, JSONValue)] = [("syncedThrough", syncedThrough.map { .number(String($0)) } ?? .null)]
        if let w = window {
            n.append(("window", .object([
                ("startDate", .number(String(w.startDate))), ("endDate", .number(String(w.endDate))),
                ("paginationToken", w.paginationToken.map { .string($0) } ?? .null), ("pages", .number(String(w.pages))),
            ])))
        }
        let t = transactions.sorted { $0.key < $1.key }.map { id, h in
            (id, JSONValue.object([("revision", .string(h.revision)), ("syncedAt", .number(String(h.syncedAt)))]))
        }
        return .object([("format", .number(String(Self.format))), ("bundleId", .string(bundleId)),
                        ("environment", .string(environment)), ("notificationHistory", .object(n)),
                        ("transactionHistory", .object(t))])
    }

    /// The file's cursor, or a fresh one when there is no file yet. A file of another app or environment, or one
    /// that is not a cursor, is a configuration error: following it would skip data.
    static func load(_ path: String, bundleId: String, environment: String) throws(ToolFailure) -> SyncState {
        guard access(path, F_OK) == 0 else { return SyncState(bundleId: bundleId, environment: environment) }
        return try parse(try Input.read(path, what: "the sync cursor"), bundleId: bundleId, environment: environment,
                         source: path, remedy: "move it away to start again from --since")
    }

    /// A cursor's JSON (a file's, or the one a PostgreSQL ledger keeps); `source` and `remedy` for messages.
    static func parse(_ bytes: [UInt8], bundleId: String, environment: String, source: String,
                      remedy: String) throws(ToolFailure) -> SyncState {
        let path = source
        func bad(_ why: String) -> ToolFailure {
            ServeConfig.configurationError("the sync cursor \(path): \(why) (\(remedy))")
        }
        guard let root = JSONValue.parse(bytes), root.object != nil else { throw bad("not a JSON object") }
        guard root["format"]?.int64Value == format else { throw bad("format is not \(format)") }
        guard root["bundleId"]?.stringValue == bundleId, root["environment"]?.stringValue == environment else {
            throw bad("it is the cursor of \(root["bundleId"]?.stringValue ?? "?") (\(root["environment"]?.stringValue ?? "?")), "
                      + "not of \(bundleId) (\(environment))")
        }
        var s = SyncState(bundleId: bundleId, environment: environment)
        guard let n = root["notificationHistory"], n.object != nil else { throw bad("no notificationHistory") }
        // Every number within its range, so that no arithmetic on the cursor can overflow and no date can make a
        // window Apple would refuse forever (or skip what it has): a tampered or damaged file is refused here.
        let now = Timestamp.nowMilliseconds()
        let latest = now + Self.futureSlackMilliseconds
        func date(_ v: JSONValue?, _ what: String) throws(ToolFailure) -> Int64 {
            guard let ms = v?.int64Value, ms >= Self.earliestMilliseconds, ms <= latest else {
                throw bad("\(what) is not a date in milliseconds between 2008-07-10 (the App Store's start) and now")
            }
            return ms
        }
        if let t = n["syncedThrough"], t != .null { s.syncedThrough = try date(t, "notificationHistory.syncedThrough") }
        if let w = n["window"], w != .null {
            guard w.object != nil else { throw bad("notificationHistory.window is not a window") }
            let start = try date(w["startDate"], "notificationHistory.window.startDate")
            let end = try date(w["endDate"], "notificationHistory.window.endDate")
            guard start < end else { throw bad("notificationHistory.window ends before it starts") }
            // A window reaches back at most as far as Apple's history (180 days) from the instant it was made.
            guard end - start <= SyncRunner.appleLookbackMilliseconds else {
                throw bad("notificationHistory.window is longer than Apple's 180 days of history")
            }
            guard let pages = w["pages"]?.int64Value, (0...Self.maxPages).contains(pages) else {
                throw bad("notificationHistory.window.pages is not 0...\(Self.maxPages)")
            }
            let token = w["paginationToken"]
            guard token == nil || token == .null || token?.stringValue != nil else { throw bad("paginationToken is not a string") }
            if let t = token?.stringValue, t.isEmpty || t.utf8.count > Self.maxTokenBytes {
                throw bad("paginationToken is empty or longer than \(Self.maxTokenBytes) bytes")
            }
            s.window = Window(startDate: start, endDate: end, paginationToken: token?.stringValue, pages: Int(pages))
        }
        if let t = root["transactionHistory"], t != .null, t.object == nil { throw bad("transactionHistory is not an object") }
        for (id, h) in root["transactionHistory"]?.object ?? [] {
            guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw bad("transactionHistory has a member that is not a transaction id")
            }
            guard let revision = h["revision"]?.stringValue else { throw bad("transactionHistory.\(id) has no revision") }
            guard !revision.isEmpty, revision.utf8.count <= Self.maxTokenBytes else {
                throw bad("transactionHistory.\(id).revision is empty or longer than \(Self.maxTokenBytes) bytes")
            }
            s.transactions[id] = History(revision: revision, syncedAt: try date(h["syncedAt"], "transactionHistory.\(id).syncedAt"))
        }
        return s
    }

    /// The cursor's limits (load): dates from the App Store's launch (2008-07-10) to a day ahead of this clock (a
    /// cursor written by a host whose clock ran a little ahead is still read); pages of one window; tokens.
    static let earliestMilliseconds: Int64 = 1_215_648_000_000
    static let futureSlackMilliseconds: Int64 = 86_400_000
    static let maxPages: Int64 = 100_000_000
    static let maxTokenBytes = 8192

    /// Writes the cursor so that a crash at any instant leaves either the old file or the new one, durably.
    func save(_ path: String) throws(ToolFailure) {
        let text = Array((json.serialized() + "\n").utf8)
        let tmp = path + ".tmp"
        func fail(_ what: String) -> ToolFailure {
            ToolFailure(.internal, status: "INTERNAL_ERROR", reason: "internal",
                        "the sync cursor \(path): \(what): \(String(cString: strerror(errno)))")
        }
        // A new file of our own, never one a link points at: a temporary file left by a crash (or anything put at
        // its name, a symlink included) is removed first (unlink removes a link, not its target), and O_EXCL |
        // O_NOFOLLOW refuses whatever appears there between the two calls. The cursor's lock is held.
        if unlink(tmp) != 0 && errno != ENOENT { throw fail("cannot remove \(tmp)") }
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw fail("cannot create \(tmp)") }
        var written = 0
        while written < text.count {
            let n = text[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                close(fd)
                throw fail("cannot write \(tmp)")
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            close(fd)
            throw fail("fsync")
        }
        close(fd)
        guard rename(tmp, path) == 0 else { throw fail("rename") }
        // The rename is durable once the folder is.
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard d >= 0 else { throw fail("cannot open its folder") }
        defer { close(d) }
        guard fsync(d) == 0 else { throw fail("fsync of its folder") }
    }

    /// Holds `path`.lock (flock) until the process ends: two syncs of one cursor (a timer and `serve
    /// --sync-interval`) take turns instead of interleaving their writes. The kernel releases it when a sync dies.
    static func lock(_ path: String) throws(ToolFailure) -> Int32 {
        // O_NOFOLLOW: a symlink at the lock's name is refused (ELOOP), never followed to create or open its target.
        let fd = open(path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ServeConfig.configurationError("the sync cursor's lock \(path).lock: \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(fd)
                throw ServeConfig.configurationError("the sync cursor's lock \(path).lock: \(String(cString: strerror(errno)))")
            }
        }
        return fd
    }
}
