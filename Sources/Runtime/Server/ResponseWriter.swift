public import HTTPWire

/// Writes the response to one request. Usable from any thread or task; the work
/// happens on the connection's loop. Calls for a request whose connection has closed
/// are ignored.
public struct ResponseWriter: Sendable {
    let connection: LoopBound<Connection>
    let sequence: Int
    /// Whether the request was HEAD (the body is not sent, the headers are).
    public let isHeadRequest: Bool

    /// Sends a whole response with a `Content-Length` body.
    public func respond(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        let seq = sequence
        if let c = connection.valueIfOnLoop { return c.respond(seq, status: status, headers: headers, body: body) }
        connection.withValue { $0.respond(seq, status: status, headers: headers, body: body) }
    }

    /// Sends a problem+json response.
    public func respond(problem: Problem, headers: HTTPHeaders = HTTPHeaders()) {
        var h = headers
        h.replaceOrAdd(name: "Content-Type", value: Problem.contentType)
        respond(status: problem.status, headers: h, body: problem.json)
    }

    /// Starts a streamed response. Without `Content-Length` the body is chunked
    /// (HTTP/1.1) or delimited by closing the connection (HTTP/1.0).
    public func writeHead(status: Int, headers: HTTPHeaders = HTTPHeaders()) {
        let seq = sequence
        if let c = connection.valueIfOnLoop { return c.writeHead(seq, status: status, headers: headers) }
        connection.withValue { $0.writeHead(seq, status: status, headers: headers) }
    }

    /// Sends body bytes; returns once the connection's write queue is below its
    /// high-water mark. Throws ``RuntimeError/Code/clientDisconnected`` when the client is gone.
    public func writeBody(_ bytes: [UInt8]) async throws {
        let seq = sequence
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<Void, any Error>) in
            connection.withValue { $0.writeBody(seq, bytes, continuation: cont) }
        }
    }

    /// Ends a streamed response.
    public func end() {
        let seq = sequence
        if let c = connection.valueIfOnLoop { return c.end(seq) }
        connection.withValue { $0.end(seq) }
    }

    /// Loop-only: writes body bytes of a streamed response at once. Returns false when the
    /// client is behind; wait for ``whenWritable(_:)`` before writing more.
    public func writeBodyNow(_ bytes: UnsafeRawBufferPointer) -> Bool {
        connection.value.writeBodyNow(sequence, bytes)
    }

    /// Loop-only: whether the client keeps up (the write queue is below its high-water mark).
    public var isWritable: Bool { connection.value.isWritable }

    /// Loop-only: runs `handler` once the client has taken most of what was written.
    public func whenWritable(_ handler: @escaping () -> Void) {
        connection.value.whenWritable(sequence, handler)
    }

    /// Loop-only: answers an upgrade request with the upstream's `101 Switching Protocols`
    /// and splices the client connection to `tunnel` (``Splice``): bytes both ways with
    /// backpressure, each side's end passed on to the other, both closed after `idleTimeout`
    /// without a byte moving. `headers` go out with the `101` as given (with their
    /// `Connection` and `Upgrade`). `onEnd` hears why the splice ended (`finished`,
    /// `idle-timeout`, `client-failed`, `upstream-failed`). Returns false, and closes
    /// `tunnel`, when the client connection cannot switch (it is gone, or a response began).
    @discardableResult
    public func switchProtocols(
        headers: HTTPHeaders, to tunnel: UpstreamTunnel, idleTimeout: Duration, onEnd: @escaping (String) -> Void = { _ in }
    ) -> Bool {
        var h = headers
        h.remove(name: "Content-Length")
        h.remove(name: "Transfer-Encoding")
        var head: [UInt8] = []
        ResponseHead(status: 101, headers: h).serialize(into: &head)
        let switched = connection.value.switchProtocols(
            sequence, head: head, upstream: tunnel, idleTimeout: idleTimeout, onEnd: { onEnd($0.name) })
        if !switched { tunnel.close() }
        return switched
    }

    /// Closes the connection at once, for a response that cannot be completed (the
    /// upstream died mid-body): the client sees a truncated message, never a wrong one.
    public func abort() {
        let seq = sequence
        connection.withValue { c in if c.isCurrent(seq) { c.abort() } }
    }

    /// Runs `handler` on the loop if the connection closes before this response ends
    /// (the client went away); use it to cancel upstream work.
    public func onClientGone(_ handler: @escaping @Sendable () -> Void) {
        let seq = sequence
        if let c = connection.valueIfOnLoop { return c.onClientGone(seq, handler) }
        connection.withValue { $0.onClientGone(seq, handler) }
    }

    /// Loop-only: cancels `transfer` if the connection closes before this response ends
    /// (the client went away). What ``onClientGone(_:)`` does for an upstream exchange
    /// started on the loop, without a closure and a loop-bound box for each request.
    public func cancelOnClientGone(_ transfer: any UpstreamTransfer) {
        connection.value.cancelOnClientGone(sequence, transfer)
    }
}
