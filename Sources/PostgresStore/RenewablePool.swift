internal import Locking
internal import PostgresNIO

/// The store's connection pool, which can be replaced whole.
///
/// After a silent partition the pool's connections are as dead as the listening one, and
/// PostgresNIO cannot tell: a query sent on one waits until TCP gives up, minutes later, and
/// every operation that timed out during the cut left one such connection leased. So when
/// the listening connection comes back after a silent loss, the pool is replaced by a new
/// one (the old one is shut down, which closes its connections) and operations from then on
/// get fresh connections.
///
/// The pool starts nothing by itself: ``run()`` runs the current client, and each one that
/// replaces it, as child tasks of the caller's task (the store's ``PostgresTokenStore/run()``,
/// under the gateway's service group), until the caller's task is cancelled.
final class RenewablePool: Sendable {
    /// A client and what retires it: finishing `retire` ends the client's run.
    private struct Generation: Sendable {
        var client: PostgresClient
        var retire: AsyncStream<Void>.Continuation
        var retired: AsyncStream<Void>
    }

    private struct State {
        var current: Generation
        var closed = false
    }

    private let make: @Sendable () -> PostgresClient
    private let state: Locked<State>
    /// Every client to run, the first one included, in order.
    private let generations: AsyncStream<Generation>
    private let handOut: AsyncStream<Generation>.Continuation
    /// Fired as ``run()`` starts the first client, or by ``close()``.
    let running = OneTimeSignal()

    /// Creates a pool with `make`; ``run()`` runs it.
    init(_ make: @escaping @Sendable () -> PostgresClient) {
        self.make = make
        let first = Self.generation(make())
        state = Locked(State(current: first))
        (generations, handOut) = AsyncStream.makeStream(of: Generation.self)
        handOut.yield(first)
    }

    private static func generation(_ client: PostgresClient) -> Generation {
        let (retired, retire) = AsyncStream.makeStream(of: Void.self)
        return Generation(client: client, retire: retire, retired: retired)
    }

    /// The pool operations use now.
    var client: PostgresClient { state.withLock { $0.current.client } }

    /// Runs the current client and every one that replaces it, until the task is cancelled
    /// or ``close()`` is called; each client's run ends when it is replaced.
    func run() async {
        let running = self.running
        await withDiscardingTaskGroup { group in
            for await generation in generations {
                group.addTask {
                    await withTaskGroup(of: Void.self) { one in
                        one.addTask {
                            running.fire()
                            await generation.client.run()
                        }
                        one.addTask { for await _ in generation.retired {} }
                        _ = await one.next()
                        one.cancelAll()
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// Replaces the pool by a new one and shuts the old one down.
    func renew() {
        let next = Self.generation(make())
        let old = state.withLock { s -> Generation? in
            guard !s.closed else { return nil }
            defer { s.current = next }
            return s.current
        }
        guard let old else { return }
        old.retire.finish()
        handOut.yield(next)
    }

    /// Shuts the pool down for good: ``run()`` returns once its clients have stopped.
    func close() {
        let current = state.withLock { s in
            s.closed = true
            return s.current
        }
        handOut.finish()
        current.retire.finish()
        running.fire()
    }
}
