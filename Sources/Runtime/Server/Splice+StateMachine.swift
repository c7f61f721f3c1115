extension Splice {
    /// One of the two connections a splice joins.
    enum Side: Equatable, CaseIterable {
        /// The client's connection to the gateway.
        case client
        /// The gateway's connection to the upstream.
        case upstream

        /// The side bytes read here are written to.
        var other: Side { self == .client ? .upstream : .client }
    }

    /// Why a splice ended.
    enum Outcome: Equatable {
        /// Both sides ended their output and each end was passed on.
        case finished
        /// No byte moved either way for the idle timeout.
        case idleTimeout
        /// A read, a write or a shutdown on this side failed, or it was closed from outside
        /// (the server stopping).
        case failed(Side)
    }

    /// The decisions of a splice between two byte streams after `101 Switching Protocols`,
    /// as a value: forwarding, backpressure, half-close and the idle timeout. It reads no
    /// clock (time comes in as loop milliseconds) and touches no socket; each event returns
    /// the actions the shell runs, in order.
    ///
    /// - Bytes read on one side are written to the other. When the other side's write queue
    ///   holds more than `highWater` bytes, reading stops on this side until the queue is at
    ///   or below half of it.
    /// - The end of one side's input (EOF) shuts down writing on the other side, after what is
    ///   queued there; the splice closes once both directions have ended that way.
    /// - A failed read, write or shutdown closes both sides at once.
    /// - With no byte read or written for `idleTimeout`, both sides close.
    struct StateMachine {
        /// The settings the decisions depend on.
        struct Configuration: Equatable {
            /// Milliseconds without a byte moving after which the splice closes.
            var idleTimeout: UInt64
            /// Bytes queued for one side above which reading from the other stops.
            var highWater: Int
        }

        /// The actions of one event, in order. An array: a splice's events are one per read
        /// of up to 64 KiB, where an allocation does not count, and most return one action.
        typealias Actions = [Action]

        /// What the shell does, in order.
        enum Action: Equatable {
            /// Writes the bytes just read (or handed over at the start) to this side.
            case forward(to: Side)
            /// Stops reading from this side.
            case pauseReading(Side)
            /// Starts (again) reading from this side.
            case resumeReading(Side)
            /// Shuts down writing to this side once its queued writes are out.
            case shutdownWrite(Side)
            /// (Re)starts the idle timer to fire at `deadline` (loop milliseconds).
            case armTimer(deadline: UInt64)
            /// Closes both sides and the timer; the splice is over.
            case close(Outcome)
        }

        /// One direction's state, named after the side it writes to.
        struct Direction: Equatable {
            /// Whether reading from the source side is paused for backpressure.
            var sourcePaused = false
            /// Whether the source side's input ended.
            var sourceEnded = false
            /// Writes to this side not completed yet.
            var writesInFlight = 0
            /// Whether writing to this side was shut down.
            var shutdownSent = false
            /// Whether that shutdown completed.
            var shutdownDone = false
        }

        let configuration: Configuration
        private(set) var toClient = Direction()
        private(set) var toUpstream = Direction()
        private(set) var started = false
        private(set) var outcome: Outcome?
        private var lastActivity: UInt64 = 0

        init(configuration: Configuration) {
            self.configuration = configuration
        }

        /// Whether the splice is over.
        var isClosed: Bool { outcome != nil }

        /// The direction that writes to `side`.
        func direction(to side: Side) -> Direction { side == .client ? toClient : toUpstream }

        private mutating func set(_ d: Direction, to side: Side) {
            if side == .client { toClient = d } else { toUpstream = d }
        }

        // MARK: Events

        /// The splice begins: read both sides, start the idle timer.
        mutating func start(now: UInt64) -> Actions {
            guard !started, !isClosed else { return [] }
            started = true
            lastActivity = now
            var actions: Actions = [.resumeReading(.client)]
            actions.append(.resumeReading(.upstream))
            actions.append(.armTimer(deadline: now + configuration.idleTimeout))
            return actions
        }

        /// Bytes were read from `side` (or handed over from the HTTP exchange before it).
        mutating func received(from side: Side, now: UInt64) -> Actions {
            guard !isClosed, !direction(to: side.other).sourceEnded else { return [] }
            lastActivity = now
            return [.forward(to: side.other)]
        }

        /// A write to `side` did not leave at once: `queuedBytes` wait in its queue and a
        /// completion follows.
        mutating func writeQueued(to side: Side, queuedBytes: Int) -> Actions {
            guard !isClosed else { return [] }
            var actions = Actions()
            var d = direction(to: side)
            d.writesInFlight += 1
            if queuedBytes > configuration.highWater && !d.sourcePaused && !d.sourceEnded {
                d.sourcePaused = true
                actions.append(.pauseReading(side.other))
            }
            set(d, to: side)
            return actions
        }

        /// A queued write to `side` completed; `queuedBytes` are still in its queue.
        mutating func writeCompleted(to side: Side, failed: Bool, queuedBytes: Int, now: UInt64) -> Actions {
            guard !isClosed else { return [] }
            if failed { return close(.failed(side)) }
            lastActivity = now
            var actions = Actions()
            var d = direction(to: side)
            d.writesInFlight = max(0, d.writesInFlight - 1)
            if d.sourcePaused && queuedBytes <= configuration.highWater / 2 {
                d.sourcePaused = false
                if !d.sourceEnded { actions.append(.resumeReading(side.other)) }
            }
            set(d, to: side)
            return actions
        }

        /// A write to `side` failed at once.
        mutating func writeFailed(to side: Side) -> Actions {
            guard !isClosed else { return [] }
            return close(.failed(side))
        }

        /// `side`'s input ended (EOF): its peer has nothing more to send. Writing to the
        /// other side is shut down after what is queued there.
        mutating func readEnded(from side: Side, now: UInt64) -> Actions {
            guard !isClosed, !direction(to: side.other).sourceEnded else { return [] }
            lastActivity = now
            var d = direction(to: side.other)
            d.sourceEnded = true
            d.sourcePaused = false
            d.shutdownSent = true
            set(d, to: side.other)
            return [.shutdownWrite(side.other)]
        }

        /// Reading from `side` failed (a reset, or the socket cannot be read).
        mutating func readFailed(from side: Side) -> Actions {
            guard !isClosed else { return [] }
            return close(.failed(side))
        }

        /// The shutdown of writing to `side` completed (or failed).
        mutating func shutdownCompleted(_ side: Side, failed: Bool) -> Actions {
            guard !isClosed else { return [] }
            if failed { return close(.failed(side)) }
            var d = direction(to: side)
            d.shutdownDone = true
            set(d, to: side)
            if toClient.shutdownDone && toUpstream.shutdownDone { return close(.finished) }
            return []
        }

        /// `side` was closed from outside (the server stopping, the client connection aborted).
        mutating func closedOutside(_ side: Side) -> Actions {
            guard !isClosed else { return [] }
            return close(.failed(side))
        }

        /// The idle timer fired.
        mutating func timerFired(now: UInt64) -> Actions {
            guard !isClosed else { return [] }
            let deadline = lastActivity + configuration.idleTimeout
            if now >= deadline { return close(.idleTimeout) }
            return [.armTimer(deadline: deadline)]
        }

        private mutating func close(_ why: Outcome) -> Actions {
            outcome = why
            return [.close(why)]
        }
    }
}

extension Splice.Outcome {
    /// A stable name for logs: `finished`, `idle-timeout`, `client-failed`, `upstream-failed`.
    var name: String {
        switch self {
        case .finished: "finished"
        case .idleTimeout: "idle-timeout"
        case .failed(.client): "client-failed"
        case .failed(.upstream): "upstream-failed"
        }
    }
}
