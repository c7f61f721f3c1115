import HTTPWire

extension Connection {
    /// Runs the actions of one event in order. `input` is the bytes the event was about
    /// (a read, or a body chunk). Writes that left at once are reported back as completed
    /// after the other actions, as the state machine expects.
    func execute(_ actions: StateMachine.Actions, input: UnsafeRawBufferPointer? = nil) {
        var sentNow = 0
        // By index: an iterator would hold a copy of the list.
        for i in actions.indices {
            let action = actions[i]
            // Once the handles are closing no I/O is started and no request is handed on;
            // bookkeeping (the budget, waiters, handlers) still runs.
            if handlesClosing && action.startsIO { continue }
            switch action {
            case .write(let bytes):
                if bytes.withUnsafeBytes({ send($0) }) == .sent { sentNow += 1 }
            case .writeInput:
                // Invariant: only ``writeBodyNow(_:_:)`` and ``writeBody(_:_:continuation:)``
                // run the events that return it, with the body bytes as input.
                guard let input else { preconditionFailure("writeInput without input") }
                if send(input) == .sent { sentNow += 1 }
            case .pauseReading:
                stopReading()
            case .resumeReading:
                startReading()
            case .consumeInput:
                if let input { consumeInput(input) }
            case .drainPending:
                if !processing { drainPending() }
            case .armTimer(_, let deadline):
                armTimer(at: deadline)
            case .cancelTimer:
                timer?.disarm()
            case .resetExchange:
                body = []
                stream = nil
                // The list's room is kept: nearly every proxied request adds one handler,
                // and the next would allocate it again.
                goneHandlers.removeAll(keepingCapacity: true)
                goneTransfers.removeAll(keepingCapacity: true)
            case .deliverStreaming:
                let s = BodyStream(loop: loop, highWater: context.configuration.bodyHighWater)
                s.setOnDrain(streamDrained)
                // A body read up to its bound (``BodyPolicy/bufferUpTo(_:)``) starts the stream.
                if !body.isEmpty {
                    body.withUnsafeBytes { s.append($0) }
                    body = []
                }
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
                case .clientDisconnected: stream?.fail(RuntimeError.clientDisconnected)
                }
                stream = nil
            case .releaseBudget(let n):
                context.configuration.bufferBudget?.release(n)
            case .scheduleHeadFlush:
                loop.execute(headFlushJob())
            case .resumeWriters:
                resumeWriters()
            case .failWriters:
                let waiters = drainWaiters
                drainWaiters = []
                for w in waiters { w.resume(throwing: RuntimeError.clientDisconnected) }
                writableHandlers = []
            case .notifyGone:
                let handlers = goneHandlers
                let transfers = goneTransfers
                goneHandlers = []
                goneTransfers = []
                for h in handlers { h() }
                for t in transfers { t.cancel() }
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
    private func failed(_ error: RuntimeError) {
        if failure == nil { failure = error }
        execute(step { m, _ in m.abort() })
    }

    // MARK: Reading

    func startReading() {
        do throws(RuntimeError) {
            try socket.startReading()
        } catch {
            failed(error)
        }
    }

    func stopReading() {
        socket.stopReading()
    }

    // MARK: Writing

    /// Sends `bytes`: whether they all left at once, were queued (a completion follows) or
    /// the write failed. A failure on an HTTP connection is reported to the state machine; a
    /// spliced one's caller hears it.
    func send(_ bytes: UnsafeRawBufferPointer) -> SpliceWriteResult {
        do throws(RuntimeError) {
            return try socket.write(bytes) ? .sent : .queued
        } catch {
            if failure == nil { failure = error }
            if tunnel != nil { return .failed }
            let queued = queuedBytes
            execute(step { m, now in m.writeCompleted(failed: true, queuedBytes: queued, now: now) })
            return .failed
        }
    }

    /// A queued write completed (`UV_ECANCELED` never arrives: closing drops the callback).
    func writeCompleted(_ status: Int32) {
        if let tunnel {
            tunnel.writeCompleted(.client, failed: status < 0)
            return
        }
        if status < 0, failure == nil { failure = .libuv(status, "write") }
        let queued = queuedBytes
        execute(step { m, now in m.writeCompleted(failed: status < 0, queuedBytes: queued, now: now) })
    }

    /// Shuts down the sending side once the queued writes are out (before lingering).
    private func shutdownWrite() {
        do throws(RuntimeError) {
            try socket.shutdown()
        } catch {
            if failure == nil { failure = error }
            execute(step { m, _ in m.shutdownFailed() })
        }
    }

    /// A shutdown completed: only a spliced connection's splice waits for it.
    func shutdownCompleted(_ status: Int32) {
        tunnel?.shutdownCompleted(.client, failed: status < 0)
    }

    // MARK: Timer

    /// Arms the timer for `deadline` (loop milliseconds). A deadline later than the one the
    /// timer was started for (the keep-alive deadline after each request) moves nothing in
    /// libuv: ``LoopTimer/arm(at:)``.
    private func armTimer(at deadline: UInt64) {
        do throws(RuntimeError) {
            try timer?.arm(at: deadline)
        } catch {
            failed(error)
        }
    }

    func timerFired() {
        execute(step { m, now in m.timerFired(now: now) })
    }

    // MARK: Closing

    /// Closes both handles; the connection leaves its registry when both close callbacks
    /// ran. Closing stops reading and the timer; what is still queued is cancelled.
    private func closeHandles() {
        guard !handlesClosing else { return }
        handlesClosing = true
        if let splice = tunnel {
            // Closed from outside the splice (the server stopping): the upstream side closes too.
            tunnel = nil
            splice.closedOutside(.client)
        }
        socket.close { [self] in handleClosed() }
        timer?.close { [self] in handleClosed() }
    }
}

extension Connection.StateMachine.Action {
    /// Whether the action starts I/O or hands a request on (skipped once the handles close).
    fileprivate var startsIO: Bool {
        switch self {
        case .write, .writeInput, .pauseReading, .resumeReading, .consumeInput, .drainPending, .armTimer, .cancelTimer,
            .deliverStreaming,
            .deliverBuffered, .appendToStream, .bufferBody, .finishBodyStream, .scheduleHeadFlush, .shutdownWrite:
            true
        case .resetExchange, .failBodyStream, .releaseBudget, .resumeWriters, .failWriters, .notifyGone, .close:
            false
        }
    }
}
