import CLibUV
import Glibc
import HTTPWire

/// One client connection on one loop, over TCP or a Unix domain socket (both are libuv
/// streams). Loop-confined: every method runs on `loop`.
///
/// Requests are read one at a time. After a request's body ends, parsing stops until
/// its response is complete, so pipelined requests are answered in order; bytes that
/// arrived meanwhile wait in `pending`.
final class Connection {
    enum TimerMode { case none, head, bodyIdle, keepAlive, linger }
    enum ResponseState { case none, streaming(chunked: Bool, bodyless: Bool), done }

    let loop: EventLoop
    let context: ServerContext
    let registry: ServerLoopState
    /// A `uv_tcp_t` or a `uv_pipe_t`, as a stream.
    let stream_t: UnsafeMutablePointer<uv_stream_t>
    /// Whether `stream_t` is TCP (else a Unix domain socket).
    private let isTCP: Bool
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private let parser: RequestParser
    private var pending: [UInt8] = []
    private var openHandles = 2
    private(set) var remoteAddress = ""
    private var retained: Unmanaged<Connection>?

    // Request.
    private var sequence = 0
    private var head: RequestHead?
    private var policy = BodyPolicy.stream
    private var body: [UInt8] = []
    /// Bytes of `body` taken from the shared ``BufferBudget``, given back when the exchange ends.
    private var reserved = 0
    private var stream: BodyStream?
    private var requestEnded = false
    private var keepAlive = true
    private var bytesSeen = false

    // Response.
    private var response = ResponseState.none
    private var writesInFlight = 0
    private var drainWaiters: [CheckedContinuation<Void, any Error>] = []
    private var goneHandlers: [@Sendable () -> Void] = []
    private var writableHandlers: [() -> Void] = []
    private var heldHead: [UInt8]?
    private var lingering = false

    // Connection.
    private var processing = false
    private var readingStopped = false
    private var closeAfterFlush = false
    private(set) var closed = false
    private var timerMode = TimerMode.none
    private var lastActivity: UInt64 = 0

    init(
        loop: EventLoop, context: ServerContext, registry: ServerLoopState, stream: UnsafeMutablePointer<uv_stream_t>,
        isTCP: Bool
    ) {
        self.loop = loop
        self.context = context
        self.registry = registry
        self.stream_t = stream
        self.isTCP = isTCP
        self.timer = .allocate(capacity: 1)
        self.parser = RequestParser(limits: context.configuration.limits)
        uv_timer_init(loop.uv, timer)
        let me = Unmanaged.passRetained(self)
        retained = me
        stream.pointee.data = me.toOpaque()
        timer.pointee.data = me.toOpaque()
    }

    private static func from(_ p: UnsafeMutableRawPointer?) -> Connection {
        Unmanaged<Connection>.fromOpaque(p!).takeUnretainedValue()
    }

    /// Starts reading; `admitted` false answers 503 and closes.
    func start(admitted: Bool) {
        remoteAddress = peerName()
        // Small responses go out at once. A failure costs latency only, never correctness.
        if isTCP { _ = uv_tcp_nodelay(UnsafeMutablePointer(OpaquePointer(stream_t)), 1) }
        guard admitted else {
            fail(WireError(.overloaded, status: 503, "the server is at its connection limit"))
            return
        }
        setTimer(.head)
        startReading()
    }

    // MARK: Reading

    private func startReading() {
        guard !closed else { return }
        if readingStopped { lastActivity = uv_now(loop.uv) }
        readingStopped = false
        let rc = uv_read_start(
            stream_t,
            { handle, _, buf in
                let c = Connection.from(handle!.pointee.data)
                buf!.pointee = uv_buf_init(
                    c.loop.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(c.loop.readBuffer.count))
            },
            { stream, nread, buf in
                Connection.from(stream!.pointee.data).onRead(nread, buf!.pointee.base)
            })
        if rc < 0 { abort() }
    }

    private func stopReading() {
        guard !readingStopped, !closed else { return }
        readingStopped = true
        uv_read_stop(stream_t)
    }

