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
final class HTTP1Connection {
    private enum State { case connecting, busy, idle, closed }

    private unowned let pool: HTTP1Pool
    private let tcp: LoopTCP
    private let timer: LoopTimer
    private let parser = ResponseParser()
    private var state = State.connecting
    private var exchange: HTTP1Exchange?
    /// Whether an exchange completed on this connection before the current one.
    private var reused = false

    // Request body.
    private var streamBody: BodyStream?
    private var requestSent = false

    // Response delivery, paused while the handler refuses bytes.
    private var refused: [UInt8]?
    private var stash: [UInt8] = []
    private var endOfInput: Int?

    // Timing, in libuv's millisecond clock.
    private var lastActivity: UInt64 = 0
    private var totalDeadline: UInt64 = .max

    init(pool: HTTP1Pool) throws(RuntimeError) {
        self.pool = pool
        let loop = pool.client.loop
        tcp = try LoopTCP(loop: loop.uv, readBuffer: loop.readBuffer)
        do {
            timer = try LoopTimer(loop: loop.uv)
        } catch {
            tcp.close()
            throw error
        }
    }

    private var configuration: UpstreamClientConfiguration { pool.client.configuration }
    private var now: UInt64 { uv_now(pool.client.loop.uv) }

    // MARK: Connecting

    /// Resolves the origin, connects, then runs `exchange`.
    func connect(for exchange: HTTP1Exchange) {
        self.exchange = exchange
        exchange.connection = self
        arm(after: configuration.connectTimeout.milliseconds)
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
            try tcp.startReading { [unowned self] n, bytes in received(n, bytes) }
        } catch {
            fail(.upstream(.upstreamFailed, "the upstream connection cannot be read", underlying: error))
            return
        }
        tcp.onWriteCompleted = { [unowned self] status in writeCompleted(status) }
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
        totalDeadline = configuration.totalTimeout.map { lastActivity + $0.milliseconds } ?? .max
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

