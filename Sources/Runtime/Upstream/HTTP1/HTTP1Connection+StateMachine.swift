import CLibUV

extension HTTP1Connection {
    /// The decisions of one upstream connection, as a value: when it is reused, when a
    /// request is sent again on a new connection, when it times out, when delivery pauses
    /// and what the end of the input means. It reads no clock (time comes in as loop
    /// milliseconds) and touches no socket, parser or pool: each event returns the actions
    /// ``HTTP1Connection`` runs, in order.
    ///
    /// The shell keeps what the machine does not need to decide: the exchange, the bytes of
    /// a refused body chunk and those read after it, the parser. Events that depend on them
    /// take the facts as arguments (whether the parser started a response, whether the
    /// request can be sent again).
    struct StateMachine {
        /// Where the connection is in its life.
        enum Phase: Equatable { case connecting, busy, idle, closed }

        /// Why an exchange fails; the shell turns it into a ``RuntimeError``. Plain values
        /// only, so that actions are copied without reference counting.
        enum Failure: Equatable {
            /// The connection could not be made (a libuv code).
            case connectFailed(Int32)
            /// Connecting took longer than the connect timeout.
            case connectTimedOut
            /// No byte moved for the idle timeout, or the total timeout passed.
            case answerTimedOut
            /// The answer is not valid HTTP (the shell has the parser's detail).
            case invalidResponse
            /// The connection failed or was reset (a libuv code), mid-exchange.
            case connectionFailed(Int32)
            /// The upstream closed before the answer was complete (the shell has the parser's
            /// detail, if it gave one).
            case closedEarly
            /// The client's request body ended early.
            case requestBodyFailed
            /// Reading could not start.
            case cannotRead
            /// The client shuts down.
            case shutDown
        }

        /// What the shell does, in order. Once the connection is closed, no I/O starts.
        enum Action: Equatable {
            /// (Re)arms the one timer for `deadline` (loop milliseconds).
            case armTimer(deadline: UInt64)
            /// Starts reading the socket.
            case startReading
            /// Stops reading the socket (delivery paused).
            case stopReading
            /// Sends the exchange's request (the connection is made).
            case sendRequest
            /// Sends more of the streamed request body.
            case pumpBody
            /// Parses the bytes just read.
            case parseInput
            /// Delivers the refused body chunk again, then parses the bytes held after it.
            case deliverHeld
            /// Asks the parser whether the input's end completes the response.
            case finishInput
            /// The response ended: back to the pool when `reuse`, else closed; then the
            /// exchange succeeds.
            case endExchange(reuse: Bool)
            /// Closes the connection and fails the exchange, if any.
            case fail(Failure)
            /// Closes the connection and sends the exchange again on a new one.
            case retry
            /// Closes the connection (no exchange to finish).
            case close
            /// The upstream switched protocols: the socket leaves for a tunnel.
            case handOver
        }

        /// The actions of one event, in order: at most two, held inline so that returning
        /// and running them touches no heap (an array literal would allocate per event).
        struct Actions: Sequence, Equatable {
            private var first: Action?
            private var second: Action?

            /// No action.
            init() {}
            /// One action.
            init(_ a: Action) { first = a }
            /// Two actions, in order.
            init(_ a: Action, _ b: Action) {
                first = a
                second = b
            }

            /// Whether the actions are `list`, in order (tests and guards read them as an array).
            static func == (lhs: Actions, rhs: [Action]) -> Bool { Array(lhs) == rhs }

            func makeIterator() -> Iterator { Iterator(actions: self) }

            /// Reads the actions in order.
            struct Iterator: IteratorProtocol {
                var actions: Actions
                mutating func next() -> Action? {
                    if let a = actions.first {
                        actions.first = nil
                        return a
                    }
                    if let b = actions.second {
                        actions.second = nil
                        return b
                    }
                    return nil
                }
            }
        }

        /// The client's timeouts, in milliseconds of the loop's clock.
        struct Timeouts: Equatable {
            /// Connecting (``UpstreamClientConfiguration/connectTimeout``).
            let connect: UInt64
            /// Without a byte either way, and in the pool (``UpstreamClientConfiguration/idleTimeout``).
            let idle: UInt64
            /// The whole exchange, if bounded (``UpstreamClientConfiguration/totalTimeout``).
            let total: UInt64?
        }