    private func onRead(_ nread: Int, _ base: UnsafeMutablePointer<CChar>?) {
        if lingering {
            // Discard what the client still sends until it closes or the linger time ends.
            if nread < 0 { close() }
            return
        }
        if nread < 0 {
            // EOF or error: a client that half-closes has nothing more to say.
            abort()
            return
        }
        guard nread > 0, let base else { return }
        lastActivity = uv_now(loop.uv)
        if timerMode == .keepAlive { setTimer(.head) }
        bytesSeen = true
        let data = UnsafeRawBufferPointer(start: base, count: nread)
        if pending.isEmpty && !processing {
            let used = consume(data)
            if used < nread && !closed { pending.append(contentsOf: data[used...]) }
        } else {
            pending.append(contentsOf: data)
            drainPending()
        }
        if pending.count > 64 * 1024 { stopReading() }
    }

    private func drainPending() {
        guard !processing, !pending.isEmpty, !closed else { return }
        let used = pending.withUnsafeBytes { consume($0) }
        if closed { return }
        pending.removeFirst(used)
        if pending.count <= 64 * 1024 && readingStopped && !(stream?.isFull ?? false) { startReading() }
    }

    /// Whether the current request is read and waits for its response.
    private var awaitingResponse: Bool { requestEnded }

    private func consume(_ data: UnsafeRawBufferPointer) -> Int {
        processing = true
        defer { processing = false }
        var offset = 0
        while offset < data.count && !closed && !awaitingResponse {
            let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: data[offset...]))
            offset += used
            switch event {
            case .needMoreData:
                if used == 0 { return offset }
            case .head(let h):
                beginRequest(h)
            case .body(let bytes):
                receiveBody(bytes)
            case .end:
                endRequest()
            case .error(let e):
                fail(e)
                return offset
            }
        }
        return offset
    }

    private func beginRequest(_ h: RequestHead) {
        sequence += 1
        head = h
        body = []
        stream = nil
        requestEnded = false
        response = .none
        goneHandlers = []
        keepAlive = h.keepAlive && !registry.closing
        policy = context.responder.bodyPolicy(for: h, limits: context.configuration.limits)
        if case .buffer(let max) = policy, case .length(let n) = h.framing, n > UInt64(max) {
            fail(WireError(.bodyTooLarge, status: 413, "the request body exceeds \(max) bytes"))
            return
        }
        if h.expectsContinue { write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        setTimer(h.framing == .none ? .none : .bodyIdle)
        if policy == .stream {
            let s = BodyStream(loop: loop, highWater: context.configuration.bodyHighWater)
            s.setOnDrain { [unowned self] in
                if self.readingStopped && self.pending.count <= 64 * 1024 { self.startReading() }
            }
            stream = s
            dispatch(.stream(s))
        }
    }

    private func receiveBody(_ bytes: UnsafeRawBufferPointer) {
        if let stream {
            stream.append(bytes)
            if stream.isFull { stopReading() }
            return
        }
        if case .buffer(let max) = policy, body.count + bytes.count > max {
            fail(WireError(.bodyTooLarge, status: 413, "the request body exceeds \(max) bytes"))
            return
        }
        if let budget = context.configuration.bufferBudget {
            guard budget.reserve(bytes.count) else {
                fail(WireError(.overloaded, status: 503, "the server holds too many request bodies in memory; retry later"))
                return
            }
            reserved += bytes.count
        }
        body.append(contentsOf: bytes)
    }

    private func endRequest() {
        requestEnded = true
        setTimer(.none)
        if let stream {
            stream.finish()
        } else {
            let b = body
            body = []
            dispatch(.buffered(b))
        }
        if case .done = response { finishExchange() }
    }

    private func dispatch(_ requestBody: RequestBody) {
        guard let head else { return }
        let writer = ResponseWriter(
            connection: LoopBound(self, loop: loop), sequence: sequence, isHeadRequest: head.isHead)
        let request = HTTPRequest(head: head, body: requestBody, remoteAddress: remoteAddress, loop: loop)
        context.responder.respond(to: request, writer: writer)
    }

    /// The exchange is over: get ready for the next request.
    private func finishExchange() {
        releaseReserved()
        head = nil
        stream = nil
        requestEnded = false
        response = .none
        goneHandlers = []
        if registry.closing {
            closeAfterFlush = true
            closeIfFlushed()
            return
        }
        setTimer(pending.isEmpty ? .keepAlive : .head)
        if !processing {
            drainPending()
            if readingStopped && pending.count <= 64 * 1024 { startReading() }
        }
    }

    /// Whether no request is in progress (used by graceful shutdown).
    var isIdle: Bool { head == nil && !parser.inBody && pending.isEmpty }

    // MARK: Responses

    private func current(_ seq: Int) -> Bool { seq == sequence && !closed && head != nil }

    func isCurrent(_ seq: Int) -> Bool { current(seq) }

    func respond(_ seq: Int, status: Int, headers: HTTPHeaders, body: [UInt8]) {
        guard current(seq), case .none = response, let head else { return }
        var h = headers
        h.remove(name: "Content-Length")
        h.remove(name: "Transfer-Encoding")
        h.remove(name: "Connection")
        let hasBody = ResponseHead.allowsBody(status: status)
        if hasBody { h.add(name: "Content-Length", value: String(body.count)) }
        if !requestEnded { keepAlive = false }
        if !keepAlive { h.add(name: "Connection", value: "close") }
        var out: [UInt8] = []
        out.reserveCapacity(128 + h.count * 32 + body.count)
        ResponseHead(status: status, headers: h).serialize(into: &out)
        if hasBody && !head.isHead { out.append(contentsOf: body) }
        write(out)
        response = .done
        responseDone()
    }

    func writeHead(_ seq: Int, status: Int, headers: HTTPHeaders) {
        guard current(seq), case .none = response, let head else { return }
        var h = headers
        h.remove(name: "Transfer-Encoding")
        h.remove(name: "Connection")
        let bodyless = head.isHead || !ResponseHead.allowsBody(status: status)
        var chunked = false
        if !bodyless && !h.contains("Content-Length") {
            if head.major == 1 && head.minor == 1 {
                h.add(name: "Transfer-Encoding", value: "chunked")
                chunked = true
            } else {
                keepAlive = false
            }
        }
        if !keepAlive { h.add(name: "Connection", value: "close") }
        var out: [UInt8] = []
        ResponseHead(status: status, headers: h).serialize(into: &out)
        // Hold the head until the first body bytes or the end of this loop turn, so a
        // small response leaves in one write.
        heldHead = out
        let bound = LoopBound(self, loop: loop)
        loop.execute { bound.value.flushHeldHead() }
        response = .streaming(chunked: chunked, bodyless: bodyless)
    }

    func flushHeldHead() {
        if heldHead != nil { write([]) }
    }

    func writeBody(_ seq: Int, _ bytes: [UInt8], continuation: CheckedContinuation<Void, any Error>) {
        guard current(seq), case .streaming = response else {
            continuation.resume(throwing: ClientDisconnected())
            return
        }
        bytes.withUnsafeBytes { writeBodyBytes($0) }
        if isWritable {
            continuation.resume()
        } else {
            drainWaiters.append(continuation)
        }
    }

    /// Loop-only: writes body bytes now; false when the write queue is above its high-water mark.
    func writeBodyNow(_ seq: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard current(seq), case .streaming = response else { return true }
        writeBodyBytes(bytes)
        return isWritable
    }

    /// Frames body bytes for the current streamed response (a chunk, or as they are).
    private func writeBodyBytes(_ bytes: UnsafeRawBufferPointer) {
        guard case .streaming(let chunked, let bodyless) = response, !bodyless, !bytes.isEmpty else { return }
        if chunked {
            var out = ChunkedEncoding.chunkHeader(bytes.count)
            out.reserveCapacity(out.count + bytes.count + 2)
            out.append(contentsOf: bytes)
            out.append(contentsOf: ChunkedEncoding.chunkTrailer)
            write(out)
        } else {
            write(Array(bytes))
        }
    }

    /// Whether the write queue is at or below its high-water mark.
    var isWritable: Bool {
        closed || uv_stream_get_write_queue_size(stream_t) <= context.configuration.writeHighWater
    }

    /// Loop-only: runs `f` once the write queue has drained below half its high-water mark.
    func whenWritable(_ seq: Int, _ f: @escaping () -> Void) {
        guard current(seq) else { return }
        if isWritable && writesInFlight == 0 {
            f()
        } else {
            writableHandlers.append(f)
        }
    }

    func end(_ seq: Int) {
        guard current(seq), case .streaming(let chunked, let bodyless) = response else { return }
        if chunked && !bodyless { write(ChunkedEncoding.terminator) } else { flushHeldHead() }
        response = .done
        responseDone()
    }

    func onClientGone(_ seq: Int, _ handler: @escaping @Sendable () -> Void) {
        if closed || seq != sequence {
            handler()
            return
        }
        goneHandlers.append(handler)
    }

    private func responseDone() {
        if !keepAlive || !requestEnded {
            // The body was not read to its end: the connection cannot be reused.
            closeAfterFlush = true
            closeIfFlushed()
            return
        }
        finishExchange()
    }

    /// Answers a request that cannot be served with problem+json and closes.
    func fail(_ error: WireError) {
        guard !closed else { return }
        stream?.fail(error)
        stream = nil
        if case .none = response {
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: Problem.contentType)
            h.add(name: "Content-Length", value: String(error.problem.json.count))
            h.add(name: "Connection", value: "close")
            var out: [UInt8] = []
            ResponseHead(status: error.status, headers: h).serialize(into: &out)
            if head?.isHead != true { out.append(contentsOf: error.problem.json) }
            write(out)
            response = .done
        }
        stopReading()
        closeAfterFlush = true
        closeIfFlushed()
    }

    // MARK: Writing

    private final class WriteRequest {
        let buffer: UnsafeMutableRawBufferPointer
        init(_ bytes: ArraySlice<UInt8>) {
            buffer = .allocate(byteCount: bytes.count, alignment: 1)
            buffer.copyBytes(from: bytes)
        }
        deinit { buffer.deallocate() }
    }

    private func write(_ payload: [UInt8]) {
        guard !closed else { return }
        var bytes = payload
        if let held = heldHead {
            heldHead = nil
            bytes = held + payload
        }
        guard !bytes.isEmpty else { return }
        var offset = 0
        if writesInFlight == 0 {
            let n = bytes.withUnsafeBytes { raw -> Int32 in
                var buf = uv_buf_init(
                    UnsafeMutablePointer(mutating: raw.baseAddress!.assumingMemoryBound(to: CChar.self)), UInt32(raw.count))
                return uv_try_write(stream_t, &buf, 1)
            }
            if n > 0 { offset = Int(n) }
            if offset == bytes.count { return }
        }
        let request = WriteRequest(bytes[offset...])
        let req = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        req.pointee.data = Unmanaged.passRetained(request).toOpaque()
        var buf = uv_buf_init(request.buffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(request.buffer.count))
        let rc = uv_write(req, stream_t, &buf, 1) { req, status in
            // The write is done: free its buffer.
            Unmanaged<WriteRequest>.fromOpaque(req!.pointee.data).release()
            let c = Connection.from(req!.pointee.handle.pointee.data)
            req!.deallocate()
            c.writeCompleted(status)
        }
        if rc < 0 {
            Unmanaged<WriteRequest>.fromOpaque(req.pointee.data).release()
            req.deallocate()
            abort()
            return
        }
        writesInFlight += 1
    }

    private func writeCompleted(_ status: Int32) {
        writesInFlight -= 1
        if status < 0 {
            abort()
            return
        }
        if uv_stream_get_write_queue_size(stream_t) <= context.configuration.writeHighWater / 2 {
            if !drainWaiters.isEmpty {
                let waiters = drainWaiters
                drainWaiters = []
                for w in waiters { w.resume() }
            }
            if !writableHandlers.isEmpty {
                let handlers = writableHandlers
                writableHandlers = []
                for h in handlers { h() }
            }
        }
        closeIfFlushed()
    }

    private func closeIfFlushed() {
        if closeAfterFlush && writesInFlight == 0 && !lingering { linger() }
    }

    /// Closes gracefully after a response: shut down the sending side, then read and
    /// discard for a moment. Closing at once with unread bytes would send a reset, and a
    /// reset can destroy the response before the client reads it (a 413 or 431 answered
    /// while the client is still sending, a pipelined request after `Connection: close`).
    private func linger() {
        guard !closed else { return }
        lingering = true
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        if uv_shutdown(req, stream_t, { req, _ in req!.deallocate() }) != 0 {
            req.deallocate()
            close()
            return
        }
        if readingStopped { startReading() }
        setTimer(.linger)
    }

    // MARK: Timers

    private func setTimer(_ mode: TimerMode) {
        guard !closed, mode != timerMode else { return }
        timerMode = mode
        let cfg = context.configuration
        let ms: UInt64
        switch mode {
        case .none:
            uv_timer_stop(timer)
            return
        case .head: ms = cfg.headTimeout.milliseconds
        case .bodyIdle:
            ms = cfg.bodyIdleTimeout.milliseconds
            lastActivity = uv_now(loop.uv)
        case .keepAlive: ms = cfg.keepAliveTimeout.milliseconds
        case .linger: ms = 2000
        }
        armTimer(ms)
    }

    private func armTimer(_ ms: UInt64) {
        uv_timer_start(timer, { t in Connection.from(t!.pointee.data).timerFired() }, ms, 0)
    }

    private func timerFired() {
        switch timerMode {
        case .none:
            return
        case .head:
            fail(WireError(.headTimeout, status: 408, "the request head did not arrive in time"))
        case .bodyIdle:
            let limit = context.configuration.bodyIdleTimeout.milliseconds
            if readingStopped {
                // We stopped reading (the consumer is behind): the client is not idle.
                lastActivity = uv_now(loop.uv)
                armTimer(limit)
                return
            }
            let idle = uv_now(loop.uv) - lastActivity
            if idle < limit {
                armTimer(limit - idle)
            } else {
                fail(WireError(.bodyTimeout, status: 408, "the request body stalled"))
            }
        case .keepAlive, .linger:
            close()
        }
    }

    // MARK: Closing

    /// Closes at once, dropping unsent bytes (the client went away or a write failed).
    func abort() {
        close()
    }

    /// Closes both handles; the connection is released when both close callbacks ran.
    func close() {
        guard !closed else { return }
        closed = true
        releaseReserved()
        stream?.fail(ClientDisconnected())
        stream = nil
        if case .done = response {} else if head != nil {
            let handlers = goneHandlers
            goneHandlers = []
            for h in handlers { h() }
        }
        let waiters = drainWaiters
        drainWaiters = []
        for w in waiters { w.resume(throwing: ClientDisconnected()) }
        writableHandlers = []
        uv_timer_stop(timer)
        uv_read_stop(stream_t)
        uv_close(UnsafeMutablePointer(OpaquePointer(stream_t))) { h in Connection.from(h!.pointee.data).handleClosed() }
        uv_close(UnsafeMutablePointer(OpaquePointer(timer))) { h in Connection.from(h!.pointee.data).handleClosed() }
    }

    private func releaseReserved() {
        context.configuration.bufferBudget?.release(reserved)
        reserved = 0
    }

    private func handleClosed() {
        openHandles -= 1
        guard openHandles == 0 else { return }
        stream_t.deallocate()
        timer.deallocate()
        context.connectionClosed()
        registry.remove(self)
        retained?.release()
        retained = nil
    }

    /// `ip:port` of a TCP peer; `unix` for a Unix socket peer, which has no address worth
    /// logging or forwarding (its own socket is usually unnamed).
    private func peerName() -> String {
        guard isTCP else { return "unix" }
        let tcp = UnsafeMutablePointer<uv_tcp_t>(OpaquePointer(stream_t))
        var storage = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(tcp, $0, &len) }
        }
        guard rc == 0 else { return "unknown" }
        return SocketAddress.describe(&storage)
    }
}
