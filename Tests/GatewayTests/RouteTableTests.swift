import Gateway
import HTTPWire
import Runtime
import Testing

/// The proxy's route choice and body policy, as values: no socket involved.
@Suite struct RouteTableTests {
    static func route(_ prefix: String, authenticated: Bool = true) -> ProxyRoute {
        ProxyRoute(prefix: prefix, upstream: UpstreamOrigin("http://127.0.0.1:9")!, requiresAuthentication: authenticated)
    }

    static let table = RouteTable([
        route("/"), route("/api"), route("/api/public", authenticated: false), route("/static/", authenticated: false),
    ])

    @Test(arguments: [
        ("/", "/"), ("/x", "/"), ("/api", "/api"), ("/api/", "/api"), ("/api/orders", "/api"),
        ("/apix", "/"), ("/api/public", "/api/public"), ("/api/public/a", "/api/public"), ("/api/publicx", "/api"),
        ("/static/", "/static/"), ("/static/a.css", "/static/"), ("/static", "/"),
    ])
    func theLongestPrefixAtASegmentBoundaryWins(path: String, prefix: String) {
        #expect(Self.table.route(for: Substring(path))?.prefix == prefix)
    }

    @Test func aRouteIsAValueThoughItsSettingsAreShared() {
        let original = ProxyRoute(prefix: "/api/", upstream: UpstreamOrigin("http://127.0.0.1:9")!, requiresAuthentication: true)
        var changed = original
        #expect(changed == original)
        changed.prefix = "/v2/"
        changed.maxInFlight = 4
        changed.injectHeaders = HTTPHeaders([("X-Team", "a")])
        #expect(original.prefix == "/api/" && original.maxInFlight == nil && original.injectHeaders.count == 0)
        #expect(changed.prefix == "/v2/" && changed.maxInFlight == 4 && changed.injectHeaders[first: "x-team"] == "a")
        #expect(changed.requiresAuthentication && !changed.forwardClientAuthorization && changed.session == "default")
        #expect(changed != original)
        var back = changed
        back.prefix = "/api/"
        back.maxInFlight = nil
        back.injectHeaders = HTTPHeaders()
        #expect(back == original, "equal settings in different boxes are equal")
    }

    @Test func noRouteWhenNothingMatches() {
        let table = RouteTable([Self.route("/api")])
        #expect(table.route(for: "/") == nil)
        #expect(table.route(for: "/apis") == nil)
        #expect(RouteTable.bodyPolicy(route: nil, framing: .length(5), bufferLimit: 100, replays: true) == nil)
    }

    @Test(arguments: [
        // (authenticated, buffer limit, replays, framing, policy)
        (true, 100, true, BodyFraming.none, BodyPolicy.buffer(maxBytes: 0)),
        (true, 100, true, .length(0), .buffer(maxBytes: 100)),
        (true, 100, true, .length(100), .buffer(maxBytes: 100)),
        (true, 100, true, .length(101), .stream),
        (true, 100, true, .chunked, .bufferUpTo(100)),
        (true, 0, true, .length(1), .stream),
        (true, 0, true, .chunked, .bufferUpTo(0)),
        (true, 100, false, .length(1), .stream),
        (true, 100, false, .chunked, .bufferUpTo(100)),
        (true, 100, false, .none, .buffer(maxBytes: 0)),
        (false, 100, true, .length(5), .stream),
        (false, 100, true, .none, .buffer(maxBytes: 0)),
        (false, 100, false, .none, .buffer(maxBytes: 0)),
        (false, 100, true, .chunked, .bufferUpTo(100)),
    ])
    func aChunkedBodyIsCheckedFirstAndAnAuthenticatedRouteBuffersWhatItCouldReplay(
        authenticated: Bool, bufferLimit: Int, replays: Bool, framing: BodyFraming, policy: BodyPolicy
    ) {
        let route = Self.route("/", authenticated: authenticated)
        #expect(RouteTable.bodyPolicy(route: route, framing: framing, bufferLimit: bufferLimit, replays: replays) == policy)
    }
}
