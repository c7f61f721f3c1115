import CLibUV
import HTTPWire

extension Connection {
    /// Runs the actions of one event in order. `input` is the bytes the event was about
    /// (a read, or a body chunk). Writes that left at once are reported back as completed
    /// after the other actions, as the state machine expects.
    func execute(_ actions: [StateMachine.Action], input: UnsafeRawBufferPointer? = nil) {
        var sentNow = 0
        for action in actions {
            // Once the handles are closing no I/O is started and no request is handed on;
            // bookkeeping (the budget, waiters, handlers) still runs.
            if handlesClosing && action.startsIO { continue }
            switch action {
            case .write(let bytes):
                if bytes.withUnsafeBytes({ send($0) }) == .sent { sentNow += 1 }
            case .pauseReading:
                stopReading()
            case .resumeReading:
                startReading()
            case .consumeInput:
                if let input { consumeInput(input) }
            case .drainPending:
                if !processing { drainPending() }
            case .armTimer(_, let deadline):
                let now = uv_now(loop.uv)
                armTimer(deadline > now ? deadline - now : 0)
            case .cancelTimer:
                stopTimer()
            case .resetExchange:
                body = []
                stream = nil
                goneHandlers = []
            case .deliverStreaming:
                let s = BodyStream(loop: loop, highWater: context.configuration.bodyHighWater)
                s.setOnDrain { [unowned self] in self.execute(self.step { m, now in m.streamDrained(now: now) }) }
                stream = s
                dispatch(.stream(s))
            case .deliverBuffered:
                let b = body
                body = []
                dispatch(.buffered(b))
            case .appendToStream:
                guard let input, let stream else { break }
                stream.append(input)
                if stream.isFull { execute(step { m, _ in m.streamFull() }) }
            case .bufferBody(let reserve):
                guard let input else { break }
                if let reserve, let budget = context.configuration.bufferBudget, !budget.reserve(reserve) {
                    execute(step { m, now in m.budgetRefused(reserve, now: now) })
                    break
                }
                body.append(contentsOf: input)
            case .finishBodyStream:
                stream?.finish()
            case .failBodyStream(let why):
                switch why {
                case .wire(let error): stream?.fail(error)
                case .clientDisconnected: stream?.fail(ClientDisconnected())
                }
                stream = nil
            case .releaseBudget(let n):
                context.configuration.bufferBudget?.release(n)
            case .scheduleHeadFlush:
                let bound = LoopBound(self, loop: loop)
                loop.execute { bound.value.flushHeldHead() }
            case .resumeWriters:
                resumeWriters()
            case .failWriters:
                let waiters = drainWaiters
                drainWaiters = []
                for w in waiters { w.resume(throwing: ClientDisconnected()) }
                writableHandlers = []
            case .notifyGone:
                let handlers = goneHandlers
                goneHandlers = []
                for h in handlers { h() }
            case .shutdownWrite:
                shutdownWrite()
            case .close:
                closeHandles()
            }
        }
        for _ in 0..<sentNow {
            let queued = queuedBytes
            execute(step { m, now in m.writeCompleted(failed: false, queuedBytes: queued, now: now) })
        }
    }

