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
///
/// Every plan is made from one ``Routing``: the proxy's intake finds it when the head
/// arrives and keeps a forwarded request's ``Routed``; a request it does not forward is
/// planned from its head again at the answer, by the same rules.
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
    /// as the proxy keeps them: the ``Routing`` of the request, made into a plan.
    static func decide(
        method: String, target: String, livenessPath: String?, table: RouteTable, hasFallback: Bool,
        sessions: SessionDirectory?
    ) -> ExchangePlan {
        Routing(
            method: method, target: target, livenessPath: livenessPath, table: table, hasFallback: hasFallback,
            sessions: sessions
        ).plan(target: target, table: table)
    }

    /// Where a request goes, decided from its method and target: the one place that says
    /// which requests are forwarded, on which route, and why the others are not. Both the
    /// proxy's intake (which keeps ``Routed``, when the head arrives) and
    /// ``decide(method:target:livenessPath:table:hasFallback:sessions:)`` (the plan, for
    /// the others at the answer) are made from it.
    ///
    /// The rules, in order: a target that is not a path, or could escape its route, is
    /// refused; a `GET` or `HEAD` of the liveness path is the liveness probe; a path no route
    /// matches goes to the fallback, or is refused; an authenticated route whose session is
    /// not configured is refused; anything else is forwarded on its route.
    enum Routing: Sendable, Equatable {
        /// Forwarded: the route and where the path and query are in the target.
        case routed(Routed)
        /// The liveness probe, answered by the proxy.
        case liveness
        /// No route matches, and the fallback takes the request.
        case fallback
        /// Answered at once with ``Rejection/problem``.
        case reject(Rejection)

        /// The routing of a request with `method` and `target` on `table`; the parameters
        /// are ``ExchangePlan/decide(method:target:livenessPath:table:hasFallback:sessions:)``'s.
        init(
            method: String, target: String, livenessPath: String?, table: RouteTable, hasFallback: Bool,
            sessions: SessionDirectory?
        ) {
            let span: RequestTarget.Span
            do throws(WireError) {
                span = try RequestTarget.Span(target)
            } catch {
                self = .reject(.target(error))
                return
            }
            let path = RequestTarget(target, span: span).path
            if let livenessPath, path == livenessPath, method == "GET" || method == "HEAD" {
                self = .liveness
                return
            }
            guard let index = table.index(for: path) else {
                self = hasFallback ? .fallback : .reject(.noRoute)
                return
            }
            if table.routes[index].requiresAuthentication {
                guard let sessions else {
                    self = .reject(.noSessions)
                    return
                }
                guard sessions.contains(table.routes[index].session) else {
                    self = .reject(.sessionNotConfigured)
                    return
                }
            }
            self = .routed(Routed(route: Int32(index), span: span))
        }

        /// The plan this routing says for `target`, the one it was made from, on `table`,
        /// the same table.
        func plan(target: String, table: RouteTable) -> ExchangePlan {
            switch self {
            case .routed(let routed): routed.plan(target: target, table: table)
            case .liveness: .liveness
            case .fallback: .fallback
            case .reject(let rejection): .reject(rejection.problem)
            }
        }
    }

    /// Why a request is answered at once with a problem (``Routing/reject(_:)``).
    enum Rejection: Sendable, Equatable {
        /// The target is not a path or an absolute URL, or could escape its route (400).
        case target(WireError)
        /// No route matches the path and there is no fallback (404).
        case noRoute
        /// The route is authenticated and the proxy has no sessions at all (500).
        case noSessions
        /// The route is authenticated and its session is not among the proxy's (500).
        case sessionNotConfigured

        /// The problem document the request is answered with.
        var problem: Problem {
            switch self {
            case .target(let error): error.problem
            case .noRoute: GatewayProblem.noRoute
            case .noSessions: GatewayProblem.noSessionConfigured
            case .sessionNotConfigured: GatewayProblem.sessionNotConfigured
            }
        }
    }

    /// A ``forward(_:_:)`` or ``authenticate(_:_:session:)`` plan in sixteen bytes: the
    /// route's index in the table and where the path and query are in the target. The proxy
    /// finds it when the head arrives (``Routing``) and carries it to the answer
    /// (``ReverseProxy``), so a request's target is parsed and its route found once.
    struct Routed: Sendable, Equatable {
        /// The route's index in ``RouteTable/routes``; -1 in ``noRoute``.
        let route: Int32
        /// Where the path and query are in the target.
        let span: RequestTarget.Span

        /// No route: the plan is not to forward. (An optional would not fit in sixteen bytes.)
        static let noRoute = Routed(route: -1, span: RequestTarget.Span(pathStart: 0, pathEnd: 0, queryEnd: -1))

        /// Whether this names a route (it is not ``noRoute``).
        var isRoute: Bool { route >= 0 }

        /// The route at index `route` of the table, its path and query where `span` says;
        /// only ``Routing`` finds one.
        fileprivate init(route: Int32, span: RequestTarget.Span) {
            self.route = route
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
