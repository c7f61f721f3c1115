import HTTPWire

extension Connection.StateMachine {
    /// Whether `sequence` names the request being answered on an open connection.
    func isCurrent(_ sequence: Int) -> Bool {
        sequence == self.sequence && phase != .closed && exchange != nil
    }

    /// Whether `sequence` names the request whose streamed response is under way.
    func isStreaming(_ sequence: Int) -> Bool {
        guard isCurrent(sequence), case .streaming = exchange?.response else { return false }
        return true
    }

    /// Whether a client-gone handler for `sequence` is kept (else it runs at once).
    func keepsGoneHandler(for sequence: Int) -> Bool {
        phase != .closed && sequence == self.sequence
    }

    /// Whether the client keeps up with `queuedBytes` in libuv's write queue.
    func isWritable(queuedBytes: Int) -> Bool {
        phase == .closed || queuedBytes <= configuration.writeHighWater
    }

    /// Whether a writable handler runs at once (else it waits for the queue to drain).
    func runsWritableHandlerNow(queuedBytes: Int) -> Bool {
        isWritable(queuedBytes: queuedBytes) && writesInFlight == 0
    }

    // MARK: Responses

    /// A whole response with a `Content-Length` body.
    mutating func respond(
        _ sequence: Int, status: Int, headers: HTTPHeaders, body: [UInt8], now: UInt64
    ) -> Actions {
        guard isCurrent(sequence), var ex = exchange, ex.response == .none else { return [] }
        var h = headers
        h.remove(name: "Content-Length")
        h.remove(name: "Transfer-Encoding")
        h.remove(name: "Connection")
        let hasBody = ResponseHead.allowsBody(status: status)
        if !ex.requestEnded { ex.keepAlive = false }
        var out: [UInt8] = []
        out.reserveCapacity(128 + h.count * 32 + body.count)
        Self.serialize(
            status: status, headers: h, into: &out, contentLength: hasBody ? body.count : nil, chunked: false,
            close: !ex.keepAlive, announceKeepAlive: !ex.isHTTP11)
        if hasBody && !ex.isHead { out.append(contentsOf: body) }
        ex.response = .done
        exchange = ex
        var actions = Actions()
        write(out, &actions)
        responseDone(now: now, &actions)
        return actions
    }

    /// The head of a streamed response. Without `Content-Length` the body is chunked
    /// (HTTP/1.1) or delimited by closing the connection (HTTP/1.0).
    mutating func writeHead(_ sequence: Int, status: Int, headers: HTTPHeaders) -> Actions {
        guard isCurrent(sequence), var ex = exchange, ex.response == .none else { return [] }
        let bodyless = ex.isHead || !ResponseHead.allowsBody(status: status)
        // One pass over the fields writes them, leaves out `Transfer-Encoding` and
        // `Connection` (this machine decides the framing) and sees a `Content-Length`.
        var hasLength = false
        // A 1xx or 204 never announces a length (RFC 9110 §8.6), whatever the responder says.
        let lengthAllowed = status >= 200 && status != 204
        var out: [UInt8] = []
        out.reserveCapacity(headers.byteCount + 128)
        ResponseHead(status: status, headers: headers).serialize(into: &out) { name in
            switch name.count {
            case 10: return HTTPHeaders.equalsIgnoringCase(name, "connection")
            case 14:
                guard HTTPHeaders.equalsIgnoringCase(name, "content-length") else { return false }
                hasLength = true
                return !lengthAllowed
            case 17: return HTTPHeaders.equalsIgnoringCase(name, "transfer-encoding")
            default: return false
            }
        }
        var chunked = false
        if !bodyless && !hasLength {
            if ex.isHTTP11 {
                chunked = true
            } else {
                ex.keepAlive = false
            }
        }
        Self.appendFraming(
            into: &out, contentLength: nil, chunked: chunked, close: !ex.keepAlive, announceKeepAlive: !ex.isHTTP11)
        // Held until the first body bytes or the end of this loop turn, so a small
        // response leaves in one write.
        heldHead = out
        ex.response = .streaming(chunked: chunked, bodyless: bodyless)
        exchange = ex
        return Actions(.scheduleHeadFlush)
    }

    /// The upstream switched protocols for the current request: no response is written by
    /// this machine (the splice sends the `101`), the timer stops, and the connection is
    /// spliced until it closes. Refused (nothing changes, false) unless the request was read
    /// to its end, nothing of a response was written and no write is in flight.
    mutating func switchProtocols(_ sequence: Int) -> (accepted: Bool, actions: Actions) {
        guard phase == .open, isCurrent(sequence), var ex = exchange, ex.response == .none, ex.requestEnded,
            writesInFlight == 0, heldHead == nil
        else { return (false, []) }
        ex.response = .done
        ex.keepAlive = false
        exchange = ex
        phase = .tunnel
        var actions = Actions()
        setTimer(.none, now: 0, &actions)
        return (true, actions)
    }

    /// The end of the loop turn that held a response head: send it if still held.
    mutating func flushHeldHead() -> Actions {
        var actions = Actions()
        if heldHead != nil { write([], &actions) }
        return actions
    }

