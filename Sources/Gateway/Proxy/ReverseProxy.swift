import AuthCore
public import HTTPWire
import Locking
public import Runtime
public import Tracing

/// Forwards requests under configured prefixes to their upstreams, streaming bodies both
/// ways. Each loop has its own ``UpstreamClient``, so a request never leaves its loop.
///
/// On an authenticated route it is the one policy point (SEEDS rows 5, 10, 11): it
/// attaches the session's token of generation g; when the upstream rejects that token
/// (401 with `error="invalid_token"` or no error), it calls `refresh(after: g)` — one
/// refresh however many requests wait — and replays the request with the new token and its
/// buffered body (rows 6, 9), under the ``ReplayRule``: again while the token it carried has
/// been superseded meanwhile, never twice with one generation, at most `maxReplays` times.
/// 403 and `insufficient_scope` pass through. ``ProxiedRequest`` runs that path on the
/// request's loop, as it runs a public route's.
public final class ReverseProxy: HTTPResponder {
    /// The routes, longest prefix first.
    public var table: RouteTable { settings.table }
    /// The configuration the proxy serves with now; each request reads it once on arrival.
    public var settings: ProxySettings { current.withLock { $0 } }
    private let current: Locked<ProxySettings>
    let fallback: (any HTTPResponder)?
    /// Whether ``fallback`` is set: read per request instead of the existential, which a
    /// test for nil would copy.
    let hasFallback: Bool
    let authentication: ProxyAuthentication?
    let metrics: GatewayMetrics
    /// Records where authenticated requests wait; made once, not per request.
    let observePhase: @Sendable (ExchangePhase, Duration) -> Void
    /// The tasks serving authenticated requests (shutdown waits for them).
    public let tasks = TaskTracker()
    /// The configured sessions; nil with no authentication.
    let sessionDirectory: SessionDirectory?
    /// Traces each request when set (``TracingSwitch/installed``); nil: nothing is traced.
    let tracer: (any Tracer)?
    /// Whether ``tracer`` is set: read per request instead of the existential, which a
    /// test for nil would copy.
    private let tracing: Bool

    /// Creates a proxy; requests matching no route go to `fallback` (or get 404). Only
    /// clients in `trustedProxies` (IP addresses) have their `X-Forwarded-For` kept.
    public init(
        routes: [ProxyRoute], clientConfiguration: UpstreamClientConfiguration = UpstreamClientConfiguration(),
        authentication: ProxyAuthentication? = nil, metrics: GatewayMetrics = GatewayMetrics(),
        livenessPath: String? = nil, fallback: (any HTTPResponder)? = nil, trustedProxies: Set<String> = [],
        tracer: (any Tracer)? = TracingSwitch.installed
    ) {
        self.tracer = tracer
        self.tracing = tracer != nil
        self.observePhase = { [metrics] in metrics.phase($0, $1) }
        self.current = Locked(
            ProxySettings(
                routes: routes, clientConfiguration: clientConfiguration,
                rejectionPolicy: authentication?.rejectionPolicy ?? UpstreamRejectionPolicy(),
                replayRule: authentication?.replayRule ?? ReplayRule(), replayLimit: authentication?.replayLimit ?? 0,
                livenessPath: livenessPath, trustedProxies: trustedProxies))
        self.authentication = authentication
        self.sessionDirectory = authentication.map { SessionDirectory($0.sessions) }
        self.metrics = metrics
        self.fallback = fallback
        self.hasFallback = fallback != nil
    }

    /// Authenticated requests waiting for a slot at their route's upstream (`maxInFlight`).
    public var upstreamQueueWaiting: Int { settings.upstreamQueueWaiting }

    /// Each in-flight limit's readings, for `/metrics`.
    public var upstreamLimits: [GatewayMetrics.UpstreamLimitReading] { settings.upstreamLimits }

    /// Serves every request that arrives from now on with `settings` (a reload); requests in
    /// flight finish with the settings they started with. The running upstream clients and
    /// in-flight bounds that still fit are handed over (``ProxySettings/succeeding(_:)``):
    /// here, as the settings are swapped, so settings made and never installed change nothing.
    public func replaceSettings(_ settings: ProxySettings) {
        let (previous, installed) = current.withLock { current -> (ProxySettings, ProxySettings) in
            let previous = current
            current = settings.succeeding(previous)
            return (previous, current)
        }
        // Clients of settings no longer current keep no connection open once idle.
        if previous.clients !== installed.clients { previous.clients.retire() }
    }

    /// The plan for a request with this head (``ExchangePlan/decide(method:target:livenessPath:table:hasFallback:sessions:)``).
    public func plan(for head: RequestHead) -> ExchangePlan {
        plan(for: head, settings)
    }

    func plan(for head: RequestHead, _ s: ProxySettings) -> ExchangePlan {
        ExchangePlan.decide(
            method: head.method, target: head.target, livenessPath: s.livenessPath, table: s.table,
            hasFallback: hasFallback, sessions: sessionDirectory)
    }

    /// Carries out the plan made when the request's head arrived (``intake(for:limits:)``).
    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        let (plan, settings) = admittedPlan(request)
        guard let s = settings else {
            fallback?.respond(to: request, writer: writer)
            return
        }
        switch plan {
        case .liveness:
            // Reserved on the proxy listener too, for probes that only know one port.
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: "application/json")
            writer.respond(status: 200, headers: h, body: Array(#"{"status":"ok"}"#.utf8))
        case .fallback:
            var request = request
            request.context = nil  // the proxy's, not the fallback's
            fallback?.respond(to: request, writer: writer)
        case .reject(let problem):
            let facts = s.accessLog?.begin(request, route: nil)
            writer.respond(problem: problem)
            facts?.end(status: problem.status)
        case .forward(let route, let target):
            send(request, on: route, to: target, session: nil, writer: writer, settings: s)
        case .authenticate(let route, let target, let name):
            // `plan` checked that the session exists; answer anyway rather than leave the client waiting.
            guard let session = sessionDirectory?.session(named: name) else {
                writer.respond(problem: GatewayProblem.sessionNotConfigured)
                return
            }
            send(request, on: route, to: target, session: session, writer: writer, settings: s)
        }
    }