    private func resumeWriters() {
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

    /// A libuv call failed: remember the first failure and close at once.
    private func failed(_ error: UVError) {
        if failure == nil { failure = error }
        execute(step { m, _ in m.abort() })
    }

    /// Whether `rc` is success; a libuv error closes the connection.
    @discardableResult
    private func checked(_ rc: Int32, _ operation: String) -> Bool {
        do throws(UVError) {
            try UVError.check(rc, operation)
            return true
        } catch {
            failed(error)
            return false
        }
    }

    // MARK: Reading

    func startReading() {
        let rc = uv_read_start(
            stream_t,
            { handle, _, buf in
                // Invariants: libuv passes the handle being read and a buffer descriptor to
                // fill, and the loop's read buffer exists for the loop's whole life.
                let c = Connection.from(handle!.pointee.data)
                buf!.pointee = uv_buf_init(
                    c.loop.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(c.loop.readBuffer.count))
            },
            { stream, nread, buf in
                // Invariant: libuv passes the handle being read and the buffer it filled.
                Connection.from(stream!.pointee.data).onRead(nread, buf!.pointee.base)
            })
        checked(rc, "uv_read_start")
    }

    func stopReading() {
        checked(uv_read_stop(stream_t), "uv_read_stop")
    }

    // MARK: Writing

    private final class WriteRequest {
        let buffer: UnsafeMutableRawBufferPointer
        init(_ bytes: UnsafeRawBufferPointer) {
            buffer = .allocate(byteCount: bytes.count, alignment: 1)
            buffer.copyBytes(from: bytes)
        }
        deinit { buffer.deallocate() }
    }

    /// Sends `bytes`: whether they all left at once, were queued (a completion follows) or
    /// the write failed. A failure on an HTTP connection is reported to the state machine; a
    /// spliced one's caller hears it.
    func send(_ bytes: UnsafeRawBufferPointer) -> SpliceWriteResult {
        var offset = 0
        if writeRequests == 0 {
            // Nothing queued: try to send at once. A refusal (UV_EAGAIN, or an error that
            // uv_write meets again and reports) leaves everything to uv_write.
            // Invariant: neither the state machine nor a splice asks for an empty write.
            var buf = uv_buf_init(
                UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: CChar.self)), UInt32(bytes.count))
            let n = uv_try_write(stream_t, &buf, 1)
            if n > 0 { offset = Int(n) }
            if offset == bytes.count { return .sent }
        }
        let request = WriteRequest(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        let req = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        req.pointee.data = Unmanaged.passRetained(request).toOpaque()
        // Invariant: the request's buffer holds at least one byte, so its address is not nil.
        var buf = uv_buf_init(request.buffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(request.buffer.count))
        let rc = uv_write(req, stream_t, &buf, 1) { req, status in
            // Invariant: libuv passes back the request it was given, whose `data` holds the
            // retained buffer and whose handle is this connection's stream.
            Unmanaged<WriteRequest>.fromOpaque(req!.pointee.data).release()
            let c = Connection.from(req!.pointee.handle.pointee.data)
            req!.deallocate()
            c.writeCompleted(status)
        }
        if rc < 0 {
            Unmanaged<WriteRequest>.fromOpaque(req.pointee.data).release()
            req.deallocate()
            if failure == nil { failure = UVError(code: rc, operation: "uv_write") }
            if tunnel != nil { return .failed }
            let queued = queuedBytes
            execute(step { m, now in m.writeCompleted(failed: true, queuedBytes: queued, now: now) })
            return .failed
        }
        writeRequests += 1
        return .queued
    }

    private func writeCompleted(_ status: Int32) {
        writeRequests -= 1
        if let tunnel {
            tunnel.writeCompleted(.client, failed: status < 0)
            return
        }
        if status < 0, failure == nil, status != UV_ECANCELED.rawValue {
            failure = UVError(code: status, operation: "write")
        }
        let queued = queuedBytes
        execute(step { m, now in m.writeCompleted(failed: status < 0, queuedBytes: queued, now: now) })
    }

    /// Shuts down the sending side once the queued writes are out.
    private func shutdownWrite() {
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        // Invariant: libuv passes back the request it was given.
        let rc = uv_shutdown(req, stream_t) { req, _ in req!.deallocate() }
        if rc != 0 {
            req.deallocate()
            if failure == nil { failure = UVError(code: rc, operation: "uv_shutdown") }
            execute(step { m, _ in m.shutdownFailed() })
        }
    }

    // MARK: Timer

    private func armTimer(_ ms: UInt64) {
        // Invariant: the timer's `data` is this connection (set in `init`).
        let rc = uv_timer_start(timer, { t in Connection.from(t!.pointee.data).timerFired() }, ms, 0)
        checked(rc, "uv_timer_start")
    }

    private func stopTimer() {
        checked(uv_timer_stop(timer), "uv_timer_stop")
    }

    private func timerFired() {
        execute(step { m, now in m.timerFired(now: now) })
    }

    // MARK: Closing

    /// Closes both handles; the connection is released when both close callbacks ran.
    private func closeHandles() {
        guard !handlesClosing else { return }
        handlesClosing = true
        if let splice = tunnel {
            // Closed from outside the splice (the server stopping): the upstream side closes too.
            tunnel = nil
            splice.closedOutside(.client)
        }
        // uv_close stops reading and the timer itself; what is still queued is cancelled.
        // Invariant: libuv passes each close callback the handle being closed.
        uv_close(UnsafeMutablePointer(OpaquePointer(stream_t))) { h in Connection.from(h!.pointee.data).handleClosed() }
        if timerReady {
            uv_close(UnsafeMutablePointer(OpaquePointer(timer))) { h in Connection.from(h!.pointee.data).handleClosed() }
        }
    }
}

extension Connection.StateMachine.Action {
    /// Whether the action starts I/O or hands a request on (skipped once the handles close).
    fileprivate var startsIO: Bool {
        switch self {
        case .write, .pauseReading, .resumeReading, .consumeInput, .drainPending, .armTimer, .cancelTimer, .deliverStreaming,
            .deliverBuffered, .appendToStream, .bufferBody, .finishBodyStream, .scheduleHeadFlush, .shutdownWrite:
            true
        case .resetExchange, .failBodyStream, .releaseBudget, .resumeWriters, .failWriters, .notifyGone, .close:
            false
        }
    }
}
