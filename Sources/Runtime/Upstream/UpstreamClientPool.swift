import Locking

/// One ``UpstreamClient`` per event loop, created on first use, so that an exchange never
/// leaves the loop of the request it serves.
///
/// ```swift
/// let pool = UpstreamClientPool(configuration: UpstreamClientConfiguration())
/// let transfer = pool.client(for: request.loop).start(upstream, handler: handler)  // on request.loop
/// ```
public final class UpstreamClientPool: Sendable {
    private struct State {
        var clients: [ObjectIdentifier: UpstreamClient] = [:]
        var retired = false
    }

    private let configuration: UpstreamClientConfiguration
    private let state = Locked(State())

    /// Creates an empty pool whose clients share `configuration`.
    public init(configuration: UpstreamClientConfiguration) {
        self.configuration = configuration
    }

    /// The client of `loop`, created on first use. Call on `loop`: only that loop ever
    /// creates its entry, so two threads never race to make one loop's client.
    public func client(for loop: EventLoop) -> UpstreamClient {
        let id = ObjectIdentifier(loop)
        if let c = state.withLock({ $0.clients[id] }) { return c }
        let c = UpstreamClient(loop: loop, configuration: configuration)
        let retired = state.withLock { state -> Bool in
            state.clients[id] = c
            return state.retired
        }
        if retired { c.retire() }
        return c
    }

    /// Whether ``retire()`` was called.
    public var isRetired: Bool { state.withLock { $0.retired } }

    /// Newer settings replaced this pool's: each client closes its connections whenever it
    /// has nothing under way (``UpstreamClient/retire()``), on its own loop, and so does a
    /// client created later (a replay on a loop that had none).
    public func retire() {
        let clients = state.withLock { state -> [UpstreamClient] in
            state.retired = true
            return Array(state.clients.values)
        }
        for client in clients {
            client.loop.executeSoonOrNow { client.retire() }
        }
    }
}
