public import AuthCore
import Logging
import Runtime

extension GatewayService {
    /// The refresh timing of every session: `base` (``AuthCore/AuthActor/Configuration``'s
    /// defaults when `nil`) with what the configuration sets: `refresh_skew_seconds`, then
    /// `refresh_lead` (seconds before expiry, or a percentage of the lifetime left),
    /// `refresh_jitter_seconds` and `refresh_loop_limit`. When neither lead is set, a short
    /// token's lead follows `upstreamLatency` (``AuthCore/AuthActor/Configuration/upstreamLatency``).
    static func sessionConfiguration(
        _ c: GatewayConfiguration, base: AuthActor.Configuration?,
        upstreamLatency: (@Sendable () -> Duration?)? = nil
    ) -> AuthActor.Configuration {
        var sessionConfig = base ?? AuthActor.Configuration()
        if c.refreshLead == nil && c.refreshSkewSeconds == nil, let upstreamLatency {
            sessionConfig.upstreamLatency = upstreamLatency
        }
        if let skew = c.refreshSkewSeconds { sessionConfig.skew = .seconds(skew) }
        switch c.refreshLead {
        case .seconds(let s)?: sessionConfig.skew = .seconds(s)
        case .percent(let p)?: sessionConfig.leadFraction = Double(p) / 100
        case nil: break
        }
        if let s = c.refreshJitterSeconds { sessionConfig.jitter = .seconds(s) }
        if let n = c.refreshLoopLimit { sessionConfig.refreshWindow.maximumAttempts = n }
        return sessionConfig
    }

    /// Restores every session from the stores, in name order, before a listener opens. A
    /// session that cannot be restored is never left silently empty: the error is logged and
    /// `readiness` reports not ready, naming the first such session.
    static func restoreSessions(_ sessions: [String: GatewaySession], readiness: Readiness, logger: Logger) async {
        var restoreProblems: [String] = []
        for s in sessions.values.sorted(by: { $0.name < $1.name }) {
            do {
                let status = try await s.actor.restore()
                if status.isLoggedIn { s.userInfo?.expect(epoch: status.epoch) }
                logger.info(
                    "session restored",
                    metadata: [
                        "auth.session": "\(s.name)", "auth.logged_in": "\(status.isLoggedIn)", "auth.epoch": "\(status.epoch)",
                    ])
            } catch {
                // Never a silently empty session: not ready, and the reason is logged.
                restoreProblems.append("the session \(s.name) could not be restored: \(error)")
                logger.error(
                    "session restore failed; /readyz reports not ready",
                    metadata: ["auth.session": "\(s.name)", "error": "\(error)"])
            }
        }
        readiness.restored(restoreProblems.isEmpty, problem: restoreProblems.first)
    }

