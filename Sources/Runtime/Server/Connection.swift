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
    /// The client's socket: a ``LoopTCP`` or a Unix domain socket's ``LoopStream``.
    let socket: LoopStream
    /// The connection's one timer (nil when libuv could not make it: the connection then
    /// closes at once).
    let timer: LoopTimer?
    private let parser: RequestParser
    var machine: StateMachine
    /// Input read but not parsed yet (pipelined requests waiting for their turn).
    var pending: [UInt8] = []
    /// Handles whose close callback has not run yet.
    private var openHandles: Int
    private(set) var remoteAddress = ""
    /// The peer's credentials on a Unix domain socket, read once when the connection starts.
    private(set) var peerCredentials: PeerCredentials?
    /// The first libuv call that failed, which closed the connection.
    var failure: RuntimeError?
    /// The splice the connection is part of after its response switched protocols.
    var tunnel: Splice?
    /// Whether the spliced connection is reading.
    var tunnelReading = false

    // Request.
    private var head: RequestHead?
    /// What the responder kept from `head` (``RequestIntake/context``), handed back with the request.
    private var intakeContext: (any Sendable)?
    var body: [UInt8] = []
    var stream: BodyStream?

    // Response.
    var drainWaiters: [CheckedContinuation<Void, any Error>] = []
    var goneHandlers: [@Sendable () -> Void] = []
    /// Upstream exchanges cancelled when the client goes (``cancelOnClientGone(_:_:)``).
    var goneTransfers: [any UpstreamTransfer] = []
    var writableHandlers: [() -> Void] = []

    /// Runs the stream-drained event: one closure for every body stream of the connection
    /// (unowned: the connection outlives its streams' use of it).
    private(set) lazy var streamDrained: () -> Void = { [unowned self] in
        execute(step { m, now in m.streamDrained(now: now) })
    }
    /// The job that sends a held response head at the end of the loop turn, made on first use
    /// and reused by every later response. It holds the connection, as a queued job must; the
    /// cycle ends when the handles have closed (``handleClosed()``).
    private var heldHeadJob: (@Sendable () -> Void)?
    /// The connection bound to its loop, made on first use and shared by every response's
    /// writer and the head-flush job: one object per connection, not one per request. The
    /// cycle ends when the handles have closed (``handleClosed()``); a writer kept past that
    /// keeps the connection, as it did with a box of its own.
    private var boundSelf: LoopBound<Connection>?

    // I/O.
    /// Whether the parser is being fed (a response given synchronously must not feed it again).
    var processing = false
    /// Whether the handles are closing: no I/O starts any more.
    var handlesClosing = false

    /// Serves `socket`, an accepted client connection, which the connection owns from now
    /// on. The socket's and the timer's callbacks are set here, once: reads, writes and
    /// timers cost no allocation afterwards. The registry holds the connection until both
    /// handles' close callbacks ran; the callbacks are dropped before (``LoopHandle``), so
    /// none ever finds the connection gone.
    init(loop: EventLoop, context: ServerContext, registry: ServerLoopState, socket: LoopStream) {
        self.loop = loop
        self.context = context
        self.registry = registry
        self.socket = socket
        self.parser = RequestParser(limits: context.configuration.limits)
        self.machine = StateMachine(configuration: StateMachine.Configuration(context.configuration))
        do throws(RuntimeError) {
            timer = try LoopTimer(loop: loop.uv)
        } catch {
            timer = nil
            failure = error
        }
        openHandles = timer == nil ? 1 : 2
        socket.onRead = { [unowned self] result, bytes in received(result, bytes) }
        socket.onWriteCompleted = { [unowned self] status in writeCompleted(status) }
        socket.onShutdownCompleted = { [unowned self] status in shutdownCompleted(status) }
        timer?.onFire = { [unowned self] in timerFired() }
    }

    /// Starts reading; `admitted` false answers 503 and closes.
    func start(admitted: Bool) {
        if let tcp = socket as? LoopTCP {
            remoteAddress = tcp.peerName() ?? "unknown"
            // Small responses go out at once.
            tcp.setNoDelay()
        } else {
            // A Unix socket peer has no address worth logging or forwarding (its own
            // socket is usually unnamed).
            remoteAddress = "unix"
            peerCredentials = socket.peerCredentials()
        }
        guard timer != nil else {
            execute(step { m, _ in m.abort() })
            return
        }
        execute(step { m, now in m.start(admitted: admitted, now: now) })
    }

    /// Runs one event of the state machine with the loop's time and the server's state.
    func step(_ event: (inout StateMachine, UInt64) -> StateMachine.Actions) -> StateMachine.Actions {
        machine.serverDraining = registry.closing
        return event(&machine, loop.now)
    }

    // MARK: Reading

    /// A read: `result` bytes (in `bytes`, the loop's read buffer), or a negative libuv
    /// code at the end of the input or on an error.
    private func received(_ result: Int, _ bytes: UnsafeRawBufferPointer) {
        if let tunnel {
            tunnelRead(tunnel, result, bytes)
            return
        }
        if result < 0 {
            // EOF or error: a client that half-closes has nothing more to say.
            execute(step { m, _ in m.peerClosed() })
            return
        }
        guard !bytes.isEmpty else { return }
        execute(step { m, now in m.bytesReceived(now: now) }, input: bytes)
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
            // Consumed: the head is moved out of the event, not copied.
            switch consume event {
            case .needMoreData:
                if used == 0 { return offset }
            case .head(let h):
                head = h
                let intake = context.responder.intake(
                    for: h, from: RequestPeer(address: remoteAddress, credentials: peerCredentials),
                    limits: context.configuration.limits)
                intakeContext = intake.context
                execute(step { m, now in m.receivedHead(h, body: intake.body, now: now) })
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
        // Taken: the request holds the head from here, the connection needs it no more.
        guard let head = head.take() else { return }
        let writer = ResponseWriter(connection: bound, sequence: machine.sequence, isHeadRequest: head.isHead)
        let request = HTTPRequest(
            head: head, body: requestBody, remoteAddress: remoteAddress, peerCredentials: peerCredentials, loop: loop,
            context: intakeContext)
        intakeContext = nil
        context.responder.respond(to: request, writer: writer)
        // The parser handed the fields over, so a responder that answers from here (the
        // proxy: its upstream head is made by now) leaves this the only reference, and the
        // storage serves the next message parsed on this thread. A responder that keeps the
        // request keeps its fields: the spare is then shared when taken, and reallocated.
        request.head.headers.recycle()
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
        // Written out: the fields' storage can serve the next message parsed on this thread.
        headers.recycle()
    }

    func flushHeldHead() {
        execute(step { m, _ in m.flushHeldHead() })
    }

    /// ``boundSelf``, made when first asked for.
    private var bound: LoopBound<Connection> {
        if let made = boundSelf { return made }
        let made = LoopBound(self, loop: loop)
        boundSelf = made
        return made
    }

    /// The job that runs ``flushHeldHead()`` on the loop (see ``heldHeadJob``).
    func headFlushJob() -> @Sendable () -> Void {
        if let job = heldHeadJob { return job }
        let bound = bound
        let job: @Sendable () -> Void = { bound.value.flushHeldHead() }
        heldHeadJob = job
        return job
    }

    func writeBody(_ seq: Int, _ bytes: [UInt8], continuation: CheckedContinuation<Void, any Error>) {
        guard machine.isStreaming(seq) else {
            continuation.resume(throwing: RuntimeError.clientDisconnected)
            return
        }
        bytes.withUnsafeBytes { raw in execute(step { m, _ in m.writeBody(seq, raw) }, input: raw) }
        if isWritable {
            continuation.resume()
        } else {
            drainWaiters.append(continuation)
        }
    }

    /// Loop-only: writes body bytes now; false when the write queue is above its high-water mark.
    func writeBodyNow(_ seq: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard machine.isStreaming(seq) else { return true }
        execute(step { m, _ in m.writeBody(seq, bytes) }, input: bytes)
        return isWritable
    }

    /// Bytes queued for the client, not yet taken by the kernel (0 once the handles close).
    var queuedBytes: Int {
        handlesClosing ? 0 : socket.queuedBytes
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

    /// ``onClientGone(_:_:)`` for an upstream exchange: `transfer` is cancelled then.
    func cancelOnClientGone(_ seq: Int, _ transfer: any UpstreamTransfer) {
        guard machine.keepsGoneHandler(for: seq) else {
            transfer.cancel()
            return
        }
        goneTransfers.append(transfer)
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

    /// One handle's close callback ran; the connection leaves its registry after the last.
    func handleClosed() {
        openHandles -= 1
        guard openHandles == 0 else { return }
        heldHeadJob = nil
        boundSelf = nil
        context.connectionClosed()
        registry.remove(self)
    }
}
