#if canImport(Glibc)
import Glibc
#endif

/// Group commit for the ledger: callers that arrive while a commit is waiting for the disk queue their events; when
/// it is done, one of them (the leader) commits everything queued in one transaction (one fsync), and every caller
/// returns as soon as the transaction holding its event has committed — without waiting for the next one. A caller
/// alone is one event per transaction, as before; several share the disk's wait, and none is acknowledged before its
/// event is durable.
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
                let results = commit(batch)
                pthread_mutex_lock(mutex)
                precondition(results.count == batch.count, "a commit returns one outcome per event")
                for ((t, _), r) in zip(batch, results) { outcomes[t] = r }
                committing = false
                pthread_cond_broadcast(condition)
                continue
            }
            pthread_cond_wait(condition, mutex)
        }
    }
}
