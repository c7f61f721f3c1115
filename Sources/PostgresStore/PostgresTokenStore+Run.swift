internal import AuthCore
internal import Logging
internal import ServiceLifecycle

extension PostgresTokenStore {
    /// Runs the store's connections until a graceful shutdown, the task's cancellation or
    /// ``close()``: the connection pool (and each pool that replaces it after a silent
    /// partition, see ``RenewablePool``), the connection listening to the other replicas'
    /// notifications, the sessions that follow them (``follow(_:)``), the renewal of the
    /// leases this replica holds, and the ping that keeps ``isReachable`` current every 2 s
    /// even while no session writes.
    ///
    /// `authgate serve` runs it in its one service group, listed before the gateway, so that
    /// it stops after the gateway's last write; a caller without a group (a test) runs it
    /// in a task for as long as it uses the store.
    public func run() async {
        lifetime.began.fire()
        defer {
            stopUsing()
            lifetime.ended.fire()
        }
        let pool = self.pool
        let hub = self.hub
        let logger = self.logger
        let listener = self.listener
        let channel = self.channel
        let operationTimeout = self.operationTimeout
        await withDiscardingTaskGroup { group in
            group.addTask { await pool.run() }
            group.addTask {
                await Self.listen(on: channel, with: listener, hub: hub, logger: logger, renewPool: { pool.renew() })
            }
            group.addTask { [self] in await renewHeldLeases() }
            group.addTask { [self] in
                await withDiscardingTaskGroup { followers in
                    for await sessions in followed.requests {
                        followers.addTask { await self.keepInLine(sessions) }
                    }
                }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(2))
                    if Task.isCancelled { break }
                    recordReachable(await Self.ping(pool.client, timeout: min(operationTimeout, Self.pingTimeout)))
                }
            }
            for await _ in lifetime.stopped.cancelOnGracefulShutdown() {}
            group.cancelAll()
        }
    }

    /// Returns once ``run()`` runs the connection pool (at once after ``close()``, and when
    /// the task is cancelled): an operation sent before would wait for it, and PostgresNIO
    /// would warn that its client does not run yet.
    public func untilRunning() async {
        await pool.running.wait()
    }

    /// Stops the store for good: the followers, and ``run()`` with the lease renewals, which
    /// it waits for. Operations after this fail as unavailable.
    public func close() async {
        stopUsing()
        await lifetime.stop()
    }

    /// Ends what uses the store: each lease's renewal (device polling leases too), every
    /// follower, the pool.
    private func stopUsing() {
        held.withLock { $0.removeAll() }
        followed.finish()
        hub.finish()
        pool.close()
    }
}

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
