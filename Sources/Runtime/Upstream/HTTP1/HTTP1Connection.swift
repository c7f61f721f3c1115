import CLibUV
import HTTPWire

/// One keep-alive HTTP/1.1 connection of an ``HTTP1Pool``: a libuv TCP handle, a
/// ``ResponseParser`` and a timer. It serves one exchange at a time and goes back to the
/// pool when a response ends cleanly on a connection both sides keep open.
///
/// While idle it keeps reading, so a peer that closes it (or sends anything unasked) is
/// noticed at once and the connection leaves the pool: no liveness check per request. A
/// request sent on a reused connection that the peer had closed meanwhile (nothing of a
/// response read) is sent once more on a new connection when its body is in memory.
/// Loop-confined.
///
/// Every decision is the pure ``StateMachine``'s; this class runs its actions
/// (``execute(_:input:)``). This file holds connecting, sending a request and ending an
/// exchange, and feeds the connection's one timer to the machine; `+Body` streams a request
/// body, `+Reading` reads the response.
final class HTTP1Connection {
    /// The pool the connection belongs to (which holds it).
    unowned let pool: HTTP1Pool
    /// The socket.
    let tcp: LoopTCP
    /// The one timer: connect, idle and total deadlines (``timerFired()``).
    let timer: LoopTimer
    /// The loop, held for its clock: read here rather than through the pool and its client,
    /// which would be a chain of retains and releases per reading.
    private let loop: EventLoop
    /// The current response's parser.
    let parser = ResponseParser()
    /// Whether no answer has arrived on the connection yet: its first proves to the pool's
    /// pace that the server accepted it (a flag, so that a reused connection's answers cost
    /// the pool nothing).
    var awaitingFirstAnswer = true
    /// The connection's decisions.
    var machine: StateMachine
    /// The exchange being served, if any.
    var exchange: HTTP1Exchange?

    /// The client's body stream while it is being sent.
    var streamBody: BodyStream?

    // Response delivery, paused while the handler refuses bytes.
    /// The body chunk the handler refused, delivered again on ``resumeDelivery()``.
    var refused: [UInt8]?
    /// Bytes read after the refused chunk, parsed after it.
    var stash: [UInt8] = []

    init(pool: HTTP1Pool) throws(RuntimeError) {
        self.pool = pool
        let loop = pool.client.loop
        self.loop = loop
        let configuration = pool.client.configuration
        machine = StateMachine(
            timeouts: StateMachine.Timeouts(
                connect: configuration.connectTimeout.milliseconds, idle: configuration.idleTimeout.milliseconds,
                total: configuration.totalTimeout?.milliseconds))
        tcp = try LoopTCP(loop: loop.uv, readBuffer: loop.readBuffer)
        do {
            timer = try LoopTimer(loop: loop.uv)
        } catch {
            tcp.close()
            throw error
        }
        // Set once: reading, writing and arming the timer cost no allocation per request.
        tcp.onRead = { [unowned self] n, bytes in received(n, bytes) }
        tcp.onWriteCompleted = { [unowned self] status in writeCompleted(status) }
        timer.onFire = { [unowned self] in timerFired() }
    }

    /// The loop's clock, in milliseconds.
    var now: UInt64 { loop.now }

    /// Whether the connection is serving an exchange (and so may read and write).
    var isBusy: Bool { machine.phase == .busy }

    /// Whether the current exchange may be sent again on a new connection.
    var replayable: Bool {
        guard let exchange else { return false }
        return !exchange.retried && exchange.replayable
    }

    // MARK: Connecting

    /// Resolves the origin, connects, then runs `exchange`.
    func connect(for exchange: HTTP1Exchange) {
        self.exchange = exchange
        exchange.connection = self
        execute(machine.connectStarted(now: now))
        let origin = pool.origin
        LoopResolver.resolve(origin.host, port: origin.port, on: pool.client.loop.uv) { [self] result in
            guard machine.phase == .connecting else { return }
            do throws(RuntimeError) {
                let address = try result.get()
                try address.withSockaddr { sa throws(RuntimeError) in
                    try tcp.connect(to: sa) { [self] status in
                        let live = self.exchange.map { !$0.isFinished } ?? false
                        // A failed or abandoned connect leaves the pace when the connection closes.
                        if status == 0 && live && machine.phase == .connecting { pool.connected(self) }
                        execute(machine.connected(status: status, exchangeLive: live))
                    }
                }
            } catch {
                connectError = error
                execute(machine.connectFailed(error.systemCode ?? UV_ECONNREFUSED.rawValue))
            }
        }
    }

    /// Why resolving or connecting failed, for the error the exchange gets.
    private var connectError: RuntimeError?
    /// The parser's detail of the answer's fault, for the error the exchange gets.
    var failureDetail: String?

    // MARK: Running an exchange

    /// Sends `exchange`'s request and reads its response.
    func run(_ exchange: HTTP1Exchange) {
        self.exchange = exchange
        exchange.connection = self
        parser.reset()
        if exchange.request.method == "HEAD" { parser.expectNoBody() }
        if exchange.request.upgrade { parser.expectUpgrade() }
        refused = nil
        stash = []
        streamBody = nil
        failureDetail = nil
        var streams = false
        if case .stream = exchange.request.body { streams = true }
        execute(machine.exchangeStarted(streamsBody: streams, now: now))
        do throws(RuntimeError) {
            switch exchange.request.body {
            case .bytes(let body) where body.count <= 16 * 1024:
                // Head and a small body in one write.
                var out = exchange.head.bytes
                out.append(contentsOf: body)
                try send(out)
                machine.requestWritten()
            case .bytes(let body):
                try send(exchange.head.bytes)
                try send(body)
                machine.requestWritten()
            case .none:
                try send(exchange.head.bytes)
                machine.requestWritten()
            case .stream(let stream, _):
                try send(exchange.head.bytes)
                streamBody = stream
                pumpBody()
            }
        } catch {
            inputEnded(error.systemCode ?? UV_ECONNRESET.rawValue, writing: true)
        }
    }

