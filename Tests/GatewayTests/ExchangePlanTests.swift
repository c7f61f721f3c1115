import AuthCore
import Gateway
import HTTPWire
import Runtime
import Testing

/// The proxy's per-request plan, as a value.
@Suite struct ExchangePlanTests {
    static func route(_ prefix: String, authenticated: Bool = true, session: String = "default") -> ProxyRoute {
        var r = ProxyRoute(prefix: prefix, upstream: UpstreamOrigin("http://127.0.0.1:9")!, requiresAuthentication: authenticated)
        r.session = session
        return r
    }

    static let table = RouteTable([
        route("/api"), route("/public", authenticated: false), route("/partner", session: "partner"),
    ])

    static func plan(
        _ target: String, method: String = "GET", liveness: String? = "/livez", fallback: Bool = false,
        sessions: Set<String>? = ["default"]
    ) -> ExchangePlan {
        ExchangePlan.decide(
            method: method, target: target, livenessPath: liveness, table: table, hasFallback: fallback, sessions: sessions)
    }

    static func code(_ plan: ExchangePlan) -> String? {
        guard case .reject(let p) = plan else { return nil }
        return "\(p.status) \(p.type.split(separator: "/").last ?? "")"
    }

    @Test func anAuthenticatedRouteRunsWithItsSession() throws {
        let plan = Self.plan("/api/orders?id=1")
        guard case .authenticate(let route, let target, let session) = plan else {
            Issue.record("got \(plan)")
            return
        }
        #expect(route.prefix == "/api")
        #expect(target.path == "/api/orders")
        #expect(target.query == "id=1")
        #expect(session == "default")
    }

    @Test func aPublicRouteIsForwardedWithNoToken() {
        guard case .forward(let route, _) = Self.plan("/public/x", method: "POST") else {
            Issue.record("not forwarded")
            return
        }
        #expect(route.prefix == "/public")
        // A public route needs no session, even when none is configured.
        guard case .forward = Self.plan("/public/x", sessions: nil) else {
            Issue.record("not forwarded without sessions")
            return
        }
    }

    @Test(arguments: [
        ("GET", "/livez", true), ("HEAD", "/livez", true), ("POST", "/livez", false), ("GET", "/livez/x", false),
        ("GET", "/livez?verbose=1", true),
    ])
    func theLivenessPathIsAnsweredOnlyForGetAndHead(method: String, target: String, liveness: Bool) {
        #expect((Self.plan(target, method: method) == .liveness) == liveness)
    }

    @Test func noLivenessPathMeansItIsRoutedLikeAnyOther() {
        #expect(Self.code(Self.plan("/livez", liveness: nil)) == "404 no-route")
    }

    @Test func noRouteIsA404OrTheFallback() {
        #expect(Self.code(Self.plan("/elsewhere")) == "404 no-route")
        #expect(Self.plan("/elsewhere", fallback: true) == .fallback)
    }

    @Test(arguments: ["*", "api", "/api/../admin", "/api/%2e%2e/admin", "/api/..;/admin", "/api\\x", "/api%2fx"])
    func aTargetThatIsNotAPathOrCouldEscapeItsRouteIsA400(target: String) {
        #expect(Self.code(Self.plan(target)) == "400 invalid-target")
    }

    @Test func anAbsoluteFormTargetIsRoutedByItsPathAlone() {
        guard case .authenticate(let route, let target, _) = Self.plan("http://elsewhere.example/api/x?q") else {
            Issue.record("not routed by path")
            return
        }
        #expect(route.prefix == "/api")
        #expect(target.path == "/api/x")
    }

    @Test func anAuthenticatedRouteWithoutItsSessionIsA500() {
        #expect(Self.code(Self.plan("/api/x", sessions: nil)) == "500 no-session-configured")
        #expect(Self.code(Self.plan("/partner/x")) == "500 no-session-configured")
        guard case .authenticate(_, _, "partner") = Self.plan("/partner/x", sessions: ["default", "partner"]) else {
            Issue.record("the partner route does not use its session")
            return
        }
    }
}