        let timeouts: Timeouts
        private(set) var phase = Phase.connecting
        /// Whether an exchange completed on this connection before the current one.
        private(set) var reused = false
        /// Whether the whole request (head and body) was handed to the socket.
        private(set) var requestSent = false
        /// Whether a streamed request body is still being sent.
        private(set) var sendingBody = false
        /// Whether the handler refused a body chunk, which the shell holds.
        private(set) var paused = false
        /// Whether bytes read after the refused chunk are held, unparsed.
        private(set) var holdsInput = false
        /// Whether reading stopped for a refused chunk and has not started again.
        private(set) var readingStopped = false
        /// How the input ended while delivery was paused (a libuv code), acted on after it.
        private(set) var endOfInput: Int32?
        /// When bytes last moved either way.
        private(set) var lastActivity: UInt64 = 0
        /// When the exchange must have ended (`.max`: no total timeout).
        private(set) var totalDeadline: UInt64 = .max

        init(timeouts: Timeouts) {
            self.timeouts = timeouts
        }

        // MARK: Connecting

        /// Connecting starts (the name is being resolved).
        mutating func connectStarted(now: UInt64) -> Actions {
            Actions(.armTimer(deadline: Self.deadline(after: timeouts.connect, now: now)))
        }

        /// Resolving or connecting failed before a status came back.
        mutating func connectFailed(_ code: Int32) -> Actions {
            guard phase == .connecting else { return Actions() }
            return fail(.connectFailed(code))
        }

        /// The connection is made (`status` 0) or refused; `exchangeLive` false: the exchange
        /// was cancelled meanwhile.
        mutating func connected(status: Int32, exchangeLive: Bool) -> Actions {
            guard phase == .connecting else { return Actions() }
            if status < 0 { return fail(.connectFailed(status)) }
            guard exchangeLive else {
                phase = .closed
                return Actions(.startReading, .close)
            }
            return Actions(.startReading, .sendRequest)
        }

        // MARK: An exchange

        /// An exchange starts on this connection (just connected, or idle); `streamsBody`: its
        /// body comes from a stream. On a closed or busy connection it changes nothing: once
        /// closed, no I/O starts.
        mutating func exchangeStarted(streamsBody: Bool, now: UInt64) -> Actions {
            guard phase == .connecting || phase == .idle else { return Actions() }
            phase = .busy
            paused = false
            holdsInput = false
            readingStopped = false
            endOfInput = nil
            requestSent = false
            sendingBody = streamsBody
            lastActivity = now
            totalDeadline = timeouts.total.map { now + $0 } ?? .max
            return Actions(exchangeTimer(now: now))
        }

        /// The whole request is handed to the socket (a streamed body's end included).
        mutating func requestWritten() {
            requestSent = true
            sendingBody = false
        }

        /// Body bytes moved towards the upstream.
        mutating func bodyProgressed(now: UInt64) {
            lastActivity = now
        }

        /// The client's body stream failed.
        mutating func bodyFailed() -> Actions {
            guard phase == .busy else { return Actions() }
            return fail(.requestBodyFailed)
        }

        /// A queued write completed (`status` < 0: it failed).
        mutating func writeCompleted(status: Int32, parserStarted: Bool, replayable: Bool, now: UInt64) -> Actions {
            guard phase == .busy else { return Actions() }
            if status < 0 {
                // Cancelled writes belong to a connection closing anyway.
                if status == UV_ECANCELED.rawValue { return Actions() }
                return inputEnded(code: status, writing: true, parserStarted: parserStarted, replayable: replayable)
            }
            lastActivity = now
            return sendingBody ? Actions(.pumpBody) : Actions()
        }

        // MARK: Reading

        /// Bytes arrived.
        mutating func bytesRead(now: UInt64) -> Actions {
            switch phase {
            case .busy:
                lastActivity = now
                return Actions(.parseInput)
            case .idle:
                // The peer closed a kept-alive connection, or sent something unasked.
                phase = .closed
                return Actions(.close)
            case .connecting, .closed:
                return Actions()
            }
        }

        /// The response ended; `keepAlive`: its framing and fields keep the connection, and
        /// nothing followed it in the input.
        ///
        /// A response that ends while the request body is still going out closes the
        /// connection: an upstream that answered early may never read the rest, and a body
        /// left to drain with nobody waiting for it would hold the connection, its descriptor
        /// and its place in the pool for as long as the upstream does not read. So does one
        /// whose peer closed while delivery was paused. A connection reused after a paused
        /// delivery reads again, once the exchange has ended: the next exchange's answer, or
        /// the peer closing it while idle, must be heard, and a connection that cannot read
        /// any more fails the next exchange, not the one whose answer was whole.
        mutating func responseEnded(keepAlive: Bool) -> Actions {
            guard phase == .busy else { return Actions() }
            let reuse = keepAlive && requestSent && !holdsInput && endOfInput == nil
            guard reuse else {
                phase = .closed
                return Actions(.endExchange(reuse: false))
            }
            reused = true
            phase = .idle
            // Nothing is held for a delivery any more: the idle connection is not paused.
            paused = false
            guard readingStopped else { return Actions(.endExchange(reuse: true)) }
            readingStopped = false
            return Actions(.endExchange(reuse: true), .startReading)
        }

