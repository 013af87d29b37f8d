import Synchronization
#if canImport(Glibc)
import Glibc
#endif

#if APPSTORE_TSAN
/// ThreadSanitizer builds (`-DAPPSTORE_TSAN`, `cmake -DAPPSTORE_SANITIZE=thread`) lock with a pthread mutex, which
/// TSan intercepts: Swift's `Mutex` waits with raw futex system calls that TSan does not see, so every access to the
/// data it protects would be reported as a race. Same API as `Mutex`.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
#else
/// The lock every shared mutable state of the library uses (see the APPSTORE_TSAN variant for why it is a name of
/// its own).
public typealias Locked<Value> = Mutex<Value>
#endif
