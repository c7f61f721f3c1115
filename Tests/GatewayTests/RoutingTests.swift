import AuthCore
import HTTPWire
import Testing

@testable import Gateway
@testable import Runtime

/// One routing decides every request (``ExchangePlan/Routing``): the plan the proxy carries
/// out, found when the head arrives and kept (a forwarded request) or made again at the
/// answer (any other), is the plan ``ExchangePlan/decide(method:target:livenessPath:table:hasFallback:sessions:)``
/// makes, for every kind of request, with the same problem documents.
@Suite struct RoutingTests {
    /// What a request should become.
    enum Expected: Sendable {
        case liveness, fallback
        /// Forwarded with no token on the route of this prefix.
        case forward(String)
        /// Forwarded on the route of this prefix with this session's token.
        case authenticate(String, session: String)
        /// Answered with this problem: type, status, detail.
        case reject(String, Int, String)
    }

    /// A request, the proxy it reaches, and what it should become.
    struct Case: Sendable, CustomTestStringConvertible {
        let method: String
        let target: String
        let fallback: Bool
        /// The proxy's sessions; nil: no authentication, so no ``SessionDirectory`` at all.
        let sessions: Set<String>?
        let expected: Expected

        var testDescription: String {
            "\(method) \(target) fallback \(fallback) sessions \(sessions.map { $0.sorted().description } ?? "none")"
        }
    }

    static func request(
        _ method: String, _ target: String, fallback: Bool = false, sessions: Set<String>? = ["default"], _ expected: Expected
    ) -> Case {
        Case(method: method, target: target, fallback: fallback, sessions: sessions, expected: expected)
    }

    static let badTarget = Expected.reject(
        "https://authgate.dev/problems/invalid-target", 400, "the request target must be a path (origin-form) or an absolute URL")
    static let noRoute = Expected.reject("https://authgate.dev/problems/no-route", 404, "no route matches this path")
    static let noSessions = Expected.reject(
        "https://authgate.dev/problems/no-session-configured", 500,
        "this route requires authentication but no session is configured")
    static let sessionMissing = Expected.reject(
        "https://authgate.dev/problems/no-session-configured", 500, "this route's session is not configured")

    static let cases: [Case] = [
        // A bad target is refused before anything else, the fallback's or not.
        request("GET", "*", badTarget), request("GET", "api", fallback: true, badTarget),
        request("POST", "*", sessions: nil, badTarget),
        // The liveness path, for GET and HEAD only.
        request("GET", "/livez", .liveness), request("HEAD", "/livez?x", .liveness),
        request("GET", "/livez", fallback: true, .liveness),
        request("GET", "/livez", sessions: nil, .liveness), request("POST", "/livez", noRoute),
        request("POST", "/livez", fallback: true, .fallback),
        // No route: 404, or the fallback.
        request("GET", "/elsewhere", noRoute), request("GET", "/elsewhere", fallback: true, .fallback),
        request("GET", "/elsewhere", sessions: nil, noRoute),
        // A public route needs no session.
        request("POST", "/public/x?q", .forward("/public")), request("GET", "/public", sessions: nil, .forward("/public")),
        request("GET", "/public/x", fallback: true, .forward("/public")),
        // An authenticated route, with its session or not.
        request("GET", "/api/orders?id=1", .authenticate("/api", session: "default")),
        request("GET", "http://elsewhere.example/api/x", fallback: true, .authenticate("/api", session: "default")),
        request("POST", "/partner/x", sessions: ["default", "partner"], .authenticate("/partner", session: "partner")),
        request("GET", "/partner/x", sessionMissing), request("GET", "/partner/x", fallback: true, sessionMissing),
        request("GET", "/api/x", sessions: [], sessionMissing),
        // No sessions at all.
        request("GET", "/api/x", sessions: nil, noSessions), request("GET", "/api/x", fallback: true, sessions: nil, noSessions),
    ]

