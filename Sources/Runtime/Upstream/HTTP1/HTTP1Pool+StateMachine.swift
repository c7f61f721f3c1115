extension HTTP1Pool {
    /// The decisions of one origin's pool, as a value: which connection serves an exchange
    /// (the most recently idle one, else a new one while fewer than the limit are open and
    /// fewer than `maxConnecting` are still connecting, else it waits in order), what a
    /// freed, connected or closed connection does next, and shutdown. It touches no socket:
    /// each event returns the actions ``HTTP1Pool`` runs, in order.
    ///
    /// Connections are opened at the pace they connect: a burst of exchanges opens
    /// `maxConnecting` at once and the others wait for the first of a connection that frees
    /// up or a connect that completes. An API with a short listen backlog then never sees
    /// more connection attempts at once than it can queue (a dropped SYN costs the request
    /// a retransmit: 1 s, then 3, 7, 15).
    ///
    /// Generic over the connection and exchange types so that it is tested with plain
    /// objects; it only keeps and compares references.
    struct StateMachine<Connection: AnyObject, Exchange: AnyObject> {
        /// What the shell does, in order.
        enum Action {
            /// Runs `exchange` on the idle `connection`.
            case run(Exchange, on: Connection)
            /// Opens a new connection for `exchange`.
            case open(for: Exchange)
            /// Starts the idle timer of `connection`, now in the pool.
            case park(Connection)
            /// Nothing is under way on a connection any more (the client may be retiring).
            case exchangeEnded
            /// Fails the exchanges that were waiting (the pool shuts down).
            case failWaiting([Exchange])
            /// Shuts down these connections (the pool shuts down).
            case shutDown([Connection])
        }

        /// The most connections open at once.
        let maxConnections: Int
        /// The most connections still connecting at once.
        let maxConnecting: Int
        /// Connections opened and not yet connected (nor failed).
        private(set) var connectingCount = 0 {
            didSet { peakConnectingCount = max(peakConnectingCount, connectingCount) }
        }
        /// The most connections that were connecting at once, for tests.
        private(set) var peakConnectingCount = 0
        /// Idle connections, most recently idle last.
        private(set) var idle: [Connection] = []
        /// Exchanges waiting for a connection, in order, from `waitingHead` on.
        private var waiting: [Exchange] = []
        private var waitingHead = 0
        /// Open connections: connecting, busy or idle.
        private(set) var openCount = 0
        private(set) var shuttingDown = false

        init(maxConnections: Int, maxConnecting: Int = .max) {
            self.maxConnections = maxConnections
            self.maxConnecting = max(1, maxConnecting)
        }

        /// Busy connections: open and not idle.
        var busyCount: Int { openCount - idle.count }

        /// How many exchanges wait for a connection.
        var waitingCount: Int { waiting.count - waitingHead }

        /// Whether nothing is under way: no exchange waiting and every open connection idle.
        var isQuiet: Bool { waitingCount == 0 && openCount == idle.count }

        /// An exchange wants a connection.
        mutating func start(_ exchange: Exchange) -> Action? {
            if let connection = idle.popLast() { return .run(exchange, on: connection) }
            if canOpen {
                openCount += 1
                connectingCount += 1
                return .open(for: exchange)
            }
            waiting.append(exchange)
            return nil
        }

        /// Whether a new connection may be opened now.
        private var canOpen: Bool { openCount < maxConnections && connectingCount < maxConnecting && !shuttingDown }

        /// Opening a connection failed before it counted (no socket): the slot is free again.
        mutating func openFailed() {
            openCount -= 1
            connectingCount -= 1
        }

        /// A connection opened by ``Action/open(for:)`` connected, or failed to: another
        /// may connect now, for the first waiting exchange.
        mutating func connectFinished() -> Action? {
            connectingCount -= 1
            return openForWaiting()
        }

        /// A new connection for the first waiting exchange, when one may be opened.
        private mutating func openForWaiting() -> Action? {
            guard canOpen, let next = nextWaiting() else { return nil }
            openCount += 1
            connectingCount += 1
            return .open(for: next)
        }

        /// `connection` finished an exchange and can take another: it runs the next waiting
        /// exchange, or is parked (the second action then says nothing is under way on it).
        mutating func released(_ connection: Connection) -> (Action, Action?) {
            if let next = nextWaiting() { return (.run(next, on: connection), nil) }
            idle.append(connection)
            return (.park(connection), .exchangeEnded)
        }

        /// `connection` closed: a waiting exchange gets a new one (the first action), and
        /// then nothing is under way on the closed one (``Action/exchangeEnded``).
        mutating func closed(_ connection: Connection) -> (Action?, Action) {
            openCount -= 1
            if let i = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: i) }
            return (openForWaiting(), .exchangeEnded)
        }

        /// A waiting exchange was cancelled.
        mutating func dequeue(_ exchange: Exchange) {
            if let i = waiting[waitingHead...].firstIndex(where: { $0 === exchange }) { waiting.remove(at: i) }
        }

        /// The pool shuts down: waiting exchanges fail, every connection is shut down.
        mutating func shutDown(open: [Connection]) -> (Action, Action) {
            shuttingDown = true
            let pending = Array(waiting[waitingHead...])
            waiting = []
            waitingHead = 0
            idle = []
            return (.failWaiting(pending), .shutDown(open))
        }

        private mutating func nextWaiting() -> Exchange? {
            guard waitingHead < waiting.count else { return nil }
            let next = waiting[waitingHead]
            waitingHead += 1
            // The consumed front is dropped once it is most of the array.
            if waitingHead > 64 && waitingHead * 2 > waiting.count {
                waiting.removeFirst(waitingHead)
                waitingHead = 0
            }
            return next
        }
    }
}
