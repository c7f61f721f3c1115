import CLibUV
import HTTPWire

/// Reading the response: parsing, delivery to the handler (paused while it refuses bytes),
/// and the end of the input.
extension HTTP1Connection {
    /// A read: `n` bytes, or a negative libuv code (`UV_EOF` at the end).
    func received(_ n: Int, _ bytes: UnsafeRawBufferPointer) {
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
    func feed(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while let exchange, state == .busy {
            let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += used
            // Consumed: the head's fields go to the handler as the only copy.
            switch consume event {
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
            try tcp.startReading()
        } catch {
            fail(.upstream(.upstreamFailed, "the upstream connection cannot be read", underlying: error))
        }
    }

    /// The peer closed the connection or it failed (`code`: `UV_EOF` or a libuv error).
    func inputEnded(_ code: Int32, writing: Bool) {
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
}
