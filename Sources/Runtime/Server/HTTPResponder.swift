public import HTTPWire

/// How a route wants the request body.
public enum BodyPolicy: Sendable, Equatable {
    /// Read the whole body first, up to this many bytes (over → 413), then call the responder.
    case buffer(maxBytes: Int)
    /// Call the responder after the head; the body arrives through ``RequestBody/stream``.
    case stream
}

/// The body of a request as the responder sees it.
public enum RequestBody: Sendable {
    /// The whole body, read before the responder was called.
    case buffered([UInt8])
    /// The body as it arrives, with backpressure.
    case stream(BodyStream)
}

/// A request handed to a responder.
public struct HTTPRequest: Sendable {
    /// The validated head.
    public var head: RequestHead
    /// The body.
    public var body: RequestBody
    /// The peer's address: `ip:port` (`[ip]:port` for IPv6), or `unix` for a client of a
    /// Unix domain socket, which has no address.
    public var remoteAddress: String
    /// The loop that owns the connection; a good executor for the work on this request.
    public var loop: EventLoop
}

/// Answers requests. Called on the connection's loop thread; it may answer at once
/// through the writer, or later from any task or thread.
///
/// ```swift
/// struct Hello: HTTPResponder {
///     func respond(to request: HTTPRequest, writer: ResponseWriter) {
///         writer.respond(status: 200, body: Array("hello".utf8))
///     }
/// }
/// ```
public protocol HTTPResponder: Sendable {
    /// Decides how the body of `head` is read. The default buffers up to the server limit.
    func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy
    /// Answers `request` through `writer`, exactly once.
    func respond(to request: HTTPRequest, writer: ResponseWriter)
}

extension HTTPResponder {
    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        .buffer(maxBytes: limits.maxBufferedBodyBytes)
    }
}
