import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Checkpoints a ledger's write-ahead log on a thread of its own, so that no ingest waits for one. SQLite's automatic
/// checkpoint runs inside the COMMIT that crossed the threshold: that caller (a request to `serve`) waited while
/// thousands of pages were copied and the database file fsynced, which was the whole p99 of `benchmarks/run serve`
/// (14 ms at 1,000 pages, 28 ms at 8,000). Here the ledger's connection only asks (its WAL hook, once at least
/// `pages` pages are in the log, then each time it has grown by a sixteenth of that), and a second connection runs
/// PASSIVE checkpoints, which never block writers: they keep appending while it copies, and the log restarts from its
/// beginning when a writer starts after a checkpoint has caught up (in practice, on one busy core, mostly after the
/// writer's own checkpoint at four thresholds: the hook below).
///
/// Durability is unchanged: a commit is durable when its WAL frames are fsynced (synchronous=FULL), checkpoint or not.
/// The thread and its connection are the store's; `stop` (the store's deinit) lets a checkpoint in progress finish.
///
/// The ledger's connection wakes the thread by writing a byte to a pipe: no lock is shared with the thread, so a fork()
/// can never leave the child a lock held by a thread that did not come along (the checkpoint itself runs inside the
/// fork guard, as every call into SQLite does).
final class WALCheckpointer: Sendable {
    /// Log pages after which a checkpoint is asked for (16 MiB of 4 KiB pages; SQLite's default, 1,000, made the same
    /// work in four times as many checkpoints).
    static let pages: Int32 = 4000
    /// The threshold of checkpointers started from now on (tests lower it to see several checkpoints in little data).
    nonisolated(unsafe) static var threshold = pages

    private let threshold: Int32

    private let connection: SQLiteConnection
    /// A byte written asks for a checkpoint (or, with `stopping` set, for the thread to end). Not end of file: a
    /// forked child holds the write end too.
    private let pipe: (read: Int32, write: Int32)
    private let stopping = Atomic<Bool>(false)
    nonisolated(unsafe) private var thread = pthread_t()
    private let checkpoints = Atomic<Int>(0)
    /// The log's size in pages when the thread was last asked (the hook's, on the ledger's connection).
    private let requestedAt = Atomic<Int32>(0)

    /// A checkpointer for the database at `path`, or nil when its connection, pipe or thread cannot be made (the store
    /// then keeps SQLite's automatic checkpoint).
    static func start(path: String) -> WALCheckpointer? {
        guard let connection = try? SQLiteConnection(path: path),
              (try? connection.execute("PRAGMA synchronous = FULL", "")) != nil else { return nil }
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)  // a full pipe already asks
        let checkpointer = WALCheckpointer(connection, pipe: (fds[0], fds[1]), threshold: threshold)
        let context = Unmanaged.passRetained(checkpointer).toOpaque()
        let rc = pthread_create(&checkpointer.thread, nil, { context in
            Unmanaged<WALCheckpointer>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<WALCheckpointer>.fromOpaque(context).release()
            close(fds[0]); close(fds[1])
            return nil
        }
        return checkpointer
    }

    private init(_ connection: SQLiteConnection, pipe: (read: Int32, write: Int32), threshold: Int32) {
        self.connection = connection
        self.pipe = pipe
        self.threshold = threshold
    }

    /// Installs the hook on the ledger's connection that asks for a checkpoint after a large enough commit; `stop`
    /// removes it.
    func install(on db: SQLiteConnection) {
        sqlite3_wal_hook(db.handle, { context, db, _, pages in
            if let context {
                let me = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                if pages >= 4 * me.threshold, let db {
                    // The log has not started again (on one busy core the thread rarely catches up between a commit
                    // and the next, and a loaded machine delays it further): this commit checkpoints too, as SQLite's
                    // own would, so the log stays bounded whatever the load; the thread has copied most of it already.
                    sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages < me.threshold {
                    // The log started again from its beginning.
                    if me.requestedAt.load(ordering: .relaxed) != 0 { me.requestedAt.store(0, ordering: .relaxed) }
                } else if pages >= me.requestedAt.load(ordering: .relaxed) + me.threshold / 16 {
                    // Asked again once the log has grown by a sixteenth of the threshold (~13 commits of one
                    // notification): asked after every commit, the thread copied a commit or two per pass, each with
                    // two fsyncs and a wake-up of its thread (one caller's ingest and serve ~6 % slower on one core).
                    // Not by more: the passes grow, and serve's p99 with them (+1.5 ms at half a threshold).
                    me.requestedAt.store(pages, ordering: .relaxed)
                    me.request()
                }
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    func request() {
        var byte: UInt8 = 1
        _ = write(pipe.write, &byte, 1)
    }

    /// Removes the hook from `db`, stops the thread after the checkpoint in progress, and waits for it.
    func stop(_ db: SQLiteConnection) {
        sqlite3_wal_hook(db.handle, nil, nil)
        stopping.store(true, ordering: .sequentiallyConsistent)
        request()  // a full pipe (EAGAIN) already holds a byte that wakes it
        pthread_join(thread, nil)
        close(pipe.write)
        close(pipe.read)
    }

    /// Checkpoints run so far (tests).
    var count: Int { checkpoints.load(ordering: .relaxed) }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(pipe.read, $0.baseAddress, $0.count) }
            if stopping.load(ordering: .sequentiallyConsistent) { return }
            if n <= 0 { if n < 0 && errno == EINTR { continue } else { return } }
            // Until the log is caught up: the writer's next transaction then restarts the log from its beginning.
            // Each pass copies what was committed during the one before (fewer frames each time); a few at most.
            for _ in 0..<8 {
                var log: Int32 = 0, copied: Int32 = 0
                ForkGuard.enter()
                let rc = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
                ForkGuard.leave()
                checkpoints.add(1, ordering: .relaxed)
                if rc != SQLITE_OK || copied >= log || stopping.load(ordering: .relaxed) { break }
            }
        }
    }
}
