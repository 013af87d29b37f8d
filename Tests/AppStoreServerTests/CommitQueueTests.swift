import Foundation
import Testing
@testable import AppStoreServer

/// `CommitQueue`'s durable phase (PostgreSQL's flush, docs/ledger.md "Fleet"): the next batch commits while the
/// previous one's durable step runs, nothing is answered to a batch before that step returns, and its callers get what
/// it returns (a flush that fails fails them). The timeouts only bound a hang (each step takes microseconds).
@Suite struct CommitQueueTests {
    @Test func theNextBatchCommitsWhileTheDurableStepRuns() {
        let queue = CommitQueue<Int, Result<Int, LedgerError>>()
        let firstCommitted = DispatchSemaphore(value: 0)
        let secondCommitted = DispatchSemaphore(value: 0)
        let flushDone = DispatchSemaphore(value: 0)
        let answered = DispatchSemaphore(value: 0)
        let outcomes = Locked<[Int: Result<Int, LedgerError>]>([:])
        let first = Thread {
            let r = queue.submit(1) { batch in
                firstCommitted.signal()
                return (batch.map { .success($0.event) }, { results in
                    _ = flushDone.wait(timeout: .now() + 60)
                    return results.map { _ in .failure(.storage("the flush was not confirmed")) }
                })
            }
            outcomes.withLock { $0[1] = r }
            answered.signal()
        }
        first.start()
        #expect(firstCommitted.wait(timeout: .now() + 60) == .success)
        let second = Thread {
            let r = queue.submit(2) { batch in
                secondCommitted.signal()
                return (batch.map { .success($0.event * 10) }, nil)
            }
            outcomes.withLock { $0[2] = r }
            answered.signal()
        }
        second.start()
        #expect(secondCommitted.wait(timeout: .now() + 60) == .success,
                "the second batch commits while the first one's durable step runs")
        #expect(outcomes.withLock { $0[1] } == nil, "nothing is answered to the first batch before its durable step returns")
        flushDone.signal()
        #expect(answered.wait(timeout: .now() + 60) == .success && answered.wait(timeout: .now() + 60) == .success)
        let got = outcomes.withLock { $0 }
        if case .failure(let e)? = got[1] {
            #expect(e.message.contains("not confirmed"), "the first batch's caller gets the durable step's failure")
        } else {
            Issue.record("the first batch's caller was answered \(String(describing: got[1])), not the flush's failure")
        }
        if case .success(let v)? = got[2] { #expect(v == 20) } else { Issue.record("the second batch: \(String(describing: got[2]))") }
    }

    /// Without a durable step (SQLite), a batch's callers get the commit's outcomes, as before.
    @Test func withoutADurableStepTheCommitsOutcomesAreAnswered() {
        let queue = CommitQueue<Int, Int>()
        #expect(queue.submit(3) { batch in batch.map { $0.event + 1 } } == 4)
    }
}
