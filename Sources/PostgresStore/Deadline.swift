internal import Locking

/// The bound of one store operation, and the point after which its transaction may no
/// longer commit.
///
/// ``run(_:_:)`` races the operation against its timeout without waiting for it to notice
/// its cancellation: PostgresNIO's pool keeps a query queued for a connection while the
/// server refuses them, and a query already sent runs to its end whatever its task does, so
/// a task group (which awaits every child, cancelled or not) would only return when the
/// database came back.
///
/// An operation left behind that way still runs, and its transaction could commit after its
/// caller was told it failed, over whatever was written meanwhile: a write held up behind
/// another connection's row lock, released after a newer pair was stored, would replace
/// that pair with an older one. So a transaction passes its ``commitPoint()`` last, just
/// before `COMMIT`, and rolls back when the caller was already answered.
final class Deadline: Sendable {
    /// The caller was answered with a failure before the operation reached its commit point.
    struct Expired: Error {}

    private enum Phase {
        case running
        case finished
        case timedOut
    }

    /// The instant the caller is answered at the latest.
    let end: ContinuousClock.Instant
    /// Who answered the caller: the operation, or the timer. Settled once, under the lock
    /// that ``commitPoint()`` takes too, so the two cannot both think they came first.
    private let phase = Locked(Phase.running)

    private init(end: ContinuousClock.Instant) {
        self.end = end
    }

    /// How long the operation has left (zero or less once it is over).
    var remaining: Duration { end - ContinuousClock.now }

    /// Throws ``Expired`` when the caller was already told the operation failed.
    ///
    /// When it returns, the caller is answered with the outcome of the `COMMIT` that follows
    /// or, should the deadline pass while that `COMMIT` is in flight, with a failure. Even
    /// then nothing newer can be overwritten: the transaction holds the locks of the rows it
    /// wrote until it ends, so any later write of those rows comes after it.
    func commitPoint() throws {
        if phase.withLock({ $0 == .timedOut }) { throw Expired() }
    }

    /// Moves on from running; false when the caller was already answered.
    private func settle(_ next: Phase) -> Bool {
        phase.withLock { phase in
            guard phase == .running else { return false }
            phase = next
            return true
        }
    }

    /// `body`'s result, or `nil` when `timeout` passed first (`body` is then cancelled and
    /// left to finish on its own; a transaction of it can no longer pass its commit point).
    static func run<R: Sendable>(
        _ timeout: Duration, _ body: @escaping @Sendable (Deadline) async throws -> R
    ) async throws -> R? {
        let deadline = Deadline(end: ContinuousClock.now + timeout)
        let work = Task { try await body(deadline) }
        let timer = Locked<Task<Void, Never>?>(nil)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R?, any Error>) in
            timer.withLock {
                $0 = Task {
                    try? await Task.sleep(until: deadline.end, clock: .continuous)
                    if Task.isCancelled { return }
                    guard deadline.settle(.timedOut) else { return }
                    work.cancel()
                    continuation.resume(returning: nil)
                }
            }
            Task {
                let result: Result<R?, any Error>
                do { result = .success(try await work.value) } catch { result = .failure(error) }
                timer.withLock { $0 }?.cancel()
                if deadline.settle(.finished) { continuation.resume(with: result) }
            }
        }
    }
}
