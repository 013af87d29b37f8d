#if canImport(Glibc)
import Glibc
#endif

/// fork() safety. A child process gets a copy of every lock as it was at the moment of fork(), held by threads that
/// do not exist in the child: a Swift `Mutex` held then makes the child's next use of it trap, a pthread mutex
/// deadlock, and the data it protects may be half-updated. Python services fork (gunicorn, multiprocessing) while
/// other threads verify, so every critical section of the library runs under the read side of one process-wide
/// rwlock, and fork() takes its write side (`pthread_atfork` prepare): the fork waits until no thread is inside a
/// critical section (they are a few dictionary operations long), so the child starts with every lock free and every
/// value whole. The parent then releases it; the child, whose thread ids are new, re-creates it.
enum ForkGuard {
    // Reader-preferring (glibc's default): a critical section nested in another never waits for a pending fork.
    nonisolated(unsafe) static let lock: UnsafeMutablePointer<pthread_rwlock_t> = {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
        pthread_atfork({ _ = pthread_rwlock_wrlock(ForkGuard.lock) },
                       { _ = pthread_rwlock_unlock(ForkGuard.lock) },
                       { _ = pthread_rwlock_init(ForkGuard.lock, nil) })
        return lock
    }()

    @inline(__always)
    static func enter() { pthread_rwlock_rdlock(lock) }
    @inline(__always)
    static func leave() { pthread_rwlock_unlock(lock) }
}

/// The lock every shared mutable state of the library uses: a pthread mutex entered under `ForkGuard`, so it is
/// safe across fork(). (A pthread mutex, not Swift's `Mutex`, also because ThreadSanitizer intercepts it: `Mutex`
/// waits with raw futex system calls that TSan does not see.) Same API as `Mutex`.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
        _ = ForkGuard.lock  // registers the fork handlers before the first lock can be held
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        ForkGuard.enter()
        defer { ForkGuard.leave() }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
