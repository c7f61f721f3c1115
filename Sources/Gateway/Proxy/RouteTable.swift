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
    /// on at once (an empty buffer); otherwise an authenticated route buffers what it could
    /// replay (a body of at most `replayLimit` bytes; nil: no authentication, so never) and
    /// streams the rest, and a public route streams. Nil when there is no route: the
    /// caller's fallback decides.
    public static func bodyPolicy(route: ProxyRoute?, framing: BodyFraming, replayLimit: Int?) -> BodyPolicy? {
        guard let route else { return nil }
        // A request without a body has nothing to stream: it is handed on at once, and no
        // body stream is made for it (the upstream request has no body either way).
        if framing == .none { return .buffer(maxBytes: 0) }
        guard route.requiresAuthentication, let replayLimit else { return .stream }
        switch framing {
        case .length(let n) where n <= UInt64(replayLimit): return .buffer(maxBytes: replayLimit)
        case .none, .length, .chunked: return .stream
        }
    }
}
