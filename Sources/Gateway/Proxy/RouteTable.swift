public import HTTPWire
public import Runtime

/// The proxy's routes, built once: the longest matching prefix wins. Its decisions — which
/// route serves a path, and how that route reads a request's body — are pure, and tested
/// without sockets (`RouteTableTests`).
public struct RouteTable: Sendable {
    /// The routes, longest prefix first.
    public let routes: [ProxyRoute]

    /// Builds the table from routes in any order.
    public init(_ routes: [ProxyRoute]) {
        self.routes = routes.sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
    }

    /// The route for `path`, if any.
    public func route(for path: Substring) -> ProxyRoute? {
        index(for: path).map { routes[$0] }
    }

    /// The index in ``routes`` of the route for `path`, if any.
    public func index(for path: Substring) -> Int? {
        // Each route read in place: `firstIndex(where:)` hands its closure a copy, a retain
        // of every reference a route holds.
        routes.withUnsafeBufferPointer { routes in
            for i in routes.indices where routes[i].matches(path) { return i }
            return nil
        }
    }

    /// How a request on `route` with `framing` is read. A request without a body is handed
    /// on at once (an empty buffer). A chunked body is read first while it fits in
    /// `bufferLimit` bytes, so that malformed chunk framing is refused before anything (the
    /// head, and on an authenticated route the session's token) reaches the upstream; a
    /// small one also stays replayable. A body with a length is buffered on an
    /// authenticated route of a proxy that `replays` when it fits in `bufferLimit`, and
    /// streamed otherwise: its framing leaves nothing to check. Nil when there is no route:
    /// the caller's fallback decides.
    public static func bodyPolicy(route: ProxyRoute?, framing: BodyFraming, bufferLimit: Int, replays: Bool) -> BodyPolicy? {
        guard let route else { return nil }
        switch framing {
        // A request without a body has nothing to stream: it is handed on at once, and no
        // body stream is made for it (the upstream request has no body either way).
        case .none: return .buffer(maxBytes: 0)
        case .chunked: return .bufferUpTo(bufferLimit)
        case .length(let n):
            let buffers = replays && route.requiresAuthentication && n <= UInt64(bufferLimit)
            return buffers ? .buffer(maxBytes: bufferLimit) : .stream
        }
    }
}
