extension HTTP1Pool {
    /// The decisions of one origin's pool, as a value: which connection serves an exchange
    /// (the most recently idle one, else a new one while fewer than the limit are open and
    /// fewer than `maxConnecting` are still unanswered, else it waits in order), what a
    /// freed, connected or closed connection does next, and shutdown. It touches no socket:
    /// each event returns the actions ``HTTP1Pool`` runs, in order.
    ///
    /// Connections are opened at the pace the origin answers them: a new connection counts
    /// against `maxConnecting` from the moment it is opened until the first answer's head
    /// arrives on it (which proves the server accepted it) or it closes; a burst of
    /// exchanges opens `maxConnecting` at once and the others wait for the first of a
    /// connection that frees up or one that answers. A completed connect proves nothing: the
    /// kernel completes it when it queues the connection, before the server accepts it, so
    /// pacing by connects still overran an API with a short listen backlog (a dropped SYN
    /// or request costs a retransmit: 1 s for a SYN, then 3, 7, 15).
    ///
    /// A connected connection stops counting `firstAnswerWindow` milliseconds after its
    /// connect completed, answered or not, so that slow first answers (a long poll, a late
    /// event stream, a 30-second API) do not stall the origin's other exchanges: the pool
    /// asks the shell for one timer (``Action/armPaceTimer(deadline:)``), at the earliest
    /// window's end, and is told when it fires. The window starts when the connect completes,
    /// not when the connection opens: a connect still waiting on a dropped SYN keeps counting
    /// (until it completes, fails or times out), as another attempt would meet the same full
    /// queue. A reused connection never counts.
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
            /// Makes the pool's timer fire at `deadline` (loop milliseconds), then call
            /// ``paceTimerFired(now:)``; at most one is pending.
            case armPaceTimer(deadline: UInt64)
        }

        /// A connection the pace counts: opened, and not yet answered.
        private struct Unproven {
            let connection: Connection
            /// The loop time it stops counting at, answered or not; nil while it connects.
            var until: UInt64?
        }

        /// The most connections open at once.
        let maxConnections: Int
        /// The most connections opened and not yet answered at once.
        let maxConnecting: Int
        /// How long a connected connection counts without an answer, in milliseconds (0:
        /// until its connect completes).
        let firstAnswerWindow: UInt64
        /// Connections opened and not yet answered (nor closed, nor past their window).
        private(set) var unprovenCount = 0 {
            didSet { peakUnprovenCount = max(peakUnprovenCount, unprovenCount) }
        }
        /// The most connections that were unanswered at once, for tests.
        private(set) var peakUnprovenCount = 0
        /// The connections ``unprovenCount`` counts, in the order they were opened (only
        /// between an ``Action/open(for:)`` and its ``opened(_:)`` is one counted and not
        /// listed). A handful: at most `maxConnecting`.
        private var unproven: [Unproven] = []
        /// The deadline the pace timer is armed for, if it is.
        private var paceTimerDue: UInt64?
        /// Idle connections, most recently idle last.
        private(set) var idle: [Connection] = []
        /// Exchanges waiting for a connection, in order, from `waitingHead` on.
        private var waiting: [Exchange] = []
        private var waitingHead = 0
        /// Open connections: connecting, busy or idle.
        private(set) var openCount = 0
        private(set) var shuttingDown = false

        init(maxConnections: Int, maxConnecting: Int = .max, firstAnswerWindow: UInt64 = 0) {
            self.maxConnections = maxConnections
            self.maxConnecting = max(1, maxConnecting)
            self.firstAnswerWindow = firstAnswerWindow
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
                unprovenCount += 1
                return .open(for: exchange)
            }
            waiting.append(exchange)
            return nil
        }

        /// Whether a new connection may be opened now.
        private var canOpen: Bool { openCount < maxConnections && unprovenCount < maxConnecting && !shuttingDown }

        /// The shell made `connection` for an ``Action/open(for:)``: it counts until it answers.
        mutating func opened(_ connection: Connection) {
            unproven.append(Unproven(connection: connection, until: nil))
        }

        /// Opening a connection failed before it counted (no socket): the slot is free again.
        mutating func openFailed() {
            openCount -= 1
            unprovenCount -= 1
        }

        /// `connection` connected: it counts on until its first answer, for at most the
        /// window (the pace timer is armed when none is).
        mutating func connected(_ connection: Connection, now: UInt64) -> Action? {
            guard let i = unprovenIndex(connection), unproven[i].until == nil else { return nil }
            guard firstAnswerWindow > 0 else {
                forget(at: i)
                return openForWaiting()
            }
            let until = now + firstAnswerWindow
            unproven[i].until = until
            guard paceTimerDue == nil else { return nil }
            paceTimerDue = until
            return .armPaceTimer(deadline: until)
        }

        /// The head of an answer arrived on `connection`. Its first proves that the server
        /// accepted it: it stops counting, and another may open for the first waiting
        /// exchange. Any later one (or one on a connection past its window) changes nothing.
        mutating func answered(_ connection: Connection) -> Action? {
            guard let i = unprovenIndex(connection) else { return nil }
            forget(at: i)
            return openForWaiting()
        }

        /// The pace timer fired: connections whose window ended stop counting, as many
        /// waiting exchanges as that allows get new connections, and the timer is armed
        /// again for the next window's end. Runs seldom (a slow first answer), so the list
        /// it returns costs nothing per request.
        mutating func paceTimerFired(now: UInt64) -> [Action] {
            paceTimerDue = nil
            var i = 0
            while i < unproven.count {
                if let until = unproven[i].until, until <= now { forget(at: i) } else { i += 1 }
            }
            return openAllowed()
        }

        /// The shell has no timer to run (it could not be made or armed): nothing would end
        /// a window, so every connected connection stops counting now.
        mutating func paceTimerFailed() -> [Action] {
            paceTimerDue = nil
            var i = 0
            while i < unproven.count {
                if unproven[i].until != nil { forget(at: i) } else { i += 1 }
            }
            return openAllowed()
        }

        /// New connections for waiting exchanges while the pace allows, then the timer for
        /// the next window's end, when one is counting and none is armed.
        private mutating func openAllowed() -> [Action] {
            var actions: [Action] = []
            while let open = openForWaiting() { actions.append(open) }
            if paceTimerDue == nil, let next = unproven.lazy.compactMap(\.until).min() {
                paceTimerDue = next
                actions.append(.armPaceTimer(deadline: next))
            }
            return actions
        }

        private func unprovenIndex(_ connection: Connection) -> Int? {
            unproven.firstIndex { $0.connection === connection }
        }

        /// `unproven[i]` stops counting.
        private mutating func forget(at i: Int) {
            unproven.remove(at: i)
            unprovenCount -= 1
        }

        /// A new connection for the first waiting exchange, when one may be opened.
        private mutating func openForWaiting() -> Action? {
            guard canOpen, let next = nextWaiting() else { return nil }
            openCount += 1
            unprovenCount += 1
            return .open(for: next)
        }

        /// `connection` finished an exchange and can take another: it runs the next waiting
        /// exchange, or is parked (the second action then says nothing is under way on it).
        mutating func released(_ connection: Connection) -> (Action, Action?) {
            if let next = nextWaiting() { return (.run(next, on: connection), nil) }
            idle.append(connection)
            return (.park(connection), .exchangeEnded)
        }

        /// `connection` closed (one still unanswered, whether it failed, was abandoned with a
        /// cancelled exchange or handed over, frees its place in the pace too): a waiting
        /// exchange gets a new one (the first action; one, as one connection closed), and
        /// then nothing is under way on the closed one (``Action/exchangeEnded``).
        mutating func closed(_ connection: Connection) -> (Action?, Action) {
            openCount -= 1
            if let i = unprovenIndex(connection) { forget(at: i) }
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
            // Closing connections open nothing more: none counts, and no timer is wanted.
            unproven = []
            unprovenCount = 0
            paceTimerDue = nil
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
