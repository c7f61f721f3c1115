public import AuthCore
public import Runtime

/// Everything the reverse proxy reads from the configuration, as one immutable snapshot: the
/// routes, their in-flight bounds, the upstream clients (their timeouts), what counts as a
/// rejected token, the replay rule and limit, the liveness path and the trusted proxies.
///
/// A request reads the snapshot once, when it arrives, and keeps it to its end: a reload
/// (``ReverseProxy/replaceSettings(_:)``) never changes the rules under a request in flight,
/// and requests that arrive after it see all of the new ones, never half of them.
public final class ProxySettings: Sendable {
    /// The routes, longest prefix first.
    public let table: RouteTable
    /// Per bounded route prefix, its in-flight limit (``limiters(for:)``).
    let limiters: [String: InFlightLimiter]
    /// The same limiters by the identity of the table's routes (``ProxyRoute/identity``),
    /// for the request path: a few comparisons, where the dictionary would hash the prefix.
    private let bound: [(route: ObjectIdentifier, limiter: InFlightLimiter)]
    /// One upstream client per loop, sharing ``clientConfiguration``.
    let clients: UpstreamClientPool
    /// The upstream clients' settings (timeouts, CA bundle).
    public let clientConfiguration: UpstreamClientConfiguration
    /// Which upstream answers mean "token rejected".
    public let rejectionPolicy: UpstreamRejectionPolicy
    /// When a rejected request is sent again.
    public let replayRule: ReplayRule
    /// Request bodies up to this size are buffered for a replay.
    public let replayLimit: Int
    /// The path the proxy listener answers itself for liveness.
    public let livenessPath: String?
    /// Clients whose `X-Forwarded-For` is kept.
    public let trustedProxies: Set<String>
    /// The access log; nil when it is off.
    public let accessLog: AccessLog?

    /// Creates a snapshot with its own upstream clients and in-flight bounds. Installed by a
    /// reload (``ReverseProxy/replaceSettings(_:)``), it takes over the running ones that
    /// still fit (``succeeding(_:)``).
    public convenience init(
        routes: [ProxyRoute], clientConfiguration: UpstreamClientConfiguration, rejectionPolicy: UpstreamRejectionPolicy,
        replayRule: ReplayRule, replayLimit: Int, livenessPath: String?, trustedProxies: Set<String>,
        accessLog: AccessLog? = nil
    ) {
        self.init(
            table: RouteTable(routes), limiters: Self.limiters(for: routes),
            clients: UpstreamClientPool(configuration: clientConfiguration),
            clientConfiguration: clientConfiguration, rejectionPolicy: rejectionPolicy, replayRule: replayRule,
            replayLimit: replayLimit, livenessPath: livenessPath, trustedProxies: trustedProxies, accessLog: accessLog)
    }

    private init(
        table: RouteTable, limiters: [String: InFlightLimiter], clients: UpstreamClientPool,
        clientConfiguration: UpstreamClientConfiguration, rejectionPolicy: UpstreamRejectionPolicy, replayRule: ReplayRule,
        replayLimit: Int, livenessPath: String?, trustedProxies: Set<String>, accessLog: AccessLog?
    ) {
        self.table = table
        self.limiters = limiters
        self.bound = table.routes.compactMap { r in limiters[r.prefix].map { (r.identity, $0) } }
        self.clients = clients
        self.clientConfiguration = clientConfiguration
        self.rejectionPolicy = rejectionPolicy
        self.replayRule = replayRule
        self.replayLimit = replayLimit
        self.livenessPath = livenessPath
        self.trustedProxies = trustedProxies
        self.accessLog = accessLog
    }

    /// These settings as they take over from `previous`, the running ones: its upstream
    /// clients are kept when the client settings are the same, and a route's in-flight bound
    /// is kept when its prefix and origin are, taking the new limit and timeout now — the
    /// requests it counts and queues stay counted across the reload, so the route never has
    /// more at its upstream than the new limit allows (``succeeding(_:_:)``). Call only to
    /// install the result.
    func succeeding(_ previous: ProxySettings) -> ProxySettings {
        let limiters = Self.succeeding(self.limiters, previous.limiters)
        let clients = previous.clientConfiguration.sameSettings(as: clientConfiguration) ? previous.clients : self.clients
        return ProxySettings(
            table: table, limiters: limiters, clients: clients, clientConfiguration: clientConfiguration,
            rejectionPolicy: rejectionPolicy, replayRule: replayRule, replayLimit: replayLimit, livenessPath: livenessPath,
            trustedProxies: trustedProxies, accessLog: accessLog)
    }

    /// The in-flight limit of `route`, one of ``table``'s; nil: unbounded.
    func limiter(for route: ProxyRoute) -> InFlightLimiter? {
        guard !bound.isEmpty else { return nil }
        let id = route.identity
        for entry in bound where entry.route == id { return entry.limiter }
        return nil
    }

    /// Authenticated requests waiting for a slot at their route's upstream.
    var upstreamQueueWaiting: Int {
        upstreamLimits.reduce(0) { $0 + $1.waiting }
    }
}

extension UpstreamClientConfiguration {
    /// Whether two configurations make the same clients.
    func sameSettings(as other: UpstreamClientConfiguration) -> Bool {
        connectTimeout == other.connectTimeout && totalTimeout == other.totalTimeout && idleTimeout == other.idleTimeout
            && maxConnectionsPerHost == other.maxConnectionsPerHost && caFile == other.caFile && caPath == other.caPath
            && clientCertificate == other.clientCertificate && clientKey == other.clientKey && http2 == other.http2
            && unixSocketPath == other.unixSocketPath && loopHTTP1 == other.loopHTTP1
    }
}
