import Dispatch
import Foundation
import Glibc

/// Blocks the given signals in every thread (create it before any thread starts) and
/// waits for one of them.
struct SignalWaiter {
    private var set = sigset_t()

    init(_ signals: Int32...) {
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits for a signal; returns its number.
    func wait() -> Int32 {
        var set = self.set
        var sig: Int32 = 0
        sigwait(&set, &sig)
        return sig
    }
}

/// Runs async work from a synchronous command and waits for it. The main thread only
/// waits: nothing here needs the main actor, and no event loop runs on this thread.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { box.set(.success(try await body())) } catch { box.set(.failure(error)) }
        done.signal()
    }
    done.wait()
    return try box.get()
}

/// The result of the work `runBlocking` waits for; set on one thread, read on another
/// after the semaphore, under a lock.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<T, any Error>?
    func set(_ r: Result<T, any Error>) { lock.withLock { value = r } }
    func get() throws -> T {
        // Read only after the semaphore was signalled, so the value is set.
        try lock.withLock { value }!.get()
    }
}