    /// Writes `bytes` (at once, or queued); throws when the socket refuses them.
    func send(_ bytes: [UInt8]) throws(RuntimeError) {
        var failure: RuntimeError?
        bytes.withUnsafeBytes { raw in
            do throws(RuntimeError) { try tcp.write(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    // MARK: Running the machine's actions

    /// Runs `actions` in order; `input` is the bytes a read brought (for ``StateMachine/Action/parseInput``).
    func execute(_ actions: StateMachine.Actions, input: UnsafeRawBufferPointer? = nil) {
        for action in actions {
            switch action {
            case .armTimer(let deadline):
                do throws(RuntimeError) {
                    try timer.arm(at: deadline)
                } catch {
                    // Only a closing timer refuses, and then the connection is closing too.
                }
            case .startReading:
                do throws(RuntimeError) {
                    try tcp.startReading()
                } catch {
                    execute(machine.readingFailed())
                    return
                }
            case .stopReading:
                tcp.stopReading()
            case .sendRequest:
                if let exchange { run(exchange) }
            case .pumpBody:
                pumpBody()
            case .parseInput:
                if let input { feed(input) }
            case .deliverHeld:
                deliverHeld()
            case .finishInput:
                switch parser.finishInput() {
                case .end: execute(machine.inputFinished(ended: true))
                case .error(let e):
                    failureDetail = e.detail
                    execute(machine.inputFinished(ended: false))
                default: execute(machine.inputFinished(ended: false))
                }
            case .endExchange(let reuse):
                let done = exchange
                exchange = nil
                done?.connection = nil
                if reuse {
                    timer.disarm()
                    pool.release(self)
                } else {
                    closeHandles()
                }
                done?.finish(nil)
            case .fail(let failure):
                let failed = exchange
                exchange = nil
                closeHandles()
                failed?.finish(error(for: failure))
            case .retry:
                guard let again = exchange else { continue }
                exchange = nil
                again.connection = nil
                closeHandles()
                pool.retry(again)
            case .close:
                exchange = nil
                closeHandles()
            case .handOver:
                // Run by `feed`, which has the headers and the early bytes.
                break
            }
        }
    }

    /// The error an exchange ends with for `failure`.
    private func error(for failure: StateMachine.Failure) -> RuntimeError {
        switch failure {
        case .connectFailed(let code):
            if let underlying = connectError {
                return .upstream(
                    .connectFailed, "could not connect to the upstream: \(underlying.message)", underlying: underlying)
            }
            let reason = String(cString: uv_strerror(code))
            return .upstream(.connectFailed, "could not connect to the upstream: \(reason)", underlying: .libuv(code, "connect"))
        case .connectTimedOut:
            return .upstream(.timeout, "connecting to the upstream timed out")
        case .answerTimedOut:
            return .upstream(.timeout, "the upstream did not answer in time")
        case .invalidResponse:
            return .upstream(.invalidResponse, "the upstream answer is not valid HTTP: \(failureDetail ?? "malformed")")
        case .connectionFailed(let code):
            let reason = String(cString: uv_strerror(code))
            return .upstream(.connectionReset, "the upstream connection failed: \(reason)", underlying: .libuv(code, "read"))
        case .closedEarly:
            return .upstream(.connectionReset, "the upstream connection failed\(failureDetail.map { ": \($0)" } ?? "")")
        case .requestBodyFailed:
            return .upstream(.upstreamFailed, "the client's request body ended early; the upstream exchange was abandoned")
        case .cannotRead:
            return .upstream(.upstreamFailed, "the upstream connection cannot be read")
        case .shutDown:
            return .upstream(.cancelled, "the upstream client shut down")
        }
    }

    // MARK: Ending

    /// The upstream answered `101 Switching Protocols`: the socket leaves this connection
    /// (which closes its timer and leaves the pool, never to be reused) for an
    /// ``UpstreamTunnel`` the exchange's handler owns.
    func handOver(_ done: HTTP1Exchange, _ headers: HTTPHeaders, early: UnsafeRawBufferPointer) {
        guard machine.switched() == [.handOver] else { return }
        exchange = nil
        done.connection = nil
        streamBody = nil
        handlesClosed = true
        timer.close()
        let tunnel = UpstreamTunnel(tcp: tcp, early: Array(early))
        pool.closed(self)
        done.switched(headers, tunnel)
    }

    /// The exchange was cancelled: the connection cannot be trusted for another.
    func abandon() {
        exchange = nil
        execute(machine.stop())
    }

    /// Fails the exchange and closes (client shutdown).
    func shutDown() {
        execute(machine.stop(failing: .shutDown))
    }

    /// Closes the socket and the timer; the pool forgets the connection. The machine has
    /// decided so already.
    private func closeHandles() {
        guard !handlesClosed else { return }
        handlesClosed = true
        streamBody = nil
        timer.close()
        tcp.close()
        pool.closed(self)
    }

    /// Whether ``closeHandles()`` ran.
    private var handlesClosed = false
}

/// The connection's one timer: connecting, the exchange's idle and total deadlines, and
/// the idle time in the pool, each armed and judged by the ``HTTP1Connection/StateMachine``.
extension HTTP1Connection {
    /// Closes the connection after the idle time in the pool.
    func startIdleTimer() {
        execute(machine.parked(now: now))
    }

    /// The deadline of the current state passed (or the exchange's idle deadline moved on).
    func timerFired() {
        execute(machine.timerFired(now: now))
    }
}
