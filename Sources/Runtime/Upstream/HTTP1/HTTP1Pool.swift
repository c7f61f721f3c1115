import CLibUV

/// The loop's own HTTP/1.1 keep-alive connections to one `http://` origin: idle ones are
/// reused (most recent first), at most `maxConnectionsPerHost` are open, and exchanges
/// beyond that wait in order. Loop-confined: owned by one ``UpstreamClient``.
final class HTTP1Pool {
    unowned let client: UpstreamClient
    let origin: HTTP1Origin
    private var idle: [HTTP1Connection] = []
    private var waiting: [HTTP1Exchange] = []
    private var waitingHead = 0
    /// Every open connection, for shutdown.
    private var connections: [ObjectIdentifier: HTTP1Connection] = [:]
    /// Open connections: connecting, busy or idle.
    private(set) var openCount = 0
    private var shuttingDown = false
    /// A buffer for reading streamed request bodies, shared by the pool's connections
    /// (each copies what the kernel does not take at once).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)

    /// The origin's shared gauges, when the client has them, and what this pool last added
    /// to them.
    private let gauges: UpstreamConnectionGauges.Counters?
    private var publishedBusy = 0
    private var publishedIdle = 0

    init(client: UpstreamClient, origin: HTTP1Origin) {
        self.client = client
        self.origin = origin
        gauges = client.configuration.connectionGauges?.counters(for: "http://\(origin.authority)")
    }

    deinit { scratch.deallocate() }

    /// Idle connections, for tests.
    var idleCount: Int { idle.count }

    /// Whether nothing is under way: no exchange waiting and every open connection idle.
    var isQuiet: Bool { waitingHead >= waiting.count && openCount == idle.count }

    /// Runs `exchange` on an idle connection, a new one, or when one frees up.
    func start(_ exchange: HTTP1Exchange) {
        if let connection = idle.popLast() {
            publish()
            connection.run(exchange)
        } else if openCount < client.configuration.maxConnectionsPerHost {
            open(for: exchange)
        } else {
            waiting.append(exchange)
        }
    }

    /// Brings the shared gauges to this pool's counts: busy (connecting or serving) and idle.
    private func publish() {
        guard let gauges else { return }
        let busy = openCount - idle.count
        if busy != publishedBusy {
            gauges.busy.wrappingAdd(busy - publishedBusy, ordering: .relaxed)
            publishedBusy = busy
        }
        if idle.count != publishedIdle {
            gauges.idle.wrappingAdd(idle.count - publishedIdle, ordering: .relaxed)
            publishedIdle = idle.count
        }
    }

    /// Sends `exchange` again on a new connection (its reused one was closed by the peer).
    func retry(_ exchange: HTTP1Exchange) {
        exchange.retried = true
        start(exchange)
    }

    private func open(for exchange: HTTP1Exchange) {
        let connection: HTTP1Connection
        do throws(RuntimeError) {
            connection = try HTTP1Connection(pool: self)
        } catch {
            exchange.finish(.upstream(.upstreamFailed, "no socket for the upstream connection", underlying: error))
            return
        }
        openCount += 1
        connections[ObjectIdentifier(connection)] = connection
        publish()
        connection.connect(for: exchange)
    }

    /// A connection finished an exchange and can take another.
    func release(_ connection: HTTP1Connection) {
        if let next = nextWaiting() {
            connection.run(next)
        } else {
            idle.append(connection)
            publish()
            connection.startIdleTimer()
            client.exchangeEnded()
        }
    }

    /// A connection closed.
    func closed(_ connection: HTTP1Connection) {
        openCount -= 1
        connections[ObjectIdentifier(connection)] = nil
        if let i = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: i) }
        publish()
        if !shuttingDown, let next = nextWaiting() { open(for: next) }
        client.exchangeEnded()
    }

    /// Takes a waiting exchange out of the queue (it was cancelled).
    func dequeue(_ exchange: HTTP1Exchange) {
        if let i = waiting[waitingHead...].firstIndex(where: { $0 === exchange }) { waiting.remove(at: i) }
    }

    private func nextWaiting() -> HTTP1Exchange? {
        guard waitingHead < waiting.count else { return nil }
        let next = waiting[waitingHead]
        waitingHead += 1
        if waitingHead > 64 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
        return next
    }

    /// Closes every connection and fails every waiting exchange (client shutdown).
    func close() {
        shuttingDown = true
        let pending = waiting[waitingHead...]
        waiting = []
        waitingHead = 0
        for exchange in pending { exchange.finish(.upstream(.cancelled, "the upstream client shut down")) }
        idle = []
        publish()
        for connection in Array(connections.values) {
            connection.shutDown()
        }
    }
}