    /// Sends a request upstream on `route`: public with no `session`, else with its token.
    /// The access log's record, an upgrade the route cannot pass and the request's trace
    /// start here, for both.
    private func send(
        _ request: HTTPRequest, on route: consuming ProxyRoute, to target: consuming RequestTarget, session: AuthActor?,
        writer: ResponseWriter, settings s: consuming ProxySettings
    ) {
        let started = ContinuousClock.now
        let facts = s.accessLog?.begin(request, route: route.prefix)
        var r = RouteContext(
            route: route, target: target, writer: writer, settings: s,
            end: RequestEnd(kind: session == nil ? "public" : "authenticated", started: started, facts: facts, trace: nil))
        if let callers = r.route.callers,
            !callers.admits(RequestPeer(address: request.remoteAddress, credentials: request.peerCredentials))
        {
            // Before any token is taken or anything is sent: the session is not lent.
            writer.respond(problem: GatewayProblem.callerNotAllowed)
            r.end.finish(metrics, status: 403)
            return
        }
        if request.head.upgrade != nil && refusedUpgrade(request, r) { return }
        if tracing, let tracer {
            r.end.trace = RequestTrace(tracer: tracer, request: request, route: r.route, path: String(r.target.path))
        }
        ProxiedRequest.start(self, request, r, session)
    }

    /// Starts one attempt of `runner`'s request at the upstream, on the request's loop, with
    /// `token` (none on a public route); `runner` decides on the answer's head and hears the end.
    func start(_ request: HTTPRequest, _ r: RouteContext, token: AccessToken?, runner: ProxiedRequest) {
        let route = r.route
        let s = r.settings
        let body: UpstreamRequestBody
        switch request.body {
        case .buffered(let bytes): body = bytes.isEmpty ? .none : .bytes(bytes)
        case .stream(let s):
            switch request.head.framing {
            case .none: body = .none
            case .length(let n): body = .stream(s, length: n)
            case .chunked: body = .stream(s, length: nil)
            }
        }
        var headers = ForwardedHeaders.upstreamRequest(
            request.head.headers, clientAddress: request.remoteAddress, hostField: route.hostField,
            removeAuthorization: !route.forwardClientAuthorization || token != nil, trustedProxies: s.trustedProxies)
        if route.injectHeaders.count > 0 {
            for (name, value) in route.injectHeaders { headers.replaceOrAdd(name: name, value: value) }
        }
        let upstreamTarget = route.upstreamTarget(for: r.target)
        if let token {
            headers.remove(name: "Authorization")
            var value = token.authorizationHeaderValue
            // A token AuthGate accepted is visible ASCII, checked when it came in.
            value.withUTF8 { headers.add(name: "Authorization", value: $0, valueChecked: token.isWellFormed) }
            // The session's token goes with the session's proof only, never a client's.
            headers.remove(name: "DPoP")
            if token.isDPoP, let key = token.dpopKey,
                let proof = key.proof(
                    method: request.head.method, url: route.upstream.url(upstreamTarget), accessToken: token.value)
            {
                headers.add(name: "DPoP", value: proof)
            }
        }
        Self.addUpgradeFields(&headers, for: request.head)
        let span = r.trace?.upstream(&headers, route: route)
        let upstream = UpstreamRequest(
            method: request.head.method,
            destination: .origin(route.upstream, target: upstreamTarget),
            headers: headers, body: body, upgrade: request.head.upgrade != nil, clientIdentity: route.clientIdentity)
        let exchange = ProxyExchange(
            writer: r.writer, tunnelIdleTimeout: s.clientConfiguration.tunnelIdleTimeout, metrics: metrics,
            span: span, runner: runner)
        let transfer = s.clients.client(for: request.loop).start(upstream, handler: exchange)
        if !transfer.isFinished {
            exchange.transfer = transfer
            r.writer.cancelOnClientGone(transfer)
        }
    }
}

/// Protocol upgrades (WebSocket) through proxy routes: the request goes upstream with its
/// `Connection: upgrade` and `Upgrade` (and, on an authenticated route, the session's token,
/// refreshed and replayed on a 401 like any bodiless request); a `101` answer splices the
/// client connection to the upstream one (``ResponseWriter/switchProtocols(headers:to:idleTimeout:onEnd:)``).
extension ReverseProxy {
    /// Answers an upgrade this route cannot pass with 501 (``UpgradeRule``); true when it did.
    func refusedUpgrade(_ request: HTTPRequest, _ r: RouteContext) -> Bool {
        guard
            case .refuse(let problem) = UpgradeRule.verdict(
                for: request.head, upstream: r.route.upstream, client: r.settings.clientConfiguration)
        else { return false }
        r.writer.respond(problem: problem)
        r.end.finish(metrics, status: problem.status)
        return true
    }

    /// The header fields that make the upstream request an upgrade, added to the cleaned ones.
    static func addUpgradeFields(_ headers: inout HTTPHeaders, for head: RequestHead) {
        guard let proto = head.upgrade else { return }
        headers.replaceOrAdd(name: "Connection", value: "Upgrade")
        headers.replaceOrAdd(name: "Upgrade", value: proto)
    }
}