    /// Body bytes of the current streamed response (framed as a chunk when chunked).
    mutating func writeBody(_ sequence: Int, _ bytes: UnsafeRawBufferPointer) -> Actions {
        guard isStreaming(sequence), case .streaming(let chunked, let bodyless) = exchange?.response, !bodyless,
            !bytes.isEmpty
        else { return [] }
        var actions = Actions()
        if chunked {
            // One buffer: the held head (if any), the chunk size line, the bytes, the CRLF.
            var out = takeHeldHead(reserving: 18 + bytes.count)
            Self.appendChunkHeader(bytes.count, to: &out)
            out.append(contentsOf: bytes)
            out.append(0x0D)
            out.append(0x0A)
            write(out, &actions)
        } else if heldHead != nil {
            var out = takeHeldHead(reserving: bytes.count)
            out.append(contentsOf: bytes)
            write(out, &actions)
        } else if phase != .closed {
            // The caller's bytes go out as they are.
            writesInFlight += 1
            actions.append(.writeInput)
        }
        return actions
    }

    /// The end of the current streamed response.
    mutating func end(_ sequence: Int, now: UInt64) -> Actions {
        guard isStreaming(sequence), var ex = exchange, case .streaming(let chunked, let bodyless) = ex.response
        else { return [] }
        var actions = Actions()
        if chunked && !bodyless { write(ChunkedEncoding.terminator, &actions) } else if heldHead != nil { write([], &actions) }
        ex.response = .done
        exchange = ex
        responseDone(now: now, &actions)
        return actions
    }

    // MARK: Writing

    /// A write returned by an earlier event finished; `queuedBytes` is what libuv's write
    /// queue still holds.
    mutating func writeCompleted(failed: Bool, queuedBytes: Int, now: UInt64) -> Actions {
        guard phase != .closed else { return [] }
        writesInFlight -= 1
        var actions = Actions()
        if failed {
            close(&actions)
            return actions
        }
        if queuedBytes <= configuration.writeHighWater / 2 { actions.append(.resumeWriters) }
        closeIfFlushed(now: now, &actions)
        return actions
    }

    /// Answers a request that cannot be served with problem+json and closes.
    mutating func fail(_ error: WireError, now: UInt64, _ actions: inout Actions) {
        guard phase == .open else { return }
        if var ex = exchange {
            if ex.hasStream { actions.append(.failBodyStream(.wire(error))) }
            ex.hasStream = false
            exchange = ex
        }
        if (exchange?.response ?? ResponseState.none) == ResponseState.none {
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: Problem.contentType)
            h.add(name: "Content-Length", value: String(error.problem.json.count))
            h.add(name: "Connection", value: "close")
            var out: [UInt8] = []
            ResponseHead(status: error.status, headers: h).serialize(into: &out)
            if exchange?.isHead != true { out.append(contentsOf: error.problem.json) }
            write(out, &actions)
            exchange?.response = .done
        }
        pauseReading(&actions)
        phase = .closingAfterFlush
        closeIfFlushed(now: now, &actions)
    }

    mutating func write(_ payload: [UInt8], _ actions: inout Actions) {
        guard phase != .closed else { return }
        var bytes = payload
        if heldHead != nil {
            bytes = takeHeldHead(reserving: payload.count)
            bytes.append(contentsOf: payload)
        }
        guard !bytes.isEmpty else { return }
        writesInFlight += 1
        actions.append(.write(bytes))
    }

    /// The held response head (or nothing), with room for `extra` more bytes; nothing is held
    /// afterwards. The head's buffer is grown in place when it is too small.
    private mutating func takeHeldHead(reserving extra: Int) -> [UInt8] {
        var out = heldHead ?? []
        heldHead = nil
        out.reserveCapacity(out.count + extra)
        return out
    }

    private mutating func responseDone(now: UInt64, _ actions: inout Actions) {
        guard let ex = exchange else { return }
        if !ex.keepAlive || !ex.requestEnded {
            // The body was not read to its end: the connection cannot be reused.
            phase = .closingAfterFlush
            closeIfFlushed(now: now, &actions)
            return
        }
        finishExchange(now: now, &actions)
    }

    /// The exchange is over: get ready for the next request.
    private mutating func finishExchange(now: UInt64, _ actions: inout Actions) {
        if let ex = exchange, ex.reserved > 0 { actions.append(.releaseBudget(ex.reserved)) }
        exchange = nil
        consumerBehind = false
        actions.append(.resetExchange)
        if serverDraining {
            phase = .closingAfterFlush
            closeIfFlushed(now: now, &actions)
            return
        }
        setTimer(pendingBytes == 0 ? .keepAlive : .head, now: now, &actions)
        actions.append(.drainPending)
    }

    private mutating func closeIfFlushed(now: UInt64, _ actions: inout Actions) {
        guard phase == .closingAfterFlush, writesInFlight == 0 else { return }
        linger(now: now, &actions)
    }

    /// Closes gracefully after a response: shut down the sending side, then read and
    /// discard for a moment. Closing at once with unread bytes would send a reset, and a
    /// reset can destroy the response before the client reads it (a 413 or 431 answered
    /// while the client is still sending, a pipelined request after `Connection: close`).
    private mutating func linger(now: UInt64, _ actions: inout Actions) {
        phase = .lingering
        actions.append(.shutdownWrite)
        resumeReading(now: now, &actions)
        setTimer(.linger, now: now, &actions)
    }
}