        /// The answer is not valid HTTP.
        mutating func responseInvalid() -> Actions {
            guard phase == .busy else { return Actions() }
            return fail(.invalidResponse)
        }

        /// The upstream switched protocols.
        mutating func switched() -> Actions {
            guard phase == .busy else { return Actions() }
            phase = .closed
            return Actions(.handOver)
        }

        /// The handler refused a body chunk; `holdsInput`: bytes read after it are held too.
        mutating func deliveryRefused(holdsInput: Bool) -> Actions {
            guard phase == .busy else { return Actions() }
            paused = true
            self.holdsInput = holdsInput
            guard !readingStopped else { return Actions() }
            readingStopped = true
            return Actions(.stopReading)
        }

        /// The handler takes bytes again.
        mutating func resumed(now: UInt64) -> Actions {
            guard phase == .busy, paused else { return Actions() }
            lastActivity = now
            return Actions(.deliverHeld)
        }

        /// The refused chunk was taken; the held bytes are parsed next.
        mutating func heldChunkTaken() {
            paused = false
            holdsInput = false
        }

        /// The held bytes were parsed without a new refusal: read on, or act on the end of
        /// the input that came meanwhile.
        mutating func heldInputParsed(parserStarted: Bool, replayable: Bool) -> Actions {
            guard phase == .busy, !paused else { return Actions() }
            guard let code = endOfInput else {
                readingStopped = false
                return Actions(.startReading)
            }
            endOfInput = nil
            return inputEnded(code: code, writing: false, parserStarted: parserStarted, replayable: replayable)
        }

        /// The peer closed the connection or it failed (`code`: `UV_EOF` or a libuv error),
        /// while reading or (`writing`) writing. `parserStarted`: a response had begun;
        /// `replayable`: the request can be sent again (its body is in memory and it was not
        /// sent again already).
        mutating func inputEnded(code: Int32, writing: Bool, parserStarted: Bool, replayable: Bool) -> Actions {
            guard phase == .busy else { return Actions() }
            if paused {
                // Deliver what was read first.
                endOfInput = code
                return Actions()
            }
            if !parserStarted && reused && replayable {
                // A kept-alive connection the peer closed just before the request: send again.
                phase = .closed
                return Actions(.retry)
            }
            if code == UV_EOF.rawValue && !writing { return Actions(.finishInput) }
            return fail(.connectionFailed(code))
        }

        /// The parser's verdict on the end of the input: `ended` when it completed the
        /// response (read to the close).
        mutating func inputFinished(ended: Bool) -> Actions {
            guard phase == .busy else { return Actions() }
            if ended { return responseEnded(keepAlive: false) }
            return fail(.closedEarly)
        }

        /// Reading could not start.
        mutating func readingFailed() -> Actions {
            guard phase != .closed else { return Actions() }
            return fail(.cannotRead)
        }

        // MARK: Pool and timer

        /// The connection went back to the pool with nothing to run.
        mutating func parked(now: UInt64) -> Actions {
            guard phase == .idle else { return Actions() }
            return Actions(.armTimer(deadline: Self.deadline(after: timeouts.idle, now: now)))
        }

        /// The timer fired.
        mutating func timerFired(now: UInt64) -> Actions {
            switch phase {
            case .connecting:
                return fail(.connectTimedOut)
            case .idle:
                phase = .closed
                return Actions(.close)
            case .busy:
                if now >= totalDeadline { return fail(.answerTimedOut) }
                // Paused delivery waits on the client, not the upstream: not idle.
                if paused {
                    lastActivity = now
                } else if now >= lastActivity + timeouts.idle {
                    return fail(.answerTimedOut)
                }
                return Actions(exchangeTimer(now: now))
            case .closed:
                return Actions()
            }
        }

        /// The exchange was cancelled, or the client shuts down (`reason` given).
        mutating func stop(failing reason: Failure? = nil) -> Actions {
            guard phase != .closed else { return Actions() }
            if let reason { return fail(reason) }
            phase = .closed
            return Actions(.close)
        }

        // MARK: Helpers

        private mutating func fail(_ failure: Failure) -> Actions {
            phase = .closed
            return Actions(.fail(failure))
        }

        /// The timer for the exchange's nearer deadline: idle or total.
        private func exchangeTimer(now: UInt64) -> Action {
            let at = min(lastActivity + timeouts.idle, totalDeadline)
            return .armTimer(deadline: max(now + 1, at))
        }

        /// `ms` from `now`, at least 1.
        private static func deadline(after ms: UInt64, now: UInt64) -> UInt64 {
            now + max(1, ms)
        }
    }
}
