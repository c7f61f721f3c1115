import HTTPWire

extension Connection {
    /// The decisions of one connection, as a value: keep-alive, pipelining, timeouts,
    /// lingering close, backpressure and the budget reservation. It reads no clock (time
    /// comes in as loop milliseconds) and touches no socket: each event returns the
    /// actions the I/O shell runs, in order.
    ///
    /// Every write is counted as in flight from the moment it is returned until the shell
    /// reports ``writeCompleted(failed:queuedBytes:now:)`` for it, also when the bytes left
    /// at once; the shell reports those after the actions that came with the write.
    ///
    /// Requests are read one at a time. After a request's body ends, parsing stops until
    /// its response is complete, so pipelined requests are answered in order; bytes that
    /// arrive meanwhile are held by the shell and counted here (``pendingBytes``).
    struct StateMachine {
        let configuration: Configuration
        var phase = Phase.idle
        /// The request being read or answered; kept after an error response until the close.
        var exchange: Exchange?
        /// The number of the latest request (1 for the first).
        var sequence = 0
        var timer = TimerMode.none
        var readingPaused = true
        var writesInFlight = 0
        /// Unparsed input the shell holds.
        var pendingBytes = 0
        /// Whether the body stream's consumer is behind (reading paused for it).
        var consumerBehind = false
        /// A streamed response's head, held until its first body bytes or the end of the loop turn.
        var heldHead: [UInt8]?
        private var lastActivity: UInt64 = 0
        /// Whether the server is shutting down: no new keep-alive.
        var serverDraining = false

        init(configuration: Configuration) {
            self.configuration = configuration
        }

        /// The interim response to `Expect: 100-continue`, made once.
        static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

        var isClosed: Bool { phase == .closed }

        /// Whether the shell may feed the parser: the connection is open and no request
        /// waits for its response.
        var acceptsRequestBytes: Bool {
            phase == .open && !(exchange?.requestEnded ?? false)
        }

        /// Whether no request is in progress and no input is held (used by graceful shutdown).
        var hasNoExchange: Bool { exchange == nil && pendingBytes == 0 }

        // MARK: Reading

        /// The connection is accepted; `admitted` false answers 503 and closes.
        mutating func start(admitted: Bool, now: UInt64) -> Actions {
            guard phase == .idle else { return [] }
            phase = .open
            lastActivity = now
            var actions = Actions()
            guard admitted else {
                fail(WireError(.overloaded, status: 503, "the server is at its connection limit"), now: now, &actions)
                return actions
            }
            setTimer(.head, now: now, &actions)
            resumeReading(now: now, &actions)
            return actions
        }

        /// Bytes arrived from the client.
        mutating func bytesReceived(now: UInt64) -> Actions {
            // While lingering (or closing) input is read and discarded.
            guard phase == .open else { return [] }
            lastActivity = now
            var actions = Actions()
            if timer == .keepAlive { setTimer(.head, now: now, &actions) }
            actions.append(.consumeInput)
            return actions
        }

        /// The shell now holds `count` unparsed bytes after a read.
        mutating func inputHeld(_ count: Int) -> Actions {
            pendingBytes = count
            var actions = Actions()
            if count > configuration.pendingLimit { pauseReading(&actions) }
            return actions
        }

        /// The shell parsed what it could of its held input; `count` bytes are left.
        mutating func pendingDrained(_ count: Int, now: UInt64) -> Actions {
            pendingBytes = count
            var actions = Actions()
            if count <= configuration.pendingLimit && !consumerBehind { resumeReading(now: now, &actions) }
            return actions
        }

        /// The parser read a request head; `body` is how the responder wants its body.
        mutating func receivedHead(_ head: RequestHead, body: BodyPolicy, now: UInt64) -> Actions {
            guard acceptsRequestBytes else { return [] }
            sequence += 1
            var ex = Exchange(
                sequence: sequence, isHead: head.isHead, isHTTP11: head.major == 1 && head.minor == 1, body: body,
                keepAlive: head.keepAlive && !serverDraining)
            var actions = Actions(.resetExchange)
            consumerBehind = false
            if case .buffer(let max) = body, case .length(let n) = head.framing, n > UInt64(max) {
                exchange = ex
                fail(WireError(.bodyTooLarge, status: 413, "the request body exceeds \(max) bytes"), now: now, &actions)
                return actions
            }
            let streams = body.streams(head.framing)
            if streams { ex.hasStream = true }
            exchange = ex
            if head.expectsContinue { write(Self.continueResponse, &actions) }
            setTimer(head.framing == .none ? .none : .bodyIdle, now: now, &actions)
            if streams { actions.append(.deliverStreaming) }
            return actions
        }

        /// The parser read `count` bytes of the current request's body.
        mutating func receivedBody(_ count: Int, now: UInt64) -> Actions {
            guard acceptsRequestBytes, var ex = exchange else { return [] }
            if ex.hasStream { return Actions(.appendToStream) }
            var actions = Actions()
            switch ex.body {
            case .buffer(let max) where ex.buffered + count > max:
                fail(WireError(.bodyTooLarge, status: 413, "the request body exceeds \(max) bytes"), now: now, &actions)
                return actions
            case .bufferUpTo(let max) where ex.buffered + count > max:
                // Past the bound: the request goes on as a stream that starts with what was
                // read, and the budget held for that gets released (the stream bounds itself).
                if ex.reserved > 0 { actions.append(.releaseBudget(ex.reserved)) }
                ex.reserved = 0
                ex.hasStream = true
                exchange = ex
                actions.append(.deliverStreaming)
                actions.append(.appendToStream)
                return actions
            case .buffer, .bufferUpTo, .stream:
                break
            }
            ex.buffered += count
            if configuration.budgeted { ex.reserved += count }
            exchange = ex
            return Actions(.bufferBody(reserve: configuration.budgeted ? count : nil))
        }

