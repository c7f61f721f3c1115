import Locking

/// One ``UpstreamClient`` per event loop, created on first use, so that an exchange never
/// leaves the loop of the request it serves.
///
/// ```swift
/// let pool = UpstreamClientPool(configuration: UpstreamClientConfiguration())
/// let transfer = pool.client(for: request.loop).start(upstream, handler: handler)  // on request.loop
/// ```
public final class UpstreamClientPool: Sendable {
    private let configuration: UpstreamClientConfiguration
    private let clients = Locked<[ObjectIdentifier: UpstreamClient]>([:])

    /// Creates an empty pool whose clients share `configuration`.
    public init(configuration: UpstreamClientConfiguration) {
        self.configuration = configuration
    }

    /// The client of `loop`, created on first use. Call on `loop`: only that loop ever
    /// creates its entry, so two threads never race to make one loop's client.
    public func client(for loop: EventLoop) -> UpstreamClient {
        let id = ObjectIdentifier(loop)
        if let c = clients.withLock({ $0[id] }) { return c }
        let c = UpstreamClient(loop: loop, configuration: configuration)
        clients.withLock { $0[id] = c }
        return c
    }
}
