import CLibUV

/// The loop's own HTTP/1.1 keep-alive connections to one `http://` origin: idle ones are
/// reused (most recent first), at most `maxConnectionsPerHost` are open, and exchanges
/// beyond that wait in order. Loop-confined: owned by one ``UpstreamClient``.
final class HTTP1Pool {
    unowned let client: UpstreamClient
    let origin: UpstreamOrigin
    /// The pool's decisions.
    private var machine: StateMachine<HTTP1Connection, HTTP1Exchange>
    /// Every open connection, for shutdown.
    private var connections: [ObjectIdentifier: HTTP1Connection] = [:]
    /// The timer that ends unanswered connections' windows (``StateMachine``), made when a
    /// first connection connects.
    private var paceTimer: LoopTimer?
    /// A buffer for reading streamed request bodies, shared by the pool's connections
    /// (each copies what the kernel does not take at once).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)

    /// The origin's shared gauges, when the client has them, and what this pool last added
    /// to them.
    private let gauges: UpstreamConnectionGauges.Counters?
    private var publishedBusy = 0
    private var publishedIdle = 0

    init(client: UpstreamClient, origin: UpstreamOrigin) {
        self.client = client
        self.origin = origin
        machine = StateMachine(
            maxConnections: client.configuration.maxConnectionsPerHost,
            maxConnecting: client.configuration.maxConnectingPerHost,
            firstAnswerWindow: client.configuration.firstAnswerWindow.milliseconds)
        gauges = client.configuration.connectionGauges?.counters(for: "http://\(origin.authority)")
    }

    deinit { scratch.deallocate() }

    /// Open connections: connecting, busy or idle.
    var openCount: Int { machine.openCount }

    /// Idle connections, for tests.
    var idleCount: Int { machine.idle.count }

    /// Connections opened and not yet answered, for tests.
    var unprovenCount: Int { machine.unprovenCount }

    /// The most connections that were unanswered at once, for tests.
    var peakUnprovenCount: Int { machine.peakUnprovenCount }

    /// Whether nothing is under way: no exchange waiting and every open connection idle.
    var isQuiet: Bool { machine.isQuiet }

    /// Runs `exchange` on an idle connection, a new one, or when one frees up.
    func start(_ exchange: HTTP1Exchange) {
        guard let action = machine.start(exchange) else { return }
        execute(action)
    }

    /// Sends `exchange` again on a new connection (its reused one was closed by the peer).
    func retry(_ exchange: HTTP1Exchange) {
        exchange.retried = true
        start(exchange)
    }

    /// A connection finished an exchange and can take another.
    func release(_ connection: HTTP1Connection) {
        let (first, then) = machine.released(connection)
        execute(first)
        if let then { execute(then) }
    }

    /// A new connection connected: the window for its first answer starts.
    func connected(_ connection: HTTP1Connection) {
        if let action = machine.connected(connection, now: client.loop.now) { execute(action) }
    }

    /// The first answer's head arrived on a new connection: the server accepted it.
    func answered(_ connection: HTTP1Connection) {
        if let action = machine.answered(connection) { execute(action) }
    }

    /// A connection closed.
    func closed(_ connection: HTTP1Connection) {
        connections[ObjectIdentifier(connection)] = nil
        let (first, then) = machine.closed(connection)
        if let first { execute(first) }
        execute(then)
    }

    /// Takes a waiting exchange out of the queue (it was cancelled).
    func dequeue(_ exchange: HTTP1Exchange) {
        machine.dequeue(exchange)
    }

    /// Closes every connection and fails every waiting exchange (client shutdown).
    func close() {
        let (failing, closing) = machine.shutDown(open: Array(connections.values))
        paceTimer?.close()
        paceTimer = nil
        execute(failing)
        execute(closing)
    }

    /// Ends the windows that are due (the pace timer fired).
    private func paceTimerFired() {
        for action in machine.paceTimerFired(now: client.loop.now) { execute(action) }
    }

    /// Makes the pace timer fire at `deadline`, making it first if need be. Without a timer
    /// the machine stops counting connected connections at once: a window nothing ends
    /// could stall the origin's waiting exchanges behind slow first answers.
    private func armPaceTimer(at deadline: UInt64) {
        do throws(RuntimeError) {
            let timer: LoopTimer
            if let paceTimer {
                timer = paceTimer
            } else {
                timer = try LoopTimer(loop: client.loop.uv) { [unowned self] in paceTimerFired() }
                paceTimer = timer
            }
            try timer.arm(at: deadline)
        } catch {
            for action in machine.paceTimerFailed() { execute(action) }
        }
    }

    /// Runs one of the machine's actions, then brings the gauges up to date.
    private func execute(_ action: StateMachine<HTTP1Connection, HTTP1Exchange>.Action) {
        switch action {
        case .run(let exchange, let connection):
            publish()
            connection.run(exchange)
        case .open(let exchange):
            let connection: HTTP1Connection
            do throws(RuntimeError) {
                connection = try HTTP1Connection(pool: self)
            } catch {
                machine.openFailed()
                exchange.finish(.upstream(.upstreamFailed, "no socket for the upstream connection", underlying: error))
                return
            }
            connections[ObjectIdentifier(connection)] = connection
            machine.opened(connection)
            publish()
            connection.connect(for: exchange)
        case .park(let connection):
            publish()
            connection.startIdleTimer()
        case .exchangeEnded:
            publish()
            client.exchangeEnded()
        case .failWaiting(let exchanges):
            for exchange in exchanges { exchange.finish(.upstream(.cancelled, "the upstream client shut down")) }
        case .shutDown(let open):
            publish()
            for connection in open { connection.shutDown() }
        case .armPaceTimer(let deadline):
            armPaceTimer(at: deadline)
        }
    }

    /// Brings the shared gauges to this pool's counts: busy (connecting or serving) and idle.
    private func publish() {
        guard let gauges else { return }
        let busy = machine.busyCount
        let idle = machine.idle.count
        if busy != publishedBusy {
            gauges.busy.wrappingAdd(busy - publishedBusy, ordering: .relaxed)
            publishedBusy = busy
        }
        if idle != publishedIdle {
            gauges.idle.wrappingAdd(idle - publishedIdle, ordering: .relaxed)
            publishedIdle = idle
        }
    }
}