    /// One ``GatewaySession`` per configured session, each with the grant client a reload
    /// replaces, its actor on `home` over the shared `stores`, and its user-info call. Each
    /// session's authorization server is discovered first when the configuration names
    /// only its issuer.
    static func makeSessions(
        _ startup: Startup, stores: GatewayStores, metrics: GatewayMetrics,
        upstreamLatency: @escaping @Sendable () -> Duration?, home: EventLoop, tokenClient: UpstreamClient,
        discovery: IssuerDiscovery, rejectionPolicy: UpstreamRejectionPolicy, replayRule: ReplayRule
    ) async throws -> (sessions: [String: GatewaySession], grantClients: [String: ReloadableGrantClient]) {
        let c = startup.configuration
        let sessionConfig = sessionConfiguration(c, base: startup.sessionConfiguration, upstreamLatency: upstreamLatency)
        var sessions: [String: GatewaySession] = [:]
        var grantClients: [String: ReloadableGrantClient] = [:]
        for s in c.allSessions {
            let field = s.name == GatewayConfiguration.defaultSession ? "authorization" : "sessions[\(s.name)].authorization"
            let authorization = try await discovery.resolve(s.authorization, field: field)
            let (authentication, assertion) = GatewayConfiguration.clientAuthentication(authorization)
            let certificate = GatewayConfiguration.clientCertificate(authorization)
            let oauth = ReloadableGrantClient(
                configuration: .init(
                    tokenEndpoint: authorization.tokenEndpoint ?? "", clientID: authorization.clientID,
                    clientSecret: startup.secrets.clientSecret(for: s.name), authentication: authentication,
                    mapping: authorization.mapping ?? .standard, revocationEndpoint: authorization.revocationEndpoint,
                    assertion: assertion, certificate: certificate, jwtBearer: authorization.jwtBearerSettings,
                    tokenExchange: authorization.tokenExchangeSettings,
                    deviceAuthorizationEndpoint: authorization.deviceAuthorizationEndpoint),
                transport: CurlTransport(client: tokenClient), clock: startup.clock)
            grantClients[s.name] = oauth
            var sessionLogger = startup.logger
            sessionLogger[metadataKey: "auth.session"] = "\(s.name)"
            var actorConfig = sessionConfig
            actorConfig.dpop = GatewayConfiguration.dpopKeySource(authorization)
            if let certificate {
                let shown = ShownCertificate(certificate)
                actorConfig.shownCertificate = { shown.current() }
            }
            let actor = AuthActor(
                account: AccountID(s.name), client: oauth, tokenStore: stores.tokens, stateStore: stores.states,
                clock: startup.clock, configuration: actorConfig, logger: sessionLogger, executor: home,
                metricsFactory: metrics.factory, refreshCoordinator: stores.coordinator)
            let userInfo = s.userInfo.map {
                UserInfoProbe(
                    configuration: $0, session: actor, transport: CurlTransport(client: tokenClient), policy: rejectionPolicy,
                    rule: replayRule, logger: sessionLogger, certificate: certificate)
            }
            sessions[s.name] = GatewaySession(
                name: s.name, actor: actor, userInfo: userInfo,
                deviceLogin: authorization.deviceAuthorizationEndpoint != nil)
        }
        return (sessions, grantClients)
    }
}

/// One named session of a gateway: its actor (tokens, refresh, events) and, when
/// configured, its user-info call.
public struct GatewaySession: Sendable {
    /// The name routes and the admin API (`?session=`) use; the account in the stores.
    public let name: String
    /// The session's actor.
    public let actor: AuthActor
    /// The session's user-info call, if configured.
    public let userInfo: UserInfoProbe?
    /// Whether the session can log in with the device grant (RFC 8628): it has a device
    /// authorization endpoint.
    public let deviceLogin: Bool

    /// Creates a session.
    public init(name: String, actor: AuthActor, userInfo: UserInfoProbe? = nil, deviceLogin: Bool = false) {
        self.deviceLogin = deviceLogin
        self.name = name
        self.actor = actor
        self.userInfo = userInfo
    }
}

extension GatewayService {
    /// The `autoLogin` follower of every session that has one, with its session's actor.
    static func autoLogins(
        _ c: GatewayConfiguration, sessions: [String: GatewaySession], clock: any AuthClock, logger: Logger
    ) -> [(SessionAutoLogin, AuthActor)] {
        c.allSessions.compactMap { s in
            guard let settings = s.authorization.autoLogin, let actor = sessions[s.name]?.actor else { return nil }
            var sessionLogger = logger
            sessionLogger[metadataKey: "auth.session"] = "\(s.name)"
            return (SessionAutoLogin(method: settings.method, session: actor, clock: clock, logger: sessionLogger), actor)
        }
    }

    /// The followers of the sessions' events, subscribed now: each session's user-info call
    /// and `autoLogin`. Each returns when its session's events end.
    static func followers(
        of sessions: [String: GatewaySession], autoLogins: [(SessionAutoLogin, AuthActor)]
    ) -> [@Sendable () async -> Void] {
        let userInfo = sessions.values.compactMap { s -> (@Sendable () async -> Void)? in
            guard let probe = s.userInfo else { return nil }
            let events = s.actor.events.subscribe()
            return { await probe.follow(events) }
        }
        return userInfo
            + autoLogins.map { autoLogin, actor in
                let events = actor.events.subscribe()
                return { await autoLogin.follow(events) }
            }
    }
}