    static func route(_ prefix: String, authenticated: Bool = true, session: String = "default") -> ProxyRoute {
        var r = ProxyRoute(prefix: prefix, upstream: UpstreamOrigin("http://127.0.0.1:9")!, requiresAuthentication: authenticated)
        r.session = session
        return r
    }

    static let routes = [route("/api"), route("/public", authenticated: false), route("/partner", session: "partner")]

    /// Takes whatever the proxy does not route, and keeps nothing of its own.
    struct Fallback: HTTPResponder {
        func intake(for head: RequestHead, limits: HTTPLimits) -> RequestIntake { RequestIntake(body: .buffer(maxBytes: 7)) }
        func respond(to request: HTTPRequest, writer: ResponseWriter) {}
    }

    static func matches(_ plan: ExchangePlan, _ expected: Expected) -> Bool {
        switch (plan, expected) {
        case (.liveness, .liveness), (.fallback, .fallback): true
        case (.forward(let route, let target), .forward(let prefix)): route.prefix == prefix && target.path.hasPrefix(prefix)
        case (.authenticate(let route, let target, let session), .authenticate(let prefix, let name)):
            route.prefix == prefix && target.path.hasPrefix(prefix) && session == name
        case (.reject(let p), .reject(let type, let status, let detail)):
            p.type == type && p.status == status && p.detail == detail && p.title == ResponseHead.reason(for: status)
        default: false
        }
    }

    /// ``ExchangePlan/decide(method:target:livenessPath:table:hasFallback:sessions:)``, the
    /// routing made into a plan, and the proxy (its intake, then its answer) all plan the
    /// request as expected; the intake keeps a route exactly when the plan forwards, and reads
    /// a body only for a route or the fallback.
    @Test(arguments: cases) func theIntakeAndTheAnswerPlanEveryRequestAlike(_ c: Case) throws {
        let table = RouteTable(Self.routes)
        let decided = ExchangePlan.decide(
            method: c.method, target: c.target, livenessPath: "/livez", table: table, hasFallback: c.fallback,
            sessions: c.sessions)
        #expect(Self.matches(decided, c.expected), "decide: \(decided)")

        let routing = ExchangePlan.Routing(
            method: c.method, target: c.target, livenessPath: "/livez", table: table, hasFallback: c.fallback,
            sessions: c.sessions.map { SessionDirectory(names: $0) })
        #expect(routing.plan(target: c.target, table: table) == decided)

        let group = try EventLoopGroup(loopCount: 1, name: "routing")
        defer { group.shutdown() }
        let authentication = c.sessions.map { names in
            ProxyAuthentication(sessions: Dictionary(uniqueKeysWithValues: names.map { ($0, SessionDirectoryTests.actor()) }))
        }
        let proxy = ReverseProxy(
            routes: Self.routes, authentication: authentication, livenessPath: "/livez", fallback: c.fallback ? Fallback() : nil,
            tracer: nil)
        let head = RequestHead(method: c.method, target: c.target)
        let intake = proxy.intake(for: head, limits: HTTPLimits())
        let admission = try #require(intake.context as? ReverseProxy.Admission)
        let request = HTTPRequest(
            head: head, body: .buffered([]), remoteAddress: "127.0.0.1:1", loop: group.loops[0], context: intake.context)
        let (admitted, _) = proxy.admittedPlan(request)
        #expect(admitted == decided, "admitted: \(admitted)")

        switch c.expected {
        case .forward, .authenticate:
            guard case .routed(let routed) = routing else {
                Issue.record("not routed: \(routing)")
                return
            }
            #expect(admission.routed == routed, "the intake keeps the route it found")
        case .fallback:
            #expect(!admission.routed.isRoute, "the intake keeps no route")
            #expect(intake.body == .buffer(maxBytes: 7), "the fallback reads the body")
        case .liveness, .reject:
            #expect(!admission.routed.isRoute, "the intake keeps no route")
            #expect(intake.body == .stream, "answered after its head, nothing read")
        }
    }
}
