import CLibUV
import HTTPWire

/// Reading the response: parsing, delivery to the handler (paused while it refuses bytes),
/// and the end of the input, each outcome decided by the ``HTTP1Connection/StateMachine``.
extension HTTP1Connection {
    /// A read: `n` bytes, or a negative libuv code (`UV_EOF` at the end).
    func received(_ n: Int, _ bytes: UnsafeRawBufferPointer) {
        if n < 0 && isBusy {
            inputEnded(Int32(n), writing: false)
        } else {
            // Idle, anything (bytes or the end) closes the connection.
            execute(machine.bytesRead(now: now), input: n < 0 ? nil : bytes)
        }
    }

    /// Parses `bytes` and hands what they hold to the exchange's handler.
    func feed(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while let exchange, isBusy {
            let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += used
            // Consumed: the head's fields go to the handler as the only copy.
            switch consume event {
            case .needMoreData:
                if offset >= bytes.count || used == 0 { return }
            case .head(let status, let headers):
                if awaitingFirstAnswer { firstAnswerArrived() }
                exchange.activeHandler?.upstreamHead(status: status, headers: headers)
            case .body(let chunk):
                guard let handler = exchange.activeHandler else { continue }
                if !handler.upstreamBody(chunk) {
                    guard self.exchange === exchange else { return }
                    // Keep the refused bytes and the rest; read nothing more until resumed.
                    refused = Array(chunk)
                    stash = Array(bytes[offset...])
                    execute(machine.deliveryRefused(holdsInput: !stash.isEmpty))
                    return
                }
            case .end(let keepAlive):
                execute(machine.responseEnded(keepAlive: keepAlive && offset == bytes.count))
                return
            case .switched(let headers):
                handOver(exchange, headers, early: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                return
            case .error(let e):
                failureDetail = e.detail
                execute(machine.responseInvalid())
                return
            }
        }
    }

    /// The connection's first answer arrived: it proves to the pool's pace that the server
    /// accepted it. Kept out of ``feed(_:)`` (never inlined), so the loop a reused
    /// connection runs carries none of this.
    @inline(never)
    func firstAnswerArrived() {
        awaitingFirstAnswer = false
        pool.answered(self)
    }

    /// The handler takes bytes again.
    func resumeDelivery() {
        execute(machine.resumed(now: now))
    }

    /// Delivers the refused chunk again, then the bytes held after it, then reads on.
    func deliverHeld() {
        guard let bytes = refused, let exchange, let handler = exchange.activeHandler else { return }
        if !(bytes.withUnsafeBytes { handler.upstreamBody($0) }) { return }
        guard self.exchange === exchange, isBusy else { return }
        refused = nil
        let rest = stash
        stash = []
        machine.heldChunkTaken()
        rest.withUnsafeBytes { feed($0) }
        guard self.exchange === exchange else { return }
        execute(machine.heldInputParsed(parserStarted: parser.started, replayable: replayable))
    }

    /// The peer closed the connection or it failed (`code`: `UV_EOF` or a libuv error).
    func inputEnded(_ code: Int32, writing: Bool) {
        guard exchange != nil else { return }
        execute(machine.inputEnded(code: code, writing: writing, parserStarted: parser.started, replayable: replayable))
    }
}
