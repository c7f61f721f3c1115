public import AuthCore
import Foundation
public import Logging
public import Runtime

/// The whole gateway, running: event loops, the proxy listener, the admin listener (TCP
/// or a Unix socket), the optional probe listener, the sessions and their stores.
///
/// `start` restores every session from the stores before either listener opens (SEEDS
/// row 4), so the first request already sees the restored sessions.
public final class GatewayService: Sendable {
    /// The event loops every listener and upstream client runs on.
    public let group: EventLoopGroup
    /// The proxy listener.
    public let proxyServer: HTTPServer
    /// The admin API's listener.
    public let adminServer: HTTPServer
    /// The probe listener (`/livez`, `/readyz` only), when configured.
    public let probeServer: HTTPServer?
    /// The metrics listener (`/metrics` only, no admin token), when configured.
    public let metricsServer: HTTPServer?
    /// Every session by name; `default` is always there.
    public let sessions: [String: GatewaySession]
    /// The metrics every part reports to (served at `/metrics`).
    public let metrics: GatewayMetrics
    /// What `/readyz` answers.
    public let readiness: Readiness
    /// The stores the sessions share.
    public let stores: GatewayStores
    /// Reloads the configuration (SIGHUP, `POST /auth/reload`).
    public let reloader: GatewayReloader
    /// The default session.
    public var session: AuthActor { sessions[GatewayConfiguration.defaultSession]!.actor }
    /// The default session's user-info call, when configured.
    public var userInfo: UserInfoProbe? { sessions[GatewayConfiguration.defaultSession]!.userInfo }
    /// Subscribers of the session's events (the user-info call) that shutdown waits for.
    let eventTasks: [Task<Void, Never>]
    /// The check of the sessions' DPoP key files that `/readyz` starts, which shutdown waits for.
    let keyFileCheck: SingleFlight
    /// The tasks serving proxied requests (a request whose token is current starts none).
    public let proxyTasks: TaskTracker
    let adminTasks: TaskTracker
    let logger: Logger

    private init(
        group: EventLoopGroup, proxyServer: HTTPServer, adminServer: HTTPServer, probeServer: HTTPServer?,
        metricsServer: HTTPServer?, sessions: [String: GatewaySession],
        metrics: GatewayMetrics, readiness: Readiness, stores: GatewayStores, eventTasks: [Task<Void, Never>],
        keyFileCheck: SingleFlight, proxyTasks: TaskTracker, adminTasks: TaskTracker, logger: Logger, reloader: GatewayReloader
    ) {
        self.reloader = reloader
        self.stores = stores
        self.proxyTasks = proxyTasks
        self.adminTasks = adminTasks
        self.logger = logger
        self.group = group
        self.proxyServer = proxyServer
        self.adminServer = adminServer
        self.probeServer = probeServer
        self.metricsServer = metricsServer
        self.sessions = sessions
        self.metrics = metrics
        self.readiness = readiness
        self.eventTasks = eventTasks
        self.keyFileCheck = keyFileCheck
    }

    /// Starts everything; throws when a store cannot be opened or a listener cannot be bound
    /// (a ``Runtime/RuntimeError``, `listen-failed`: a port in use, a Unix socket another
    /// process answers on or a file that is not a socket at its path), and a ``ConfigurationError`` when a listener
    /// is not valid, a socket's directory is missing, or the state directory or the key file
    /// is not owner-only (see ``StateDirectory``).
    ///
    /// With `reloadSource`, ``reloader`` reads the configuration again from it on a reload.
    /// The access log (``AccessLog``) writes to `accessLogger`, by default a logger labelled
    /// `authgate.access` from the process's logging system. A shared store's connections run
    /// in `storeRunner` (a service of the caller's group), or without one in a task of their
    /// own until ``shutdown(grace:)``.
    public static func start(
        configuration c: GatewayConfiguration, secrets: Secrets, logger: Logger,
        clock: any AuthClock = SystemAuthClock(), sessionConfiguration: AuthActor.Configuration? = nil,
        reloadSource: GatewayReloader.Source? = nil, accessLogger: Logger? = nil, storeRunner: StoreRunner? = nil
    ) async throws -> GatewayService {
        try await start(
            configuration: c, secrets: secrets, logger: logger, clock: clock, sessionConfiguration: sessionConfiguration,
            reloadSource: reloadSource, accessLogger: accessLogger, storeRunner: storeRunner, adaptStores: nil)
    }