        /// The shared budget refused the `count` bytes of a ``Action/bufferBody(reserve:)``.
        mutating func budgetRefused(_ count: Int, now: UInt64) -> Actions {
            guard var ex = exchange else { return [] }
            ex.reserved -= count
            ex.buffered -= count
            exchange = ex
            var actions = Actions()
            fail(
                WireError(.overloaded, status: 503, "the server holds too many request bodies in memory; retry later"),
                now: now, &actions)
            return actions
        }

        /// The body stream holds more than its high-water mark.
        mutating func streamFull() -> Actions {
            consumerBehind = true
            var actions = Actions()
            pauseReading(&actions)
            return actions
        }

        /// The body stream's consumer took what it held.
        mutating func streamDrained(now: UInt64) -> Actions {
            consumerBehind = false
            var actions = Actions()
            if pendingBytes <= configuration.pendingLimit { resumeReading(now: now, &actions) }
            return actions
        }

        /// The parser reached the end of the current request.
        mutating func receivedEnd(now: UInt64) -> Actions {
            guard acceptsRequestBytes, var ex = exchange else { return [] }
            ex.requestEnded = true
            var actions = Actions()
            setTimer(.none, now: now, &actions)
            if ex.hasStream {
                actions.append(.finishBodyStream)
            } else {
                actions.append(.deliverBuffered)
            }
            exchange = ex
            return actions
        }

        /// The parser refused the input.
        mutating func parseFailed(_ error: WireError, now: UInt64) -> Actions {
            var actions = Actions()
            fail(error, now: now, &actions)
            return actions
        }

        // MARK: Timer and peer

        /// The timer fired.
        mutating func timerFired(now: UInt64) -> Actions {
            var actions = Actions()
            switch timer {
            case .none:
                break
            case .head:
                fail(WireError(.headTimeout, status: 408, "the request head did not arrive in time"), now: now, &actions)
            case .bodyIdle:
                let limit = configuration.bodyIdleTimeout
                if readingPaused {
                    // Reading stopped because the consumer is behind: the client is not idle.
                    lastActivity = now
                    actions.append(.armTimer(.bodyIdle, deadline: now + limit))
                } else if now - min(now, lastActivity) < limit {
                    actions.append(.armTimer(.bodyIdle, deadline: lastActivity + limit))
                } else {
                    fail(WireError(.bodyTimeout, status: 408, "the request body stalled"), now: now, &actions)
                }
            case .keepAlive, .linger:
                close(&actions)
            }
            return actions
        }

        /// The client closed its side or the read failed: a client that half-closes has
        /// nothing more to say.
        mutating func peerClosed() -> Actions {
            var actions = Actions()
            close(&actions)
            return actions
        }

        /// Closes at once, dropping unsent bytes (the client went away, a write or a libuv
        /// call failed, the response cannot be completed, the server is stopping).
        mutating func abort() -> Actions {
            var actions = Actions()
            close(&actions)
            return actions
        }

        /// Shutting down the sending side failed: close at once.
        mutating func shutdownFailed() -> Actions { abort() }

        // MARK: Helpers

        mutating func setTimer(_ mode: TimerMode, now: UInt64, _ actions: inout Actions) {
            guard phase != .closed, mode != timer else { return }
            timer = mode
            let c = configuration
            switch mode {
            case .none: actions.append(.cancelTimer)
            case .head: actions.append(.armTimer(.head, deadline: now + c.headTimeout))
            case .bodyIdle:
                lastActivity = now
                actions.append(.armTimer(.bodyIdle, deadline: now + c.bodyIdleTimeout))
            case .keepAlive: actions.append(.armTimer(.keepAlive, deadline: now + c.keepAliveTimeout))
            case .linger: actions.append(.armTimer(.linger, deadline: now + c.lingerTimeout))
            }
        }

        mutating func pauseReading(_ actions: inout Actions) {
            guard !readingPaused, phase != .closed else { return }
            readingPaused = true
            actions.append(.pauseReading)
        }

        mutating func resumeReading(now: UInt64, _ actions: inout Actions) {
            guard readingPaused, phase != .closed, phase != .idle else { return }
            readingPaused = false
            lastActivity = now
            actions.append(.resumeReading)
        }

        /// Closes the handles; what waits on the connection learns the client is gone.
        mutating func close(_ actions: inout Actions) {
            guard phase != .closed else { return }
            phase = .closed
            if var ex = exchange {
                if ex.reserved > 0 { actions.append(.releaseBudget(ex.reserved)) }
                ex.reserved = 0
                if ex.hasStream { actions.append(.failBodyStream(.clientDisconnected)) }
                ex.hasStream = false
                if ex.response != .done { actions.append(.notifyGone) }
                exchange = ex
            }
            actions.append(.failWriters)
            actions.append(.close)
            timer = .none
        }
    }
}

extension BodyPolicy {
    /// Whether a body framed as `framing` is streamed from its head on: always for
    /// ``stream``; for ``bufferUpTo(_:)`` when its announced length is already past the bound.
    func streams(_ framing: BodyFraming) -> Bool {
        switch (self, framing) {
        case (.stream, _): true
        case (.bufferUpTo(let max), .length(let n)): n > UInt64(max)
        case (.buffer, _), (.bufferUpTo, _): false
        }
    }
}
