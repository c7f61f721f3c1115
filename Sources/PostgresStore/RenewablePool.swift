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
final class RenewablePool: Sendable {
    private struct Running {
        var client: PostgresClient
        var run: Task<Void, Never>
        var closed = false
    }

    private let make: @Sendable () -> PostgresClient
    private let running: Locked<Running>

    /// Creates a pool with `make` and runs it.
    init(_ make: @escaping @Sendable () -> PostgresClient) {
        self.make = make
        let client = make()
        running = Locked(Running(client: client, run: Task { await client.run() }))
    }

    /// The pool operations use now.
    var client: PostgresClient { running.withLock { $0.client } }

    /// Replaces the pool by a new one and shuts the old one down.
    func renew() {
        let client = make()
        let old = running.withLock { r -> Task<Void, Never>? in
            guard !r.closed else { return nil }
            defer { r = Running(client: client, run: Task { await client.run() }) }
            return r.run
        }
        old?.cancel()
    }

    /// Shuts the pool down for good.
    func close() async {
        let run = running.withLock { r in
            r.closed = true
            return r.run
        }
        run.cancel()
        await run.value
    }
}
