#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Each thread's spare header lists, so that a message's fields reuse the storage of a head
/// already sent instead of allocating a pair of arrays per message.
///
/// A list is handed back (``HTTPHeaders/recycle()``) once its head is written out, and
/// taken (``HTTPHeaders/pooled(fields:bytes:)``) when a parser starts the next message's
/// fields. A list may still be shared when it is handed back (the caller's copy goes away
/// after it); it is emptied only when taken, and if it is still shared then, emptying it
/// makes a new pair of arrays as if there were no pool. The pool is per thread, so taking
/// and handing back need no lock; an event loop's thread keeps its own lists warm.
final class HeaderListPool {
    /// At most this many lists wait per thread.
    static let capacity = 16
    /// A list whose line buffer grew past this many bytes is not kept (a rare huge head
    /// should not pin its memory).
    static let largestKept = 8192

    private var lists: [HTTPHeaders] = []

    private init() {
        lists.reserveCapacity(Self.capacity)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { pool in
            guard let pool else { return }
            Unmanaged<HeaderListPool>.fromOpaque(pool).release()
        }
        precondition(rc == 0, "pthread_key_create failed: \(rc)")
        return key
    }()

    /// The calling thread's pool, made on first use and released when the thread ends.
    static var current: HeaderListPool {
        if let pool = pthread_getspecific(key) { return Unmanaged<HeaderListPool>.fromOpaque(pool).takeUnretainedValue() }
        let pool = HeaderListPool()
        let rc = pthread_setspecific(key, Unmanaged.passRetained(pool).toOpaque())
        precondition(rc == 0, "pthread_setspecific failed: \(rc)")
        return pool
    }

    /// An empty list, with a handed-back list's room when there is one.
    func take() -> HTTPHeaders? {
        guard var list = lists.popLast() else { return nil }
        list.removeAllKeepingCapacity()
        return list
    }

    /// Keeps `list` for a later ``take()``, unless the pool is full or the list too big.
    func keep(_ list: HTTPHeaders) {
        guard lists.count < Self.capacity, list.storageCapacity <= Self.largestKept else { return }
        lists.append(list)
    }

    /// How many lists wait (for the tests).
    var count: Int { lists.count }
}

extension HTTPHeaders {
    /// An empty list with room for `fields` fields of `bytes` bytes: a spare list of this
    /// thread's when there is one (``recycle()``), else a new one.
    public static func pooled(fields: Int, bytes: Int) -> HTTPHeaders {
        if let list = HeaderListPool.current.take() { return list }
        var list = HTTPHeaders()
        list.reserveCapacity(fields, bytes: bytes)
        return list
    }

    /// Hands this list's storage to the calling thread's spares once its fields are no
    /// longer needed (its head was written out), for a later ``pooled(fields:bytes:)``.
    /// Copies of it stay valid: a list still shared when taken is not reused.
    public func recycle() {
        HeaderListPool.current.keep(self)
    }
}
