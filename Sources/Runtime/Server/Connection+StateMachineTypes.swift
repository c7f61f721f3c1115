import HTTPWire

extension Connection.StateMachine {
    /// The settings the decisions depend on, in loop milliseconds and bytes.
    struct Configuration: Equatable {
        /// Time allowed for a request head.
        var headTimeout: UInt64
        /// Time a request body may go without a byte.
        var bodyIdleTimeout: UInt64
        /// Time an idle keep-alive connection stays open.
        var keepAliveTimeout: UInt64
        /// Time a closing connection reads and discards before it closes.
        var lingerTimeout: UInt64 = 2000
        /// Bytes queued for the client above which a streaming writer waits.
        var writeHighWater: Int
        /// Bytes of pipelined input held, unparsed, above which reading pauses.
        var pendingLimit: Int = 64 * 1024
        /// Whether buffered bodies are reserved from a shared ``BufferBudget``.
        var budgeted: Bool

        init(
            headTimeout: UInt64, bodyIdleTimeout: UInt64, keepAliveTimeout: UInt64, writeHighWater: Int,
            budgeted: Bool
        ) {
            self.headTimeout = headTimeout
            self.bodyIdleTimeout = bodyIdleTimeout
            self.keepAliveTimeout = keepAliveTimeout
            self.writeHighWater = writeHighWater
            self.budgeted = budgeted
        }

        init(_ c: HTTPServerConfiguration) {
            self.init(
                headTimeout: c.headTimeout.milliseconds, bodyIdleTimeout: c.bodyIdleTimeout.milliseconds,
                keepAliveTimeout: c.keepAliveTimeout.milliseconds, writeHighWater: c.writeHighWater,
                budgeted: c.bufferBudget != nil)
        }
    }

    /// What the connection's single timer is counting.
    enum TimerMode: Equatable {
        case none, head, bodyIdle, keepAlive, linger
    }

    /// Where the connection is in its life.
    enum Phase: Equatable {
        /// Not reading yet.
        case idle
        /// Reading requests and answering them.
        case open
        /// The last response is decided; the connection closes once the writes are flushed.
        case closingAfterFlush
        /// The sending side is shut down; input is read and discarded until the client
        /// closes or the linger time ends.
        case lingering
        /// The response switched protocols: the connection is spliced to an upstream one
        /// (``Splice``) and no longer speaks HTTP.
        case tunnel
        /// The handles are closing.
        case closed
    }

    /// How the response to the current request is going.
    enum ResponseState: Equatable {
        case none
        case streaming(chunked: Bool, bodyless: Bool)
        case done
    }

    /// One request and its response.
    struct Exchange: Equatable {
        let sequence: Int
        let isHead: Bool
        let isHTTP11: Bool
        let body: BodyPolicy
        var keepAlive: Bool
        /// Body bytes buffered so far.
        var buffered = 0
        /// Bytes of `buffered` taken from the shared budget.
        var reserved = 0
        /// Whether a body stream was handed to the responder and not failed.
        var hasStream = false
        var requestEnded = false
        var response = ResponseState.none
    }

    /// Why a body stream ends early.
    enum StreamFailure: Equatable {
        case wire(WireError)
        case clientDisconnected
    }

    /// The actions of one event, in order, held without an allocation.
    typealias Actions = ActionList

    /// What the I/O shell does, in order.
    enum Action: Equatable {
        /// Sends these bytes (after anything sent before).
        case write([UInt8])
        /// Sends the bytes the event was about (a streamed response's body chunk) as they are,
        /// without copying them into a ``write(_:)``.
        case writeInput
        /// Stops reading from the client.
        case pauseReading
        /// Starts (again) reading from the client.
        case resumeReading
        /// Parses the bytes just read (after any held pipelined input).
        case consumeInput
        /// Parses the held pipelined input, unless parsing is already under way.
        case drainPending
        /// (Re)starts the timer to fire at `deadline` (loop milliseconds).
        case armTimer(TimerMode, deadline: UInt64)
        /// Stops the timer.
        case cancelTimer
        /// Forgets the previous request's body, stream and client-gone handlers.
        case resetExchange
        /// Hands the request to the responder now, its body to follow in a stream.
        case deliverStreaming
        /// Hands the request to the responder with its whole buffered body.
        case deliverBuffered
        /// Appends the current body chunk to the request's stream.
        case appendToStream
        /// Keeps the current body chunk; when `reserve` is set, take that many bytes from
        /// the shared budget first (a refusal is the ``Connection/StateMachine/budgetRefused(_:now:)`` event).
        case bufferBody(reserve: Int?)
        /// Ends the request's body stream.
        case finishBodyStream
        /// Fails the request's body stream. Indirect: the failure (a ``WireError`` with its
        /// detail) is larger than every other payload, and only this rare action pays for it.
        indirect case failBodyStream(StreamFailure)
        /// Gives bytes back to the shared budget.
        case releaseBudget(Int)
        /// Sends the held response head at the end of this loop turn.
        case scheduleHeadFlush
        /// Resumes the writers waiting for the write queue to drain.
        case resumeWriters
        /// Fails the waiting writers (the client is gone) and forgets the writable handlers.
        case failWriters
        /// Runs the client-gone handlers of the current exchange.
        case notifyGone
        /// Shuts down the sending side (a failure is the ``Connection/StateMachine/shutdownFailed()`` event).
        case shutdownWrite
        /// Closes the handles.
        case close
    }
}