    /// ``start(configuration:secrets:logger:clock:sessionConfiguration:reloadSource:accessLogger:storeRunner:)``,
    /// with the opened stores passed through `adaptStores` first (tests wrap them to hold or
    /// fail their writes).
    static func start(
        configuration c: GatewayConfiguration, secrets: Secrets, logger: Logger, clock: any AuthClock,
        sessionConfiguration: AuthActor.Configuration?, reloadSource: GatewayReloader.Source?, accessLogger: Logger?,
        storeRunner: StoreRunner?, adaptStores: (@Sendable (GatewayStores) -> GatewayStores)?
    ) async throws -> GatewayService {
        let accessLogger = accessLogger ?? Logger(label: "authgate.access")
        let group = try EventLoopGroup(loopCount: c.loops ?? EventLoopGroup.coreCount)
        let reloader = GatewayReloader(source: reloadSource, running: c, secrets: secrets, logger: logger)
        do {
            return try await start(
                c, secrets, logger, clock, sessionConfiguration, group, reloader, accessLogger, storeRunner,
                adaptStores ?? { $0 })
        } catch {
            group.shutdown()
            throw error
        }
    }

    private static func start(
        _ c: GatewayConfiguration, _ secrets: Secrets, _ logger: Logger, _ clock: any AuthClock,
        _ sessionConfiguration: AuthActor.Configuration?, _ group: EventLoopGroup, _ reloader: GatewayReloader,
        _ accessLogger: Logger, _ storeRunner: StoreRunner?, _ adaptStores: (GatewayStores) -> GatewayStores
    ) async throws -> GatewayService {
        let proxyAddress = try c.proxy.address(at: "proxy")
        let adminAddress = try c.admin.address(at: "admin")
        let probeAddress = try c.probes?.address(at: "probes")
        let metricsAddress = try c.metrics?.address(at: "metrics")
        try c.checkListenerDirectories()
        var upstreamConfig = c.upstreamClientConfiguration
        let home = group.loops[0]
        // The token endpoint has its own, shorter timeout: a request waiting on a refresh
        // waits at most this long, then is replayed or answered.
        let tokenClient = await UpstreamClient.make(on: home, configuration: c.tokenClientConfiguration)
        let replayRule = c.replayRule
        let discovery = IssuerDiscovery(
            transport: CurlTransport(client: tokenClient), logger: logger, allowInsecureHTTP: c.allowInsecureHTTP == true)
        let rejectionPolicy = c.upstreamRejection ?? UpstreamRejectionPolicy()
        let stores = adaptStores(
            try await GatewayStores.open(c, key: secrets.storeKey, logger: logger, runner: storeRunner))
        // Closed when anything below fails (a discovery, a listener), before the error goes on.
        do {
            let tokenStore = stores.tokens
            let stateStore = stores.states
            let metrics = GatewayMetrics(sessions: c.allSessions.map(\.name))
            let recent = metrics.recentUpstreamLatency()
            let sessionConfig = Self.sessionConfiguration(
                c, base: sessionConfiguration, upstreamLatency: { recent.estimate() })
            upstreamConfig.connectionGauges = metrics.upstreamConnections
            var sessions: [String: GatewaySession] = [:]
            var grantClients: [String: ReloadableGrantClient] = [:]
            for s in c.allSessions {
                let field = s.name == GatewayConfiguration.defaultSession ? "authorization" : "sessions[\(s.name)].authorization"
                let authorization = try await discovery.resolve(s.authorization, field: field)
                let (authentication, assertion) = GatewayConfiguration.clientAuthentication(authorization)
                let oauth = ReloadableGrantClient(
                    configuration: .init(
                        tokenEndpoint: authorization.tokenEndpoint ?? "", clientID: authorization.clientID,
                        clientSecret: secrets.clientSecret(for: s.name), authentication: authentication,
                        mapping: authorization.mapping ?? .standard, revocationEndpoint: authorization.revocationEndpoint,
                        assertion: assertion, certificate: GatewayConfiguration.clientCertificate(authorization),
                        jwtBearer: authorization.jwtBearerSettings, tokenExchange: authorization.tokenExchangeSettings,
                        deviceAuthorizationEndpoint: authorization.deviceAuthorizationEndpoint),
                    transport: CurlTransport(client: tokenClient), clock: clock)
                grantClients[s.name] = oauth
                var sessionLogger = logger
                sessionLogger[metadataKey: "auth.session"] = "\(s.name)"
                var actorConfig = sessionConfig
                actorConfig.dpop = GatewayConfiguration.dpopKeySource(authorization)
                if let certificate = GatewayConfiguration.clientCertificate(authorization) {
                    let shown = ShownCertificate(certificate)
                    actorConfig.shownCertificate = { shown.current() }
                }
                let actor = AuthActor(
                    account: AccountID(s.name), client: oauth, tokenStore: tokenStore, stateStore: stateStore, clock: clock,
                    configuration: actorConfig, logger: sessionLogger, executor: home, metricsFactory: metrics.factory,
                    refreshCoordinator: stores.coordinator)
                let userInfo = s.userInfo.map {
                    UserInfoProbe(
                        configuration: $0, session: actor, transport: CurlTransport(client: tokenClient), policy: rejectionPolicy,
                        rule: replayRule, logger: sessionLogger,
                        certificate: GatewayConfiguration.clientCertificate(authorization))
                }
                sessions[s.name] = GatewaySession(
                    name: s.name, actor: actor, userInfo: userInfo,
                    deviceLogin: authorization.deviceAuthorizationEndpoint != nil)
            }
            let directory = c.stateDirectory
            let probes = sessions.values.sorted { $0.name < $1.name }.compactMap(\.userInfo)
            let actors = sessions.values.map(\.actor)
            let credentialWatch = ClientCredentialWatch(c, logger: logger)
            // Sessions proving a key file's key: each readiness probe also checks that the file
            // still holds the key their tokens are bound to (a changed key ends the session),
            // one check at a time.
            let keyFileSessions = actors.filter {
                if case .file = $0.configuration.dpop { return true } else { return false }
            }
            let keyFileCheck = SingleFlight { for actor in keyFileSessions { _ = await actor.checkDPoPKey() } }
            let autoLogins = Self.autoLogins(c, sessions: sessions, clock: clock, logger: logger)
            let readiness = Readiness(
                storesWritable: stores.isWritable, freeBytes: stores.freeBytes,
                unsavedCredentials: { actors.contains { $0.holdsUnsavedCredentials } },
                pending: { probes.lazy.compactMap(\.notReadyReason).first }, sharedStore: stores.kind == "postgres",
                clientCredentialsUsable: {
                    if !keyFileSessions.isEmpty { keyFileCheck.start() }
                    return credentialWatch.usable()
                }, loggedIn: { autoLogins.allSatisfy { $0.0.isLoggedIn } },
                clockSkewed: { actors.contains { $0.clockSkew.isSkewed } },
                clientCertificateOutdated: { actors.contains { $0.clientCertificateOutdated } })
            await restoreSessions(sessions, readiness: readiness, logger: logger)
            stores.follow(Dictionary(uniqueKeysWithValues: sessions.values.map { (AccountID($0.name), $0.actor) }))
            var eventTasks: [Task<Void, Never>] = []
            for s in sessions.values {
                guard let userInfo = s.userInfo else { continue }
                let events = s.actor.events.subscribe()
                eventTasks.append(Task { await userInfo.follow(events) })
            }
            eventTasks += Self.follow(autoLogins)
            let proxyResponder = ReverseProxy(
                routes: c.proxyRoutes, clientConfiguration: upstreamConfig,
                authentication: ProxyAuthentication(
                    sessions: sessions.mapValues(\.actor), rejectionPolicy: rejectionPolicy,
                    replayLimit: c.replayLimitBytes ?? 1 << 20, replayRule: replayRule),
                metrics: metrics, livenessPath: c.proxyLivenessPath ?? "/livez", trustedProxies: Set(c.trustForwardedFrom ?? []))
            proxyResponder.replaceSettings(
                c.proxySettings(accessLogger: accessLogger, connectionGauges: metrics.upstreamConnections))
            let budget = BufferBudget(limit: c.maxBufferedRequestBytes ?? 64 << 20)
            let proxyServer = HTTPServer(
                configuration: HTTPServerConfiguration(
                    address: proxyAddress, maxConnections: c.maxConnections ?? 10_000, bufferBudget: budget),
                group: group, responder: proxyResponder)
            let admin = AdminAPI(
                configuration: .init(adminToken: c.adminTokenDisabled == true ? nil : secrets.adminToken), sessions: sessions,
                metrics: metrics, readiness: readiness,
                processGauges: { [weak proxyServer] in
                    GatewayMetrics.ProcessGauges(
                        proxyConnections: proxyServer?.activeConnections ?? 0,
                        stateDirectoryFreeBytes: StateDirectory.freeBytes(directory), bufferedRequestBytes: budget.inUse,
                        upstreamQueueWaiting: proxyResponder.upstreamQueueWaiting, upstreamLimits: proxyResponder.upstreamLimits)
                }, reloader: reloader, store: StoreView(stores))
            await reloader.attach(
                .init(
                    proxy: proxyResponder, admin: admin, grantClients: grantClients, home: home, accessLogger: accessLogger,
                    tokenClient: tokenClient))
            let adminServer = HTTPServer(
                configuration: HTTPServerConfiguration(address: adminAddress, maxConnections: 1_024, bufferBudget: budget),
                group: group, responder: admin)
            let probeServer = probeAddress.map {
                HTTPServer(
                    configuration: HTTPServerConfiguration(address: $0, maxConnections: 1_024), group: group,
                    responder: TokenFreeAPI(.probes(readiness)))
            }
            let metricsServer = metricsAddress.map {
                HTTPServer(
                    configuration: HTTPServerConfiguration(address: $0, maxConnections: 1_024), group: group,
                    responder: TokenFreeAPI(.metrics(admin.metricsEndpoint)))
            }
            do {
                // The admin listener first: a second instance over the same admin socket stops
                // there, before it shares the proxy's port (SO_REUSEPORT would let it). The probe
                // listener last: /readyz is not seen before the proxy accepts.
                try await adminServer.listen()
                try await proxyServer.listen()
                try await probeServer?.listen()
                try await metricsServer?.listen()
            } catch {
                await proxyServer.close(grace: .zero)
                await adminServer.close(grace: .zero)
                await probeServer?.close(grace: .zero)
                for s in sessions.values { s.actor.events.finish() }
                for t in eventTasks { await t.value }
                throw error
            }
            var listening: Logger.Metadata = [
                "proxy.address": "\(proxyServer.address)", "admin.address": "\(adminServer.address)",
                "proxy.port": "\(proxyServer.port)", "admin.port": "\(adminServer.port)", "loops": "\(group.loops.count)",
            ]
            if let probeServer { listening["probes.address"] = "\(probeServer.address)" }
            if let metricsServer { listening["metrics.address"] = "\(metricsServer.address)" }
            logger.info("listening", metadata: listening)
            return GatewayService(
                group: group, proxyServer: proxyServer, adminServer: adminServer, probeServer: probeServer,
                metricsServer: metricsServer, sessions: sessions, metrics: metrics,
                readiness: readiness, stores: stores, eventTasks: eventTasks, keyFileCheck: keyFileCheck,
                proxyTasks: proxyResponder.tasks,
                adminTasks: admin.tasks,
                logger: logger, reloader: reloader)
        } catch {
            await stores.close()
            throw error
        }
    }
}
