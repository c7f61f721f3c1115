import AuthCore
import HTTPWire
import Testing

@testable import Gateway
@testable import Runtime

/// A request's target is parsed and its route found once, when its head arrives
/// (``ReverseProxy/intake(for:limits:)``); the answer carries out that decision, with the
/// settings the head arrived under, without routing again.
@Suite struct RouteOnceTests {
    static func route(_ prefix: String, _ upstream: String = "http://127.0.0.1:9", authenticated: Bool = false) -> ProxyRoute {
        let (origin, path) = ProxyRoute.parseUpstream(upstream)!
        return ProxyRoute(prefix: prefix, upstream: origin, upstreamPath: path, requiresAuthentication: authenticated)
    }

    static let table = RouteTable([
        route("/api", authenticated: true), route("/public"), route("/partner", authenticated: true),
        ProxyRoute(prefix: "/s", upstream: UpstreamOrigin("http://127.0.0.1:9")!, upstreamPath: "/v1", stripPrefix: true),
    ])

    static let targets = [
        "/api", "/api/orders?id=1", "/api/x?q#frag", "/public/x", "/public?", "/s/a%20b?c=%2F", "/livez", "/livez?x",
        "/elsewhere", "*", "api", "/api/../admin", "/api/%2e%2e/x", "/api\\x", "http://evil.example/api/x?q",
        "https://h?q", "http://h", "/partner/x", "/apix", "/s",
    ]

    /// The carried decision, made again into a plan, is the plan `decide` makes from the
    /// target; and it exists exactly when that plan forwards.
    @Test(arguments: targets) func theCarriedDecisionIsThePlanOfTheTarget(target: String) {
        for method in ["GET", "POST"] {
            for sessions in [nil, ["default"] as Set<String>] {
                let plan = ExchangePlan.decide(
                    method: method, target: target, livenessPath: "/livez", table: Self.table, hasFallback: false,
                    sessions: sessions)
                let routing = ExchangePlan.Routing(
                    method: method, target: target, livenessPath: "/livez", table: Self.table, hasFallback: false,
                    sessions: sessions.map { SessionDirectory(names: $0) })
                switch (plan, routing) {
                case (.forward, .routed(let routed)), (.authenticate, .routed(let routed)):
                    #expect(routed.plan(target: target, table: Self.table) == plan, "\(method) \(target)")
                case (.forward, _), (.authenticate, _):
                    Issue.record("not routed: \(method) \(target)")
                default:
                    if case .routed = routing { Issue.record("routed: \(method) \(target)") }
                }
            }
        }
    }

