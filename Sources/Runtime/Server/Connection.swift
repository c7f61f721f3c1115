import CLibUV
import Glibc
import HTTPWire

/// One client connection on one loop, over TCP or a Unix domain socket (both are libuv
/// streams). Loop-confined: every method runs on `loop`.
///
/// The decisions live in ``StateMachine``; this class turns libuv callbacks and responder
/// calls into its events and runs the actions it returns. It holds what a value cannot:
/// the handles, the parser, the input not parsed yet, the buffered body, the body stream,
/// and the continuations and handlers of the responder.
final class Connection {
    let loop: EventLoop
    let context: ServerContext
    let registry: ServerLoopState
    /// A `uv_tcp_t` or a `uv_pipe_t`, as a stream.
    let stream_t: UnsafeMutablePointer<uv_stream_t>
    /// Whether `stream_t` is TCP (else a Unix domain socket).
    private let isTCP: Bool
    let timer: UnsafeMutablePointer<uv_timer_t>
    /// Whether `uv_timer_init` succeeded (else the timer is no libuv handle and is not closed).
    let timerReady: Bool
    private let parser: RequestParser
    var machine: StateMachine
    /// Input read but not parsed yet (pipelined requests waiting for their turn).
    var pending: [UInt8] = []
    private var openHandles: Int
    private(set) var remoteAddress = ""
    private var retained: Unmanaged<Connection>?
    /// The first libuv call that failed, which closed the connection.
    var failure: UVError?
    /// The splice the connection is part of after its response switched protocols.
    var tunnel: Splice?
    /// Whether the spliced connection is reading (libuv refuses a second `uv_read_start`).
    var tunnelReading = false

    // Request.
    private var head: RequestHead?
    var body: [UInt8] = []
    var stream: BodyStream?

    // Response.
    var drainWaiters: [CheckedContinuation<Void, any Error>] = []
    var goneHandlers: [@Sendable () -> Void] = []
    var writableHandlers: [() -> Void] = []

