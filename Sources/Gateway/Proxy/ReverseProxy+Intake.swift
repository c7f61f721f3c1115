public import HTTPWire
public import Runtime

/// A request's route, decided once: when its head arrives (``intake(for:limits:)``, which
/// also decides how its body is read), carried through the server in
/// ``HTTPRequest/context``, and carried out when the proxy answers it, with the settings it
/// arrived under.
extension ReverseProxy {
    /// What the proxy kept from a request's head for its answer. Three words, so the
    /// server holds it in its `any Sendable` slot with no allocation.
    struct Admission: Sendable {
        /// The settings the request arrived under; it keeps them to its end, through a reload.
        let settings: ProxySettings
        /// The route and where the path and query are in the target; ``ExchangePlan/Routed/noRoute``
        /// when the plan is not to forward, and is made again from the head with ``settings``
        /// (liveness, the fallback, a rejection: none of them the path that counts).
        let routed: ExchangePlan.Routed
    }

    /// Reads a request's body as ``RouteTable/bodyPolicy(route:framing:bufferLimit:replays:)`` says,
    /// and keeps the route found for the answer (``ExchangePlan/Routing``). A request that is
    /// not forwarded (the liveness probe, a rejection) is answered after its head, nothing
    /// read; one the fallback takes is read as the fallback says, and what it keeps is
    /// handed to it.
    public func intake(for head: RequestHead, limits: HTTPLimits) -> RequestIntake {
        intake(for: head, peer: nil, limits: limits)
    }

    /// ``intake(for:limits:)`` knowing the peer: a caller the route does not serve
    /// (``ProxyRoute/callers``) has its body left unread, since it is answered 403 at once.
    public func intake(for head: RequestHead, from peer: RequestPeer, limits: HTTPLimits) -> RequestIntake {
        intake(for: head, peer: peer, limits: limits)
    }

    private func intake(for head: RequestHead, peer: RequestPeer?, limits: HTTPLimits) -> RequestIntake {
        let s = settings
        let routing = ExchangePlan.Routing(
            method: head.method, target: head.target, livenessPath: s.livenessPath, table: s.table,
            hasFallback: hasFallback, sessions: sessionDirectory)
        guard case .routed(let routed) = routing else {
            let admission = Admission(settings: s, routed: .noRoute)
            guard case .fallback = routing, let fallback else { return RequestIntake(body: .stream, context: admission) }
            let intake = fallback.intake(for: head, limits: limits)
            return intake.context == nil ? RequestIntake(body: intake.body, context: admission) : intake
        }
        let route = s.table.routes[Int(routed.route)]
        if let callers = route.callers, let peer, !callers.admits(peer) {
            return RequestIntake(body: .stream, context: Admission(settings: s, routed: routed))
        }
        // A route always has a policy.
        let body = RouteTable.bodyPolicy(
            route: route, framing: head.framing, bufferLimit: s.replayLimit, replays: authentication != nil)
        return RequestIntake(body: body ?? .stream, context: Admission(settings: s, routed: routed))
    }

    /// ``intake(for:limits:)``'s body policy.
    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        intake(for: head, limits: limits).body
    }

    /// The plan for `request` and the settings it runs with: the ones its head was admitted
    /// under, with the route found then; else (a request that did not come through
    /// ``intake(for:limits:)``) the current ones. Nil settings: the fallback kept a value of
    /// its own for this request, which goes to it as it is.
    func admittedPlan(_ request: HTTPRequest) -> (ExchangePlan, ProxySettings?) {
        guard let admission = request.context as? Admission else {
            if request.context != nil { return (.fallback, nil) }
            let s = settings
            return (plan(for: request.head, s), s)
        }
        let s = admission.settings
        if admission.routed.isRoute { return (admission.routed.plan(target: request.head.target, table: s.table), s) }
        return (plan(for: request.head, s), s)
    }
}
