#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`, with the same `withLock` shape as
/// `Synchronization.Mutex`.
///
/// Why not `Mutex`: the toolchain's Synchronization library is not built with
/// ThreadSanitizer instrumentation, so TSan cannot see `Mutex`'s lock and unlock and
/// reports every access it guards as a race. `pthread_mutex_lock` is intercepted by the
/// sanitizers, so this lock keeps `--sanitize=thread` runs meaningful.
///
/// `@unchecked Sendable` is safe: `value` is only touched between lock and unlock.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Read and written only between ``lock()`` and ``unlock()``; visible to inlined code so
    /// that `withLock` is specialised for the value's type in the caller's module (otherwise
    /// every access copies the value through its runtime type's witnesses).
    @usableFromInline var value: Value

    /// Creates a lock around `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body(&value)
    }

    @usableFromInline
    func lock() {
        let rc = pthread_mutex_lock(mutex)
        precondition(rc == 0, "pthread_mutex_lock failed: \(rc)")
    }

    @usableFromInline
    func unlock() {
        let rc = pthread_mutex_unlock(mutex)
        precondition(rc == 0, "pthread_mutex_unlock failed: \(rc)")
    }
}