    // I/O.
    /// Whether the parser is being fed (a response given synchronously must not feed it again).
    var processing = false
    /// Whether `uv_close` was called on the handles.
    var handlesClosing = false
    /// `uv_write` requests whose callback has not run yet.
    var writeRequests = 0

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
        self.machine = StateMachine(configuration: StateMachine.Configuration(context.configuration))
        let rc = uv_timer_init(loop.uv, timer)
        timerReady = rc == 0
        openHandles = timerReady ? 2 : 1
        let me = Unmanaged.passRetained(self)
        retained = me
        stream.pointee.data = me.toOpaque()
        timer.pointee.data = me.toOpaque()
        if !timerReady { failure = UVError(code: rc, operation: "uv_timer_init") }
    }

    /// The connection behind a handle's or request's `data`, which every handle of a
    /// connection carries from `init` until its close callback ran.
    static func from(_ p: UnsafeMutableRawPointer?) -> Connection {
        // Invariant: `data` was set in `init` and the connection is retained until both
        // close callbacks ran, so the pointer is never nil while libuv calls back.
        Unmanaged<Connection>.fromOpaque(p!).takeUnretainedValue()
    }

    /// Starts reading; `admitted` false answers 503 and closes.
    func start(admitted: Bool) {
        remoteAddress = peerName()
        // Small responses go out at once. A failure costs latency only, never correctness,
        // so its code is deliberately not acted on.
        if isTCP { _ = uv_tcp_nodelay(UnsafeMutablePointer(OpaquePointer(stream_t)), 1) }
        guard timerReady else {
            execute(step { m, _ in m.abort() })
            return
        }
        execute(step { m, now in m.start(admitted: admitted, now: now) })
    }

    /// Runs one event of the state machine with the loop's time and the server's state.
    func step(_ event: (inout StateMachine, UInt64) -> [StateMachine.Action]) -> [StateMachine.Action] {
        machine.serverDraining = registry.closing
        return event(&machine, uv_now(loop.uv))
    }

    // MARK: Reading

    func onRead(_ nread: Int, _ base: UnsafeMutablePointer<CChar>?) {
        if let tunnel {
            tunnelRead(tunnel, nread, base)
            return
        }
        if nread < 0 {
            // EOF or error: a client that half-closes has nothing more to say.
            execute(step { m, _ in m.peerClosed() })
            return
        }
        guard nread > 0, let base else { return }
        execute(step { m, now in m.bytesReceived(now: now) }, input: UnsafeRawBufferPointer(start: base, count: nread))
    }

    /// Parses bytes just read, after whatever input is held.
    func consumeInput(_ data: UnsafeRawBufferPointer) {
        if pending.isEmpty && !processing {
            let used = consume(data)
            if used < data.count && machine.phase == .open { pending.append(contentsOf: data[used...]) }
        } else {
            pending.append(contentsOf: data)
            drainPending()
        }
        let held = pending.count
        execute(step { m, _ in m.inputHeld(held) })
    }

    func drainPending() {
        guard !processing, !machine.isClosed else { return }
        if !pending.isEmpty {
            let used = pending.withUnsafeBytes { consume($0) }
            if machine.isClosed { return }
            pending.removeFirst(used)
        }
        let held = pending.count
        execute(step { m, now in m.pendingDrained(held, now: now) })
    }

    private func consume(_ data: UnsafeRawBufferPointer) -> Int {
        processing = true
        defer { processing = false }
        var offset = 0
        while offset < data.count && machine.acceptsRequestBytes {
            let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: data[offset...]))
            offset += used
            switch event {
            case .needMoreData:
                if used == 0 { return offset }
            case .head(let h):
                head = h
                let policy = context.responder.bodyPolicy(for: h, limits: context.configuration.limits)
                execute(step { m, now in m.receivedHead(h, body: policy, now: now) })
            case .body(let bytes):
                execute(step { m, now in m.receivedBody(bytes.count, now: now) }, input: bytes)
            case .end:
                execute(step { m, now in m.receivedEnd(now: now) })
            case .error(let e):
                execute(step { m, now in m.parseFailed(e, now: now) })
                return offset
            }
        }
        return offset
    }

    func dispatch(_ requestBody: RequestBody) {
        guard let head else { return }
        let writer = ResponseWriter(
            connection: LoopBound(self, loop: loop), sequence: machine.sequence, isHeadRequest: head.isHead)
        let request = HTTPRequest(head: head, body: requestBody, remoteAddress: remoteAddress, loop: loop)
        context.responder.respond(to: request, writer: writer)
    }

    /// Whether no request is in progress (used by graceful shutdown).
    var isIdle: Bool { machine.hasNoExchange && !parser.inBody && pending.isEmpty }

    // MARK: Responses

    func isCurrent(_ seq: Int) -> Bool { machine.isCurrent(seq) }

    func respond(_ seq: Int, status: Int, headers: HTTPHeaders, body: [UInt8]) {
        execute(step { m, now in m.respond(seq, status: status, headers: headers, body: body, now: now) })
    }

    func writeHead(_ seq: Int, status: Int, headers: HTTPHeaders) {
        execute(step { m, _ in m.writeHead(seq, status: status, headers: headers) })
    }

    func flushHeldHead() {
        execute(step { m, _ in m.flushHeldHead() })
    }

    func writeBody(_ seq: Int, _ bytes: [UInt8], continuation: CheckedContinuation<Void, any Error>) {
        guard machine.isStreaming(seq) else {
            continuation.resume(throwing: ClientDisconnected())
            return
        }
        bytes.withUnsafeBytes { raw in execute(step { m, _ in m.writeBody(seq, raw) }) }
        if isWritable {
            continuation.resume()
        } else {
            drainWaiters.append(continuation)
        }
    }

    /// Loop-only: writes body bytes now; false when the write queue is above its high-water mark.
    func writeBodyNow(_ seq: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard machine.isStreaming(seq) else { return true }
        execute(step { m, _ in m.writeBody(seq, bytes) })
        return isWritable
    }

    /// Bytes libuv holds for the client (0 once the handle is closing).
    var queuedBytes: Int {
        handlesClosing ? 0 : uv_stream_get_write_queue_size(stream_t)
    }

    /// Whether the write queue is at or below its high-water mark.
    var isWritable: Bool { machine.isWritable(queuedBytes: queuedBytes) }

    /// Loop-only: runs `f` once the write queue has drained below half its high-water mark.
    func whenWritable(_ seq: Int, _ f: @escaping () -> Void) {
        guard machine.isCurrent(seq) else { return }
        if machine.runsWritableHandlerNow(queuedBytes: queuedBytes) {
            f()
        } else {
            writableHandlers.append(f)
        }
    }

    func end(_ seq: Int) {
        execute(step { m, now in m.end(seq, now: now) })
    }

    func onClientGone(_ seq: Int, _ handler: @escaping @Sendable () -> Void) {
        guard machine.keepsGoneHandler(for: seq) else {
            handler()
            return
        }
        goneHandlers.append(handler)
    }

    // MARK: Closing

    /// Closes at once, dropping unsent bytes (the client went away or a write failed).
    func abort() {
        execute(step { m, _ in m.abort() })
    }

    /// Closes both handles; the connection is released when both close callbacks ran.
    func close() {
        abort()
    }

    func handleClosed() {
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
