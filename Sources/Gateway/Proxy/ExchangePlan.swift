public import HTTPWire

/// What the proxy does with a request, decided from its head alone. Pure: no socket, no
/// session, no clock (`ExchangePlanTests`). What becomes of an upstream answer on an
/// authenticated route is the ``ExchangeMachine``'s to decide.
///
/// ``ReverseProxy`` takes a plan for each request and carries it out:
///
/// | plan | the proxy |
/// |---|---|
/// | ``liveness`` | answers `200 {"status":"ok"}` itself |
/// | ``fallback`` | hands the request to its fallback responder |
/// | ``reject(_:)`` | answers with the problem document |
/// | ``forward(_:_:)`` | sends the request upstream as it is (a public route) |
/// | ``authenticate(_:_:session:)`` | runs the ``ExchangeMachine`` with the route's session |
public enum ExchangePlan: Sendable, Equatable {
    /// The proxy listener's liveness path (`GET` or `HEAD`): answered without a route.
    case liveness
    /// No route matches and a fallback responder is there to take the request.
    case fallback
    /// Answered at once with a problem: a target that cannot be parsed (400), no route
    /// (404), or an authenticated route whose session is not configured (500).
    case reject(Problem)
    /// A public route: forwarded with no token.
    case forward(ProxyRoute, RequestTarget)
    /// An authenticated route: forwarded with the token of the session named `session`,
    /// refreshed and replayed under the ``ReplayRule``.
    case authenticate(ProxyRoute, RequestTarget, session: String)

    /// The plan for a request with `method` and `target` (its request-target as sent).
    ///
    /// - Parameters:
    ///   - livenessPath: the path answered as liveness on the proxy listener, if any.
    ///   - table: the routes.
    ///   - hasFallback: whether a responder takes requests that match no route.
    ///   - sessions: the configured session names; `nil` when the proxy has no sessions.
    public static func decide(
        method: String, target: String, livenessPath: String?, table: RouteTable, hasFallback: Bool,
        sessions: Set<String>?
    ) -> ExchangePlan {
        decide(
            method: method, target: target, livenessPath: livenessPath, table: table, hasFallback: hasFallback,
            sessions: sessions.map { SessionDirectory(names: $0) })
    }

    /// ``decide(method:target:livenessPath:table:hasFallback:sessions:)`` with the sessions
    /// as the proxy keeps them.
    static func decide(
        method: String, target: String, livenessPath: String?, table: RouteTable, hasFallback: Bool,
        sessions: SessionDirectory?
    ) -> ExchangePlan {
        if let routed = Routed(method: method, target: target, livenessPath: livenessPath, table: table, sessions: sessions) {
            return routed.plan(target: target, table: table)
        }
        return unrouted(
            method: method, target: target, livenessPath: livenessPath, table: table, hasFallback: hasFallback,
            sessions: sessions)
    }

    /// The plan of a request ``Routed`` found no route for, made again from its head: the
    /// target's problem, the liveness answer, the fallback, or why the route cannot serve.
    static func unrouted(
        method: String, target: String, livenessPath: String?, table: RouteTable, hasFallback: Bool,
        sessions: SessionDirectory?
    ) -> ExchangePlan {
        let parsed: RequestTarget
        do throws(WireError) {
            parsed = try RequestTarget(target)
        } catch {
            return .reject(error.problem)
        }
        if let livenessPath, parsed.path == livenessPath, method == "GET" || method == "HEAD" {
            return .liveness
        }
        guard let route = table.route(for: parsed.path) else {
            return hasFallback ? .fallback : .reject(GatewayProblem.noRoute)
        }
        guard route.requiresAuthentication else { return .forward(route, parsed) }
        guard let sessions else {
            return .reject(
                GatewayProblem.make(
                    "no-session-configured", 500, "this route requires authentication but no session is configured"))
        }
        guard sessions.contains(route.session) else {
            return .reject(GatewayProblem.make("no-session-configured", 500, "this route's session is not configured"))
        }
        return .authenticate(route, parsed, session: route.session)
    }

    /// A ``forward(_:_:)`` or ``authenticate(_:_:session:)`` plan in sixteen bytes: the
    /// route's index in the table and where the path and query are in the target. The proxy
    /// finds it when the head arrives and carries it to the answer (``ReverseProxy``), so a
    /// request's target is parsed and its route found once.
    struct Routed: Sendable, Equatable {
        /// The route's index in ``RouteTable/routes``; -1 in ``noRoute``.
        let route: Int32
        /// Where the path and query are in the target.
        let span: RequestTarget.Span

        /// No route: the plan is not to forward. (An optional would not fit in sixteen bytes.)
        static let noRoute = Routed(route: -1, span: RequestTarget.Span(pathStart: 0, pathEnd: 0, queryEnd: -1))

        /// Whether this names a route (it is not ``noRoute``).
        var isRoute: Bool { route >= 0 }

        private init(route: Int32, span: RequestTarget.Span) {
            self.route = route
            self.span = span
        }

        /// The route `target` goes to, as ``ExchangePlan/decide(method:target:livenessPath:table:hasFallback:sessions:)``
        /// would plan it; nil when that plan is not to forward (a bad target, the liveness
        /// path, no route, a route whose session is not configured).
        init?(method: String, target: String, livenessPath: String?, table: RouteTable, sessions: SessionDirectory?) {
            guard let span = try? RequestTarget.Span(target) else { return nil }
            let path = RequestTarget(target, span: span).path
            if let livenessPath, path == livenessPath, method == "GET" || method == "HEAD" { return nil }
            guard let index = table.index(for: path) else { return nil }
            if table.routes[index].requiresAuthentication {
                guard let sessions, sessions.contains(table.routes[index].session) else { return nil }
            }
            self.route = Int32(index)
            self.span = span
        }

        /// The plan for `target`, the one this was found in, on `table`, the same table.
        func plan(target: String, table: RouteTable) -> ExchangePlan {
            let route = table.routes[Int(self.route)]
            let parsed = RequestTarget(target, span: span)
            return route.requiresAuthentication ? .authenticate(route, parsed, session: route.session) : .forward(route, parsed)
        }
    }
}
