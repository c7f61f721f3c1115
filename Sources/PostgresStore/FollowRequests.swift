public import AuthCore

/// The sessions handed to ``PostgresTokenStore/follow(_:)``, on their way to ``PostgresTokenStore/run()``,
/// which follows each set in its own task group: a follower starts and ends with the run
/// (a graceful shutdown, cancellation or ``PostgresTokenStore/close()``), never outside it.
final class FollowRequests: Sendable {
    /// Each set of sessions, in the order handed over; finished once the store stops.
    let requests: AsyncStream<[AccountID: AuthActor]>
    private let handOver: AsyncStream<[AccountID: AuthActor]>.Continuation

    init() {
        (requests, handOver) = AsyncStream.makeStream(of: [AccountID: AuthActor].self)
    }

    /// Hands `sessions` to the run; dropped once the store has stopped.
    func add(_ sessions: [AccountID: AuthActor]) { handOver.yield(sessions) }

    /// No set is handed over any more.
    func finish() { handOver.finish() }
}
