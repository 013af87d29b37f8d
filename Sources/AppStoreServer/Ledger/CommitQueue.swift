#if canImport(Glibc)
import Glibc
#endif

/// Group commit for the ledger: callers that arrive while a commit is waiting for the disk queue their events; when
/// it is done, one of them (the leader) commits everything queued in one transaction (one fsync), and every caller
/// returns as soon as the transaction holding its event has committed — without waiting for the next one. A caller
/// alone is one event per transaction, as before; several share the disk's wait, and none is acknowledged before its
/// event is durable.
///
/// A commit may end in two phases (PostgreSQL: the commit, then the wait for the server's flush): `commit` returns
/// the outcomes and a `durable` step, which the leader runs after giving up the commit slot, so the next batch is
/// committed while this one's flush is awaited; the batch's callers get the outcomes `durable` returns, only then.
///
/// A pthread mutex and condition (a caller sleeps until its outcome is there or it may lead), entered under
/// `ForkGuard` like `Locked`: fork() waits for a commit in progress, so a child never inherits a held lock.
final class CommitQueue<Event, Outcome>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var lastTicket: UInt64 = 0
    private var pending: [(ticket: UInt64, event: Event)] = []
    private var outcomes: [UInt64: Outcome] = [:]
    private var committing = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        _ = ForkGuard.lock
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Queues `event` and returns its outcome once a `commit` call holding it has returned. `commit` gets a batch
    /// (this caller's event and whatever else is queued, in arrival order) and returns one outcome per event, in
    /// order; it runs on one thread at a time, without this queue's lock held.
    func submit(_ event: Event, commit: ([(ticket: UInt64, event: Event)]) -> [Outcome]) -> Outcome {
        submit(event) { batch in (commit(batch), nil) }
    }

    /// The same, where `commit` may also return a `durable` step: run by the leader outside the commit slot (the next
    /// leader may commit meanwhile) and outside this queue's lock, given the outcomes, returning the ones the batch's
    /// callers get (one per event, in order).
    func submit(_ event: Event, commit: ([(ticket: UInt64, event: Event)])
                -> (outcomes: [Outcome], durable: (([Outcome]) -> [Outcome])?)) -> Outcome {
        ForkGuard.enter()
        defer { ForkGuard.leave() }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        lastTicket += 1
        let ticket = lastTicket
        pending.append((ticket, event))
        while true {
            if let outcome = outcomes.removeValue(forKey: ticket) { return outcome }
            if !committing {
                committing = true
                let batch = pending
                pending.removeAll(keepingCapacity: true)
                pthread_mutex_unlock(mutex)
                var (results, durable) = commit(batch)
                pthread_mutex_lock(mutex)
                precondition(results.count == batch.count, "a commit returns one outcome per event")
                if let durable {
                    // The slot is free for the next batch while this one becomes durable; its callers keep waiting.
                    committing = false
                    pthread_cond_broadcast(condition)
                    pthread_mutex_unlock(mutex)
                    results = durable(results)
                    pthread_mutex_lock(mutex)
                    precondition(results.count == batch.count, "a commit returns one outcome per event")
                    for ((t, _), r) in zip(batch, results) { outcomes[t] = r }
                    pthread_cond_broadcast(condition)
                    continue
                }
                for ((t, _), r) in zip(batch, results) { outcomes[t] = r }
                committing = false
                pthread_cond_broadcast(condition)
                continue
            }
            pthread_cond_wait(condition, mutex)
        }
    }
}
