import COpenSSL
import Synchronization

// What the library holds for its callers, for leak checks (scripts/leak-check): a count that cannot be fooled by
// page-level noise (JIT, arenas, a collector's lag), and the process's malloc in-use bytes.

/// Handles, appstore_error objects and `char **` result strings handed to callers and not yet freed.
private let liveObjects = Atomic<Int64>(0)

@inline(__always) func countObjectHandedOut() { liveObjects.add(1, ordering: .relaxed) }
@inline(__always) func countObjectFreed() { liveObjects.subtract(1, ordering: .relaxed) }

@c(appstore_debug_live_objects)
public func appstoreDebugLiveObjects() -> Int64 { liveObjects.load(ordering: .relaxed) }

@c(appstore_debug_malloc_in_use)
public func appstoreDebugMallocInUse() -> Int64 { Int64(appstore_shim_malloc_in_use()) }
