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
    /// Secrets resolved by `main` (from files or the environment).
    public struct Secrets: Sendable {
        /// The default session's client secret.
        public var clientSecret: String?
        /// The admin API's bearer token (`nil`: the admin API takes no token).
        public var adminToken: String?
        /// The key that seals the tokens at rest.
        public var storeKey: TokenStoreKey
        /// The client secrets of the other sessions, by session name.
        public var sessionClientSecrets: [String: String]
        /// Creates the secrets.
        public init(
            clientSecret: String?, adminToken: String?, storeKey: TokenStoreKey, sessionClientSecrets: [String: String] = [:]
        ) {
            self.clientSecret = clientSecret
            self.adminToken = adminToken
            self.storeKey = storeKey
            self.sessionClientSecrets = sessionClientSecrets
        }

        /// The client secret of the session called `name`.
        func clientSecret(for name: String) -> String? {
            name == GatewayConfiguration.defaultSession ? clientSecret : sessionClientSecrets[name]
        }
    }

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
    private let eventTasks: [Task<Void, Never>]
    /// The tasks serving proxied requests (a request whose token is current starts none).
    public let proxyTasks: TaskTracker
    private let adminTasks: TaskTracker
    private let logger: Logger

    private init(
        group: EventLoopGroup, proxyServer: HTTPServer, adminServer: HTTPServer, probeServer: HTTPServer?,
        metricsServer: HTTPServer?, sessions: [String: GatewaySession],
        metrics: GatewayMetrics, readiness: Readiness, stores: GatewayStores, eventTasks: [Task<Void, Never>],
        proxyTasks: TaskTracker, adminTasks: TaskTracker, logger: Logger, reloader: GatewayReloader
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
    }

    /// Starts everything; throws when a store cannot be opened or a listener cannot be bound
    /// (a ``Runtime/RuntimeError``, `listen-failed`: a port in use, a Unix socket another
    /// process answers on or a file that is not a socket at its path), and a ``ConfigurationError`` when a listener
    /// is not valid, a socket's directory is missing, or the state directory or the key file
    /// is not owner-only (see ``StateDirectory``).
    ///
    /// With `reloadSource`, ``reloader`` reads the configuration again from it on a reload.
    /// The access log (``AccessLog``) writes to `accessLogger`, by default a logger labelled
    /// `authgate.access` from the process's logging system.
    public static func start(
        configuration c: GatewayConfiguration, secrets: Secrets, logger: Logger,
        clock: any AuthClock = SystemAuthClock(), sessionConfiguration: AuthActor.Configuration? = nil,
        reloadSource: GatewayReloader.Source? = nil, accessLogger: Logger? = nil
    ) async throws -> GatewayService {
        let accessLogger = accessLogger ?? Logger(label: "authgate.access")
        let group = try EventLoopGroup(loopCount: c.loops ?? EventLoopGroup.coreCount)
        let reloader = GatewayReloader(source: reloadSource, running: c, secrets: secrets, logger: logger)
        do {
            return try await start(c, secrets, logger, clock, sessionConfiguration, group, reloader, accessLogger)
        } catch {
            group.shutdown()
            throw error
        }
    }

    private static func start(
        _ c: GatewayConfiguration, _ secrets: Secrets, _ logger: Logger, _ clock: any AuthClock,
        _ sessionConfiguration: AuthActor.Configuration?, _ group: EventLoopGroup, _ reloader: GatewayReloader,
        _ accessLogger: Logger
    ) async throws -> GatewayService {
        let proxyAddress = try c.proxy.address(at: "proxy")
        let adminAddress = try c.admin.address(at: "admin")
        let probeAddress = try c.probes?.address(at: "probes")
        let metricsAddress = try c.metrics?.address(at: "metrics")
        try c.checkListenerDirectories()
        let upstreamConfig = c.upstreamClientConfiguration
        let home = group.loops[0]
        // The token endpoint has its own, shorter timeout: a request waiting on a refresh
        // waits at most this long, then is replayed or answered.
        let tokenClient = await UpstreamClient.make(on: home, configuration: c.tokenClientConfiguration)
        let replayRule = c.replayRule
        let discovery = IssuerDiscovery(
            transport: CurlTransport(client: tokenClient), logger: logger, allowInsecureHTTP: c.allowInsecureHTTP == true)
        let rejectionPolicy = c.upstreamRejection ?? UpstreamRejectionPolicy()
        let stores = try await GatewayStores.open(c, key: secrets.storeKey, logger: logger)
        // Closed when anything below fails (a discovery, a listener): handed over on success.
        var storesHandedOver = false
        defer { if !storesHandedOver { Task { await stores.close() } } }
        let tokenStore = stores.tokens
        let stateStore = stores.states
        var sessionConfig = sessionConfiguration ?? AuthActor.Configuration()
        if let skew = c.refreshSkewSeconds { sessionConfig.skew = .seconds(skew) }
        switch c.refreshLead {
        case .seconds(let s)?: sessionConfig.skew = .seconds(s)
        case .percent(let p)?: sessionConfig.leadFraction = Double(p) / 100
        case nil: break
        }
        if let s = c.refreshJitterSeconds { sessionConfig.jitter = .seconds(s) }
        if let n = c.refreshLoopLimit { sessionConfig.refreshWindow.maximumAttempts = n }
        let metrics = GatewayMetrics(sessions: c.allSessions.map(\.name))
        var sessions: [String: GatewaySession] = [:]
        var grantClients: [String: ReloadableGrantClient] = [:]
        for s in c.allSessions {
            let field = s.name == GatewayConfiguration.defaultSession ? "authorization" : "sessions[\(s.name)].authorization"
            let authorization = try await discovery.resolve(s.authorization, field: field)
            let authentication: ClientAuthentication =
                switch authorization.clientAuthentication ?? "basic" {
                case "post": .post
                case "none": .none
                default: .basic
                }
            let oauth = ReloadableGrantClient(
                configuration: .init(
                    tokenEndpoint: authorization.tokenEndpoint ?? "", clientID: authorization.clientID,
                    clientSecret: secrets.clientSecret(for: s.name), authentication: authentication,
                    mapping: authorization.mapping ?? .standard, revocationEndpoint: authorization.revocationEndpoint),
                transport: CurlTransport(client: tokenClient), clock: clock)
            grantClients[s.name] = oauth
            var sessionLogger = logger
            sessionLogger[metadataKey: "auth.session"] = "\(s.name)"
            let actor = AuthActor(
                account: AccountID(s.name), client: oauth, tokenStore: tokenStore, stateStore: stateStore, clock: clock,
                configuration: sessionConfig, logger: sessionLogger, executor: home, metricsFactory: metrics.factory,
                refreshCoordinator: stores.coordinator)
            let userInfo = s.userInfo.map {
                UserInfoProbe(
                    configuration: $0, session: actor, transport: CurlTransport(client: tokenClient), policy: rejectionPolicy,
                    rule: replayRule, logger: sessionLogger)
            }
            sessions[s.name] = GatewaySession(name: s.name, actor: actor, userInfo: userInfo)
        }
        let directory = c.stateDirectory
        let probes = sessions.values.sorted { $0.name < $1.name }.compactMap(\.userInfo)
        let actors = sessions.values.map(\.actor)
        let readiness = Readiness(
            storesWritable: stores.isWritable, freeBytes: stores.freeBytes,
            unsavedCredentials: { actors.contains { $0.holdsUnsavedCredentials } },
            pending: { probes.lazy.compactMap(\.notReadyReason).first }, sharedStore: stores.kind == "postgres")
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
        stores.follow(Dictionary(uniqueKeysWithValues: sessions.values.map { (AccountID($0.name), $0.actor) }))
        var eventTasks: [Task<Void, Never>] = []
        for s in sessions.values {
            guard let userInfo = s.userInfo else { continue }
            let events = s.actor.events.subscribe()
            eventTasks.append(Task { await userInfo.follow(events) })
        }
        let proxyResponder = ReverseProxy(
            routes: c.proxyRoutes, clientConfiguration: upstreamConfig,
            authentication: ProxyAuthentication(
                sessions: sessions.mapValues(\.actor), rejectionPolicy: rejectionPolicy,
                replayLimit: c.replayLimitBytes ?? 1 << 20, replayRule: replayRule),
            metrics: metrics, livenessPath: c.proxyLivenessPath ?? "/livez", trustedProxies: Set(c.trustForwardedFrom ?? []))
        proxyResponder.replaceSettings(c.proxySettings(previous: proxyResponder.settings, accessLogger: accessLogger))
        let budget = BufferBudget(limit: c.maxBufferedRequestBytes ?? 64 << 20)
        let proxyServer = HTTPServer(
            configuration: HTTPServerConfiguration(
                address: proxyAddress, maxConnections: c.maxConnections ?? 10_000, bufferBudget: budget),
            group: group, responder: proxyResponder)
        let admin = AdminAPI(
            configuration: .init(adminToken: c.adminTokenDisabled == true ? nil : secrets.adminToken), sessions: sessions,
            metrics: metrics, readiness: readiness, processGauges: { [weak proxyServer] in
                GatewayMetrics.ProcessGauges(
                    proxyConnections: proxyServer?.activeConnections ?? 0,
                    stateDirectoryFreeBytes: StateDirectory.freeBytes(directory), bufferedRequestBytes: budget.inUse,
                    upstreamQueueWaiting: proxyResponder.upstreamQueueWaiting)
            }, reloader: reloader, store: StoreView(stores))
        await reloader.attach(.init(proxy: proxyResponder, admin: admin, grantClients: grantClients, home: home, accessLogger: accessLogger, tokenClient: tokenClient))
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
            try adminServer.start()
            try proxyServer.start()
            try probeServer?.start()
            try metricsServer?.start()
        } catch {
            proxyServer.shutdown(grace: .zero)
            adminServer.shutdown(grace: .zero)
            probeServer?.shutdown(grace: .zero)
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
        storesHandedOver = true
        return GatewayService(
            group: group, proxyServer: proxyServer, adminServer: adminServer, probeServer: probeServer,
            metricsServer: metricsServer, sessions: sessions, metrics: metrics,
            readiness: readiness, stores: stores, eventTasks: eventTasks, proxyTasks: proxyResponder.tasks,
            adminTasks: admin.tasks,
            logger: logger, reloader: reloader)
    }

    /// Stops accepting, lets in-flight exchanges finish for up to `grace`, then stops the loops.
    /// The session's files are already durable (every change is written as it happens).
    ///
    /// The loops stop last: first the listeners close, the event streams end, and the
    /// tasks serving requests, the refreshes in flight and the logout revocations finish,
    /// so that none of them is left waiting on a loop that no longer runs.
    ///
    /// The whole drain takes at most `grace` + 3 s (13 s by default, inside the systemd unit's
    /// `TimeoutStopSec=15`): whatever is left of that after the exchanges, at least 1 s, goes
    /// to the refreshes and revocations in flight and to saving a rotated pair whose save
    /// had failed (``AuthCore/AuthActor/flushPendingCredentials()``).
    public func shutdown(grace: Duration = .seconds(10)) async {
        let clock = ContinuousClock()
        let deadline = clock.now + grace + .seconds(3)
        func left(atMost cap: Duration, atLeast floor: Duration = .zero) -> Duration {
            max(floor, min(cap, deadline - clock.now))
        }
        let proxy = proxyServer
        let admin = adminServer
        let probes = probeServer
        let scrapes = metricsServer
        let group = group
        await Self.onThread {
            // Closing the admin listener removes its socket file, when it is a Unix socket.
            admin.shutdown(grace: .zero)
            probes?.shutdown(grace: .zero)
            scrapes?.shutdown(grace: .zero)
            proxy.shutdown(grace: grace)
        }
        // End every subscription to the sessions (SSE streams, the user-info followers),
        // and wait for the gateway's own subscribers to end.
        for s in sessions.values { s.actor.events.finish() }
        for t in eventTasks { await t.value }
        let drained = await proxyTasks.idle(timeout: left(atMost: .seconds(5)))
        let adminDrained = await adminTasks.idle(timeout: left(atMost: .seconds(1)))
        // A refresh or revocation waits at most this long; past it, the loops stop anyway and
        // the upstream client cancels the transfer (logged: what waited on it is lost).
        let background = TaskTracker()
        for s in sessions.values {
            let actor = s.actor
            background.start(on: nil) { await actor.finishBackgroundWork() }
        }
        let backgroundDone = await background.idle(timeout: left(atMost: .seconds(5), atLeast: .seconds(1)))
        if !drained || !adminDrained || !backgroundDone {
            logger.warning(
                "work still running at shutdown; stopping the loops anyway",
                metadata: [
                    "proxy.tasks": "\(proxyTasks.count)", "admin.tasks": "\(adminTasks.count)",
                    "session.background": "\(background.count)",
                ])
        }
        await stores.close()
        await Self.onThread { group.shutdown() }
    }

    /// Runs blocking work on a thread of its own (never on a loop or the cooperative pool).
    private static func onThread(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                work()
                cont.resume()
            }
        }
    }
}