    private func send(_ bytes: [UInt8]) throws(RuntimeError) {
        var failure: RuntimeError?
        bytes.withUnsafeBytes { raw in
            do throws(RuntimeError) { try tcp.write(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Sends what the client's body stream holds, as the socket takes it.
    private func pumpBody() {
        while let stream = streamBody, state == .busy, tcp.queuedBytes < 256 * 1024 {
            let chunked = exchange?.head.framing == .chunked
            // Room before the data for a chunk-size line, after it for the CRLF.
            let scratch = pool.scratch
            let lead = 18
            let room = UnsafeMutableRawBufferPointer(rebasing: scratch[lead..<(scratch.count - 2)])
            do throws(RuntimeError) {
                switch stream.readNow(into: room) {
                case .bytes(let n):
                    lastActivity = now
                    guard chunked else {
                        try tcp.write(UnsafeRawBufferPointer(rebasing: scratch[lead..<(lead + n)]))
                        continue
                    }
                    let size = Array(String(n, radix: 16).utf8) + [0x0D, 0x0A]
                    let start = lead - size.count
                    UnsafeMutableRawBufferPointer(rebasing: scratch[start..<lead]).copyBytes(from: size)
                    scratch[lead + n] = 0x0D
                    scratch[lead + n + 1] = 0x0A
                    try tcp.write(UnsafeRawBufferPointer(rebasing: scratch[start..<(lead + n + 2)]))
                case .end:
                    streamBody = nil
                    requestSent = true
                    if chunked { try send(ChunkedEncoding.terminator) }
                    if exchange == nil { finishExchange(keepAlive: true) }
                case .empty:
                    let loop = pool.client.loop
                    stream.notifyWhenReadable { [weak self] in
                        guard let self else { return }
                        let bound = LoopBound(self, loop: loop)
                        loop.execute { bound.value.pumpBody() }
                    }
                    return
                case .failed:
                    fail(.upstream(.upstreamFailed, "the client's request body ended early; the upstream exchange was abandoned"))
                    return
                }
            } catch {
                inputEnded(error.systemCode ?? UV_ECONNRESET.rawValue, writing: true)
                return
            }
        }
    }

    private func writeCompleted(_ status: Int32) {
        guard state == .busy else { return }
        if status < 0 {
            if status != UV_ECANCELED.rawValue { inputEnded(status, writing: true) }
            return
        }
        lastActivity = now
        if streamBody != nil { pumpBody() }
    }

    // MARK: Reading the response

    private func received(_ n: Int, _ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .busy:
            if n < 0 {
                inputEnded(Int32(n), writing: false)
            } else {
                lastActivity = now
                feed(bytes)
            }
        case .idle:
            // The peer closed a kept-alive connection, or sent something unasked.
            close()
        case .connecting, .closed:
            break
        }
    }

    /// Parses `bytes` and hands what they hold to the exchange's handler.
    private func feed(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while let exchange, state == .busy {
            let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += used
            switch event {
            case .needMoreData:
                if offset >= bytes.count || used == 0 { return }
            case .head(let status, let headers):
                exchange.activeHandler?.upstreamHead(status: status, headers: headers)
            case .body(let chunk):
                guard let handler = exchange.activeHandler else { continue }
                if !handler.upstreamBody(chunk) {
                    guard self.exchange === exchange else { return }
                    // Keep the refused bytes and the rest; read nothing more until resumed.
                    refused = Array(chunk)
                    stash = Array(bytes[offset...])
                    tcp.stopReading()
                    return
                }
            case .end(let keepAlive):
                finishExchange(keepAlive: keepAlive && offset == bytes.count)
                return
            case .switched(let headers):
                handOver(exchange, headers, early: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                return
            case .error(let e):
                fail(.upstream(.invalidResponse, "the upstream answer is not valid HTTP: \(e.detail)"))
                return
            }
        }
    }

    /// The handler takes bytes again: deliver what it refused, then read on.
    func resumeDelivery() {
        guard state == .busy, let bytes = refused, let exchange, let handler = exchange.activeHandler else { return }
        lastActivity = now
        if !(bytes.withUnsafeBytes { handler.upstreamBody($0) }) { return }
        guard self.exchange === exchange, state == .busy else { return }
        refused = nil
        let rest = stash
        stash = []
        rest.withUnsafeBytes { feed($0) }
        guard self.exchange === exchange, state == .busy, refused == nil else { return }
        if let code = endOfInput {
            inputEnded(Int32(code), writing: false)
            return
        }
        do throws(RuntimeError) {
            try tcp.startReading { [unowned self] n, bytes in received(n, bytes) }
        } catch {
            fail(.upstream(.upstreamFailed, "the upstream connection cannot be read", underlying: error))
        }
    }

    /// The peer closed the connection or it failed (`code`: `UV_EOF` or a libuv error).
    private func inputEnded(_ code: Int32, writing: Bool) {
        guard let exchange, state == .busy else { return }
        if refused != nil {
            // Deliver what was read first.
            endOfInput = Int(code)
            return
        }
        if !parser.started && reused && !exchange.retried && exchange.replayable {
            // A kept-alive connection the peer closed just before the request: send again.
            self.exchange = nil
            exchange.connection = nil
            close()
            pool.retry(exchange)
            return
        }
        if code == UV_EOF.rawValue && !writing {
            switch parser.finishInput() {
            case .end:
                finishExchange(keepAlive: false)
            case .error(let e):
                fail(.upstream(.connectionReset, "the upstream connection failed: \(e.detail)"))
            default:
                fail(.upstream(.connectionReset, "the upstream connection failed"))
            }
            return
        }
        let reason = String(cString: uv_strerror(code))
        fail(.upstream(.connectionReset, "the upstream connection failed: \(reason)", underlying: .libuv(code, "read")))
    }

    // MARK: Ending

    /// The response ended: the connection goes back to the pool when both sides keep it
    /// and the whole request was sent, else it closes. Then the handler hears success.
    private func finishExchange(keepAlive: Bool) {
        let done = exchange
        exchange = nil
        done?.connection = nil
        timer.stop()
        if keepAlive && requestSent && stash.isEmpty && state == .busy {
            reused = true
            state = .idle
            pool.release(self)
        } else if streamBody == nil || !keepAlive {
            close()
        }
        // Otherwise the request body is still going out; `pumpBody` finishes.
        done?.finish(nil)
    }

    /// The upstream answered `101 Switching Protocols`: the socket leaves this connection
    /// (which closes its timer and leaves the pool, never to be reused) for an
    /// ``UpstreamTunnel`` the exchange's handler owns.
    private func handOver(_ done: HTTP1Exchange, _ headers: HTTPHeaders, early: UnsafeRawBufferPointer) {
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
    private func fail(_ error: RuntimeError) {
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

    // MARK: Timers

    /// Closes the connection after the idle time in the pool.
    func startIdleTimer() {
        arm(after: configuration.idleTimeout.milliseconds)
    }

    private func armExchangeTimer() {
        let idleDeadline = lastActivity + configuration.idleTimeout.milliseconds
        let at = min(idleDeadline, totalDeadline)
        arm(after: at > now ? at - now : 0)
    }

    private func arm(after ms: UInt64) {
        do throws(RuntimeError) {
            try timer.start(after: max(1, ms)) { [unowned self] in timerFired() }
        } catch {
            // Only a closing timer refuses, and then the connection is closing too.
        }
    }

    private func timerFired() {
        switch state {
        case .connecting:
            fail(.upstream(.timeout, "connecting to the upstream timed out"))
        case .idle:
            close()
        case .busy:
            let t = now
            if t >= totalDeadline {
                fail(.upstream(.timeout, "the upstream did not answer in time"))
            } else if refused == nil && t >= lastActivity + configuration.idleTimeout.milliseconds {
                fail(.upstream(.timeout, "the upstream did not answer in time"))
            } else {
                if refused != nil { lastActivity = t }
                armExchangeTimer()
            }
        case .closed:
            break
        }
    }
}
