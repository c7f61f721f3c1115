import Gateway
import HTTPWire
import Runtime
import Testing

/// The proxy's route choice and body policy, as values: no socket involved.
@Suite struct RouteTableTests {
    static func route(_ prefix: String, authenticated: Bool = true) -> ProxyRoute {
        ProxyRoute(prefix: prefix, upstream: UpstreamBase("http://127.0.0.1:9")!, requiresAuthentication: authenticated)
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
        let original = ProxyRoute(prefix: "/api/", upstream: UpstreamBase("http://127.0.0.1:9")!, requiresAuthentication: true)
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
        #expect(RouteTable.bodyPolicy(route: nil, framing: .length(5), replayLimit: 100) == nil)
    }

    @Test(arguments: [
        // (authenticated, replay limit, framing, policy)
        (true, 100 as Int?, BodyFraming.none, BodyPolicy.buffer(maxBytes: 0)),
        (true, 100, .length(0), .buffer(maxBytes: 100)),
        (true, 100, .length(100), .buffer(maxBytes: 100)),
        (true, 100, .length(101), .stream),
        (true, 100, .chunked, .stream),
        (true, 0, .length(1), .stream),
        (true, nil, .length(1), .stream),
        (true, nil, .none, .buffer(maxBytes: 0)),
        (false, 100, .length(5), .stream),
        (false, 100, .none, .buffer(maxBytes: 0)),
        (false, nil, .none, .buffer(maxBytes: 0)),
        (false, 100, .chunked, .stream),
    ])
    func anAuthenticatedRouteBuffersWhatItCouldReplayAndStreamsTheRest(
        authenticated: Bool, replayLimit: Int?, framing: BodyFraming, policy: BodyPolicy
    ) {
        let route = Self.route("/", authenticated: authenticated)
        #expect(RouteTable.bodyPolicy(route: route, framing: framing, replayLimit: replayLimit) == policy)
    }
}
