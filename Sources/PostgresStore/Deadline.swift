internal import Locking

/// Races an operation against a timeout without waiting for the operation to notice its
/// cancellation: PostgresNIO's pool keeps a query queued for a connection while the server
/// refuses them, so a task group (which awaits every child, cancelled or not) would only
/// return when the database came back.
enum Deadline {
    /// `body`'s result, or `nil` when `timeout` passed first (`body` is then cancelled and
    /// left to finish on its own).
    static func run<R: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> R) async throws -> R? {
        let work = Task { try await body() }
        let once = Locked(false)
        let timer = Locked<Task<Void, Never>?>(nil)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R?, any Error>) in
            let finish: @Sendable (Result<R?, any Error>) -> Void = { result in
                let first = once.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(with: result) }
            }
            timer.withLock {
                $0 = Task {
                    try? await Task.sleep(for: timeout)
                    if Task.isCancelled { return }
                    work.cancel()
                    finish(.success(nil))
                }
            }
            Task {
                let result: Result<R?, any Error>
                do { result = .success(try await work.value) } catch { result = .failure(error) }
                timer.withLock { $0 }?.cancel()
                finish(result)
            }
        }
    }
}
