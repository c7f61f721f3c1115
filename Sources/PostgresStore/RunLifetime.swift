/// When a store's ``PostgresTokenStore/run()`` is asked to stop, and who waits for it:
/// ``PostgresTokenStore/close()`` ends a run that started and waits for it to end, and a run
/// that starts after it returns at once.
final class RunLifetime: Sendable {
    /// The run began.
    let began = OneTimeSignal()
    /// The run ended.
    let ended = OneTimeSignal()
    /// Finished by ``stop()``: a run waits on it.
    let stopped: AsyncStream<Void>
    private let stopping: AsyncStream<Void>.Continuation

    init() {
        (stopped, stopping) = AsyncStream.makeStream(of: Void.self)
    }

    /// Asks the run to stop and waits until it has ended (at once when none began).
    func stop() async {
        stopping.finish()
        if began.hasFired { await ended.wait() }
    }
}
