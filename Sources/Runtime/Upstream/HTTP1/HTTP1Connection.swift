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
/// This file holds the connection's state, connecting, sending a request and ending an
/// exchange; `+Body` streams a request body, `+Reading` reads the response, `+Timers`
/// keeps its deadlines. The state below is shared by those extensions and no one else.
final class HTTP1Connection {
    /// Where the connection is in its life.
    enum State { case connecting, busy, idle, closed }

    /// The pool the connection belongs to (which holds it).
    unowned let pool: HTTP1Pool
    /// The socket.
    let tcp: LoopTCP
    /// The one timer: connect, idle and total deadlines (``timerFired()``).
    let timer: LoopTimer
    /// The loop, held for its clock (read through the pool and its client, each reading
    /// was a chain of retains and releases).
    private let loop: EventLoop
    /// The current response's parser.
    let parser = ResponseParser()
    /// Where the connection is in its life.
    var state = State.connecting
    /// The exchange being served, if any.
    var exchange: HTTP1Exchange?
    /// Whether an exchange completed on this connection before the current one.
    var reused = false

    // Request body.
    /// The client's body stream while it is being sent.
    var streamBody: BodyStream?
    /// Whether the whole request (head and body) was handed to the socket.
    var requestSent = false

    // Response delivery, paused while the handler refuses bytes.
    /// The body chunk the handler refused, delivered again on ``resumeDelivery()``.
    var refused: [UInt8]?
    /// Bytes read after the refused chunk, parsed after it.
    var stash: [UInt8] = []
    /// How the input ended while delivery was paused (a libuv code), acted on after it.
    var endOfInput: Int?

    // Timing, in libuv's millisecond clock.
    /// When bytes last moved either way.
    var lastActivity: UInt64 = 0
    /// When the exchange must have ended (`.max`: no total timeout).
    var totalDeadline: UInt64 = .max

    init(pool: HTTP1Pool) throws(RuntimeError) {
        self.pool = pool
        let loop = pool.client.loop
        self.loop = loop
        let configuration = pool.client.configuration
        timeouts = Timeouts(
            connect: configuration.connectTimeout.milliseconds, idle: configuration.idleTimeout.milliseconds,
            total: configuration.totalTimeout?.milliseconds)
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

    /// The client's timeouts in milliseconds, converted once (the client's configuration
    /// does not change).
    let timeouts: Timeouts

    /// The client's timeouts, in milliseconds of the loop's clock.
    struct Timeouts {
        /// Connecting (``UpstreamClientConfiguration/connectTimeout``).
        let connect: UInt64
        /// Without a byte either way, and in the pool (``UpstreamClientConfiguration/idleTimeout``).
        let idle: UInt64
        /// The whole exchange, if bounded (``UpstreamClientConfiguration/totalTimeout``).
        let total: UInt64?
    }
    /// The loop's clock, in milliseconds.
    var now: UInt64 { loop.now }

    // MARK: Connecting

    /// Resolves the origin, connects, then runs `exchange`.
    func connect(for exchange: HTTP1Exchange) {
        self.exchange = exchange
        exchange.connection = self
        arm(after: timeouts.connect)
        let origin = pool.origin
        LoopResolver.resolve(origin.host, port: origin.port, on: pool.client.loop.uv) { [self] result in
            guard state == .connecting else { return }
            do throws(RuntimeError) {
                let address = try result.get()
                try address.withSockaddr { sa throws(RuntimeError) in
                    try tcp.connect(to: sa) { [self] status in connected(status) }
                }
            } catch {
                fail(.upstream(.connectFailed, "could not connect to the upstream: \(error.message)", underlying: error))
            }
        }
    }

    private func connected(_ status: Int32) {
        guard state == .connecting else { return }
        if status < 0 {
            let reason = String(cString: uv_strerror(status))
            fail(.upstream(.connectFailed, "could not connect to the upstream: \(reason)", underlying: .libuv(status, "connect")))
            return
        }
        do throws(RuntimeError) {
            try tcp.startReading()
        } catch {
            fail(.upstream(.upstreamFailed, "the upstream connection cannot be read", underlying: error))
            return
        }
        guard let exchange, !exchange.isFinished else {
            // The exchange was cancelled while connecting (`abandon` closed the connection).
            close()
            return
        }
        run(exchange)
    }

    // MARK: Running an exchange

    /// Sends `exchange`'s request and reads its response.
    func run(_ exchange: HTTP1Exchange) {
        state = .busy
        self.exchange = exchange
        exchange.connection = self
        parser.reset()
        if exchange.request.method == "HEAD" { parser.expectNoBody() }
        if exchange.request.upgrade { parser.expectUpgrade() }
        refused = nil
        stash = []
        endOfInput = nil
        requestSent = false
        streamBody = nil
        lastActivity = now
        totalDeadline = timeouts.total.map { lastActivity + $0 } ?? .max
        armExchangeTimer()
        do throws(RuntimeError) {
            switch exchange.request.body {
            case .bytes(let body) where body.count <= 16 * 1024:
                // Head and a small body in one write.
                var out = exchange.head.bytes
                out.append(contentsOf: body)
                try send(out)
                requestSent = true
            case .bytes(let body):
                try send(exchange.head.bytes)
                try send(body)
                requestSent = true
            case .none:
                try send(exchange.head.bytes)
                requestSent = true
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

    /// Sends what the client's body stream holds, as the socket takes it.
    // MARK: Ending

    /// The response ended: the connection goes back to the pool when both sides keep it
    /// and the whole request was sent, else it closes. Then the handler hears success.
    ///
    /// A response that ends while the request body is still going out closes the connection:
    /// an upstream that answered early may never read the rest, and a body left to drain
    /// with nobody waiting for it would hold the connection, its descriptor and its place in
    /// the pool for as long as the upstream does not read.
    func finishExchange(keepAlive: Bool) {
        let done = exchange
        exchange = nil
        done?.connection = nil
        timer.disarm()
        if keepAlive && requestSent && stash.isEmpty && state == .busy {
            reused = true
            state = .idle
            pool.release(self)
        } else {
            close()
        }
        done?.finish(nil)
    }

    /// The upstream answered `101 Switching Protocols`: the socket leaves this connection
    /// (which closes its timer and leaves the pool, never to be reused) for an
    /// ``UpstreamTunnel`` the exchange's handler owns.
    func handOver(_ done: HTTP1Exchange, _ headers: HTTPHeaders, early: UnsafeRawBufferPointer) {
        exchange = nil
        done.connection = nil
        state = .closed
        streamBody = nil
        timer.close()
        let tunnel = UpstreamTunnel(tcp: tcp, early: Array(early))
        pool.closed(self)
        done.switched(headers, tunnel)
    }

    /// Ends the exchange with `error` and closes the connection.
    func fail(_ error: RuntimeError) {
        let failed = exchange
        exchange = nil
        close()
        failed?.finish(error)
    }

    /// The exchange was cancelled: the connection cannot be trusted for another.
    func abandon() {
        exchange = nil
        close()
    }

    /// Fails the exchange with `reason` and closes (client shutdown).
    func shutDown(_ reason: RuntimeError) {
        fail(reason)
    }

    /// Closes the socket and the timer; the pool forgets the connection.
    func close() {
        guard state != .closed else { return }
        state = .closed
        streamBody = nil
        timer.close()
        tcp.close()
        pool.closed(self)
    }
}