    /// The target sent upstream, put together from the request target's bytes, is the one
    /// made from its path and query: prefix stripped or not, base path or none.
    @Test(arguments: [
        "/", "/s", "/s/", "/s/a%20b?c=%2F", "/s?", "/s?q#f", "/api/x?y?z", "http://h", "https://h?q", "http://h/s/x?y",
        "/%C3%A9/x", "/s#frag",
    ])
    func theUpstreamTargetIsMadeFromTheTargetsBytes(target: String) throws {
        let parsed = try RequestTarget(target)
        for base in ["http://u:1", "http://u:1/v1", "https://u/v1/"] {
            for (prefix, strip) in [("/", false), ("/", true), ("/s", true), ("/s", false)] {
                let (origin, path) = try #require(ProxyRoute.parseUpstream(base))
                let route = ProxyRoute(prefix: prefix, upstream: origin, upstreamPath: path, stripPrefix: strip)
                guard route.matches(parsed.path) else { continue }
                #expect(
                    route.upstreamTarget(for: parsed) == route.upstreamTarget(path: parsed.path, query: parsed.query),
                    "\(target) on \(prefix) strip \(strip) to \(base)")
            }
        }
    }

    /// Three words: the server holds it in an `any Sendable` with no allocation.
    @Test func theCarriedValueFitsInAnExistentialWithoutABox() {
        #expect(MemoryLayout<ReverseProxy.Admission>.size <= 3 * MemoryLayout<Int>.size)
    }

    static func request(_ head: RequestHead, context: (any Sendable)?, loop: EventLoop) -> HTTPRequest {
        HTTPRequest(head: head, body: .buffered([]), remoteAddress: "127.0.0.1:1", loop: loop, context: context)
    }

    static func settings(_ routes: [ProxyRoute]) -> ProxySettings {
        ProxySettings(
            routes: routes, clientConfiguration: UpstreamClientConfiguration(), rejectionPolicy: UpstreamRejectionPolicy(),
            replayRule: ReplayRule(), replayLimit: 1 << 20, livenessPath: "/livez", trustedProxies: [])
    }

    /// A reload between a request's head and its answer (a buffered body takes that long)
    /// changes nothing for it: it goes where its head was routed, under the settings it
    /// arrived with. Routing again at the answer would send it to the new upstream.
    @Test func theAnswerFollowsTheRouteAndSettingsTheHeadWasAdmittedUnder() throws {
        let group = try EventLoopGroup(loopCount: 1, name: "route-once")
        defer { group.shutdown() }
        let proxy = ReverseProxy(routes: [Self.route("/api", "http://127.0.0.1:9001")])
        let head = RequestHead(method: "POST", target: "/api/orders?id=7", framing: .length(3))
        let intake = proxy.intake(for: head, limits: HTTPLimits())
        #expect(intake.body == .stream)
        let admitted = proxy.settings
        proxy.replaceSettings(
            Self.settings([Self.route("/api", "http://127.0.0.1:9002"), Self.route("/", "http://127.0.0.1:9003")]))

        let (plan, s) = proxy.admittedPlan(Self.request(head, context: intake.context, loop: group.loops[0]))
        guard case .forward(let route, let target) = plan else {
            Issue.record("not forwarded: \(plan)")
            return
        }
        #expect(s === admitted, "the settings the head arrived under")
        #expect(route.upstream.authority == "127.0.0.1:9001")
        #expect(target.path == "/api/orders" && target.query == "id=7")
        // A request that did not come through the intake is planned with the current settings.
        let (now, _) = proxy.admittedPlan(Self.request(head, context: nil, loop: group.loops[0]))
        guard case .forward(let current, _) = now else {
            Issue.record("not forwarded: \(now)")
            return
        }
        #expect(current.upstream.authority == "127.0.0.1:9002")
    }

    /// A head with no route is planned again at the answer, with the settings it arrived under.
    @Test func aRequestWithNoRouteIsRejectedUnderItsOwnSettings() throws {
        let group = try EventLoopGroup(loopCount: 1, name: "route-once")
        defer { group.shutdown() }
        let proxy = ReverseProxy(routes: [Self.route("/api")])
        let head = RequestHead(method: "GET", target: "/other")
        let intake = proxy.intake(for: head, limits: HTTPLimits())
        proxy.replaceSettings(Self.settings([Self.route("/")]))
        let (plan, _) = proxy.admittedPlan(Self.request(head, context: intake.context, loop: group.loops[0]))
        #expect(plan == .reject(GatewayProblem.noRoute))
    }

    /// A fallback that keeps a value of its own gets it back with the request.
    struct KeepingFallback: HTTPResponder {
        func intake(for head: RequestHead, limits: HTTPLimits) -> RequestIntake {
            RequestIntake(body: .buffer(maxBytes: 7), context: "kept for \(head.target)")
        }
        func respond(to request: HTTPRequest, writer: ResponseWriter) {}
    }

    @Test func theFallbacksOwnIntakeIsHandedToIt() throws {
        let group = try EventLoopGroup(loopCount: 1, name: "route-once")
        defer { group.shutdown() }
        let proxy = ReverseProxy(routes: [Self.route("/api")], fallback: KeepingFallback())
        let head = RequestHead(method: "POST", target: "/admin/x", framing: .length(3))
        let intake = proxy.intake(for: head, limits: HTTPLimits())
        #expect(intake.body == .buffer(maxBytes: 7))
        #expect(intake.context as? String == "kept for /admin/x")
        let (plan, settings) = proxy.admittedPlan(Self.request(head, context: intake.context, loop: group.loops[0]))
        #expect(plan == .fallback && settings == nil)
    }
}
