#if canImport(Glibc)
import Glibc
#endif

/// fork() safety. A child process gets a copy of every lock as it was at the moment of fork(), held by threads that
/// do not exist in the child: a Swift `Mutex` held then makes the child's next use of it trap, a pthread mutex (ours,
/// or OpenSSL's own) deadlock, and the data it protects may be half-updated. Python services fork (gunicorn,
/// multiprocessing, subprocess) while other threads verify, so every call into the library through the C ABI, and
/// every critical section, runs under the read side of one process-wide rwlock, and fork() takes its write side
/// (`pthread_atfork` prepare): the fork waits until no thread is inside the library, so the child starts with every
/// lock free and every value whole. The parent then releases it; the child, whose thread ids are new, re-creates it.
///
/// The rwlock prefers writers (a fork is not starved by busy threads), so a thread must never take its read side
/// twice: a per-thread depth makes sections nest, and only the outermost one takes the lock.
public enum ForkGuard {
    nonisolated(unsafe) static let lock: UnsafeMutablePointer<pthread_rwlock_t> = {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        initialize(lock)
        pthread_atfork({ _ = pthread_rwlock_wrlock(ForkGuard.lock) },
                       { _ = pthread_rwlock_unlock(ForkGuard.lock) },
                       { ForkGuard.initialize(ForkGuard.lock) })
        return lock
    }()

    /// This thread's nesting depth (a pthread key: no Swift thread-local storage without Foundation's Thread).
    static let depthKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private static func initialize(_ lock: UnsafeMutablePointer<pthread_rwlock_t>) {
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    @inline(__always)
    private static var depth: Int {
        get { Int(bitPattern: pthread_getspecific(depthKey)) }
        set { pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: newValue)) }
    }

    /// Enters a section fork() waits for (nestable). The C boundary runs every call in one, so that OpenSSL's own
    /// locks are free at fork() too; code that calls out to a host (which may fork) leaves it for that call.
    @inline(__always)
    public static func enter() {
        let d = depth
        if d == 0 { pthread_rwlock_rdlock(lock) }
        depth = d + 1
    }

    /// Leaves the section the matching `enter()` entered.
    @inline(__always)
    public static func leave() {
        let d = depth - 1
        depth = d
        if d == 0 { pthread_rwlock_unlock(lock) }
    }

    /// Runs `body` outside every section this thread is in (a host callback: it may fork, and would then wait for
    /// itself), and enters them again afterwards.
    public static func outside<T>(_ body: () throws -> T) rethrows -> T {
        let d = depth
        if d > 0 {
            depth = 0
            pthread_rwlock_unlock(lock)
        }
        defer {
            if d > 0 {
                pthread_rwlock_rdlock(lock)
                depth = d
            }
        }
        return try body()
    }
}

/// The lock every shared mutable state of the library uses: a pthread mutex entered under `ForkGuard`, so it is
/// safe across fork(). (A pthread mutex, not Swift's `Mutex`, also because ThreadSanitizer intercepts it: `Mutex`
/// waits with raw futex system calls that TSan does not see.) Same API as `Mutex`.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
        _ = ForkGuard.lock  // registers the fork handlers before the first lock can be held
        _ = ForkGuard.depthKey
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` on the value while holding the lock (inside a `ForkGuard` section).
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        ForkGuard.enter()
        defer { ForkGuard.leave() }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
