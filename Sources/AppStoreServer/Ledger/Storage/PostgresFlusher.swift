/// The wait for the server's WAL flush after an asynchronous COMMIT, on a connection of its own (docs/ledger.md,
/// "Fleet"), so that a process's next write transaction runs on the ledger's connection while the previous one's
/// flush is awaited here.
///
/// A flush is a transaction of its own that writes one WAL record (a transactional logical message: an xid, no table,
/// any wal_level, no privilege) and commits with `synchronous_commit = on`: it returns once the WAL is flushed past
/// its commit record, so past every commit the server put in the WAL before it (and after a synchronous standby's
/// confirmation, where there is one). One flush runs at a time; it covers every commit registered before it started
/// (`committed`), so a flush started while another runs waits for it and then covers all that came meanwhile.
///
/// **Only a session older than the commit counts.** A commit is confirmed by a flush that succeeded on the same
/// session of this connection as was established before the COMMIT was sent (`generation` read first, compared
/// after): a session that lives from before the commit to after the flush is on the server that committed it, which
/// did not restart meanwhile (a restart or a crash ends every session). A flush on a session re-established since
/// says nothing about the lost server's WAL: its commits fail (nothing acknowledged), as does every commit a failed
/// flush covered, and `failures` tells the ledger to trust nothing it cached.
final class PostgresFlusher: @unchecked Sendable {
    private struct State {
        var connection: PostgresConnection?
        /// The connection's sessions so far (its reconnections), as of the last flush.
        var generation = 0
        var lastTicket: UInt64 = 0
        /// Commits not covered by a flush yet: ticket -> the generation read before its COMMIT.
        var waiting: [UInt64: Int] = [:]
        /// Outcomes of commits a flush run by another caller covered, until their caller takes them.
        var outcomes: [UInt64: LedgerError?] = [:]
        /// Flushes that failed (`PostgresLedgerStore.connectionGeneration`).
        var failures = 0
    }
    private let state = Locked(State())
    /// Held while a flush runs: one at a time on the connection.
    private let running = Locked(())
    private let url: String
    private let shownURL: String

    init(url: String, shownURL: String) {
        self.url = url
        self.shownURL = shownURL
    }

    /// Flushes that failed so far.
    var failures: Int { state.withLock { $0.failures } }

    /// Before a COMMIT whose flush is awaited here: the generation to pass to `committed`, or nil when the connection
    /// cannot be opened (the caller then flushes on its own connection, as before). Opened on the first call.
    func prepare() -> Int? {
        state.withLock { s -> Int? in
            if s.connection == nil {
                // No flush can be running: none was registered without the connection.
                guard let c = try? PostgresConnection(url: url, shownURL: shownURL),
                      (try? c.session("SET synchronous_commit = on", what: "cannot set synchronous_commit")) != nil else { return nil }
                s.connection = c
                s.generation = c.reconnections
            }
            return s.generation
        }
    }

    /// After the COMMIT returned (it is in the server's WAL): a ticket for `wait`.
    func committed(generation: Int) -> UInt64 {
        state.withLock { s in
            s.lastTicket += 1
            s.waiting[s.lastTicket] = generation
            return s.lastTicket
        }
    }

    /// Returns once commit `ticket` is flushed (by a flush this call runs, or one that another ran after the commit),
    /// or throws when that is not confirmed.
    func wait(_ ticket: UInt64) throws(LedgerError) {
        let failure: LedgerError? = running.withLock { _ -> LedgerError? in
            if let done = state.withLock({ $0.outcomes.removeValue(forKey: ticket) }) { return done }
            let (covered, connection) = state.withLock { s in
                defer { s.waiting = [:] }
                return (s.waiting, s.connection)
            }
            var error: LedgerError?
            if let connection {
                do throws(LedgerError) {
                    try connection.run("SELECT pg_logical_emit_message(true, 'appstoreserver', '')", what: "flush", once: true)
                } catch let e {
                    error = e
                }
            } else {
                error = .storage("no connection")
            }
            let generation = connection?.reconnections ?? -1
            let message = error.map { "the ledger transaction was committed but its flush was not confirmed, so it may or may not "
                + "be durable; nothing was acknowledged, and a value given again is stored once (\($0.message))" }
            var mine: LedgerError?
            state.withLock { s in
                s.generation = max(generation, 0)
                if error != nil { s.failures += 1 }
                for (t, g) in covered {
                    let outcome: LedgerError? = if let message {
                        .storage(message)
                    } else if g != generation {
                        .storage("the ledger transaction was committed but the connection that confirms its flush was "
                            + "re-established since, so it may or may not be durable; nothing was acknowledged, and a value "
                            + "given again is stored once")
                    } else {
                        nil
                    }
                    if t == ticket { mine = outcome } else { s.outcomes[t] = outcome }
                }
            }
            return mine
        }
        if let failure { throw failure }
    }
}
