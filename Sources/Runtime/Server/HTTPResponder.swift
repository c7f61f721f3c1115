public import HTTPWire

/// How a route wants the request body.
public enum BodyPolicy: Sendable, Equatable {
    /// Read the whole body first, up to this many bytes (over → 413), then call the responder.
    case buffer(maxBytes: Int)
    /// Call the responder after the head; the body arrives through ``RequestBody/stream``.
    case stream
    /// Read the body first while it fits in this many bytes, so that a body whose framing is
    /// malformed is refused before the responder hears of the request: one that ends within
    /// the bound arrives as ``RequestBody/buffered(_:)``; a longer one arrives as
    /// ``RequestBody/stream(_:)`` once the bound is passed, starting with the bytes read so far.
    case bufferUpTo(Int)
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
    /// The peer's credentials on a Unix domain socket (``RequestPeer/credentials``); nil on TCP.
    public var peerCredentials: PeerCredentials? = nil
    /// The loop that owns the connection; a good executor for the work on this request.
    public var loop: EventLoop
    /// What the responder's ``HTTPResponder/intake(for:limits:)`` kept for this request when
    /// its head arrived (nil for a responder that keeps nothing).
    public var context: (any Sendable)?
}

/// What a responder decides when a request's head arrives: how its body is read, and a
/// value of its own it wants back when it answers (``HTTPRequest/context``), so that what it
/// found in the head (a route, a parsed target) is found once per request.
///
/// The server holds the value from the head to the call of
/// ``HTTPResponder/respond(to:writer:)`` and never looks into it. A value of at most three
/// words travels without an allocation.
public struct RequestIntake: Sendable {
    /// How the body is read.
    public var body: BodyPolicy
    /// Handed back in ``HTTPRequest/context``.
    public var context: (any Sendable)?

    /// An intake that reads the body as `body` says and keeps `context` for the answer.
    public init(body: BodyPolicy, context: (any Sendable)? = nil) {
        self.body = body
        self.context = context
    }
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
    /// What the server calls when a head arrives: the body policy and a value handed back
    /// with the request. The default is ``bodyPolicy(for:limits:)`` with nothing kept.
    func intake(for head: RequestHead, limits: HTTPLimits) -> RequestIntake
    /// ``intake(for:limits:)`` knowing who sent the request: what the server calls. The
    /// default ignores the peer.
    func intake(for head: RequestHead, from peer: RequestPeer, limits: HTTPLimits) -> RequestIntake
    /// Answers `request` through `writer`, exactly once.
    func respond(to request: HTTPRequest, writer: ResponseWriter)
}

extension HTTPResponder {
    /// Buffers the body up to the server's limit.
    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        .buffer(maxBytes: limits.maxBufferedBodyBytes)
    }

    /// ``bodyPolicy(for:limits:)``, with nothing kept for the answer.
    public func intake(for head: RequestHead, limits: HTTPLimits) -> RequestIntake {
        RequestIntake(body: bodyPolicy(for: head, limits: limits))
    }

    /// ``intake(for:limits:)``, whoever the peer is.
    public func intake(for head: RequestHead, from peer: RequestPeer, limits: HTTPLimits) -> RequestIntake {
        intake(for: head, limits: limits)
    }
}
