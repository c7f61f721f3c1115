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
    /// Every listener.
    let listeners: GatewayListeners
    /// The proxy listener.
    public var proxyServer: HTTPServer { listeners.proxy }
    /// The admin API's listener.
    public var adminServer: HTTPServer { listeners.admin }
    /// The probe listener (`/livez`, `/readyz` only), when configured.
    public var probeServer: HTTPServer? { listeners.probes }
    /// The metrics listener (`/metrics` only, no admin token), when configured.
    public var metricsServer: HTTPServer? { listeners.metrics }
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
    /// The followers of the sessions' events (the user-info call, `autoLogin`) that shutdown
    /// waits for once it has ended the events.
    let followers: TaskTracker
    /// The check of the sessions' DPoP key files that `/readyz` starts, which shutdown waits for.
    let keyFileCheck: SingleFlight
    /// The tasks serving proxied requests (a request whose token is current starts none).
    public let proxyTasks: TaskTracker
    let adminTasks: TaskTracker
    let logger: Logger

    private init(
        group: EventLoopGroup, listeners: GatewayListeners, sessions: [String: GatewaySession],
        metrics: GatewayMetrics, readiness: Readiness, stores: GatewayStores, followers: TaskTracker,
        keyFileCheck: SingleFlight, proxyTasks: TaskTracker, adminTasks: TaskTracker, logger: Logger, reloader: GatewayReloader
    ) {
        self.reloader = reloader
        self.stores = stores
        self.proxyTasks = proxyTasks
        self.adminTasks = adminTasks
        self.logger = logger
        self.group = group
        self.listeners = listeners
        self.sessions = sessions
        self.metrics = metrics
        self.readiness = readiness
        self.followers = followers
        self.keyFileCheck = keyFileCheck
    }

    /// Starts everything; throws when a store cannot be opened or a listener cannot be bound
    /// (a ``Runtime/RuntimeError``, `listen-failed`: a port in use, a Unix socket another
    /// process answers on or a file that is not a socket at its path), and a ``GatewayError`` when a listener
    /// is not valid, a socket's directory is missing, or the state directory or the key file
    /// is not owner-only (see ``StateDirectory``).
    ///
    /// With `reloadSource`, ``reloader`` reads the configuration again from it on a reload.
    /// The access log (``AccessLog``) writes to `accessLogger`, by default a logger labelled
    /// `authgate.access` from the process's logging system. A shared store's connections and
    /// the sessions' followers run in `background` (a service of the caller's group), or
    /// without one in tasks of their own until ``shutdown(grace:)``.
    public static func start(
        configuration c: GatewayConfiguration, secrets: Secrets, logger: Logger,
        clock: any AuthClock = SystemAuthClock(), sessionConfiguration: AuthActor.Configuration? = nil,
        reloadSource: GatewayReloader.Source? = nil, accessLogger: Logger? = nil, background: BackgroundRunner? = nil
    ) async throws -> GatewayService {
        try await start(
            Startup(
                configuration: c, secrets: secrets, logger: logger, clock: clock,
                sessionConfiguration: sessionConfiguration, reloadSource: reloadSource,
                accessLogger: accessLogger ?? Logger(label: "authgate.access"), background: background))
    }

    /// Starts what `startup` describes (``start(configuration:secrets:logger:clock:sessionConfiguration:reloadSource:accessLogger:background:)``).
    static func start(_ startup: Startup) async throws -> GatewayService {
        let c = startup.configuration
        let group = try EventLoopGroup(loopCount: c.loops ?? EventLoopGroup.coreCount)
        let reloader = GatewayReloader(
            source: startup.reloadSource, running: c, secrets: startup.secrets, logger: startup.logger)
        do {
            return try await start(startup, group: group, reloader: reloader)
        } catch {
            await group.close()
            throw error
        }
    }

    private static func start(
        _ startup: Startup, group: EventLoopGroup, reloader: GatewayReloader
    ) async throws -> GatewayService {
        let c = startup.configuration
        let logger = startup.logger
        // Checked before anything opens: a listener that cannot be valid stops the start here.
        let addresses = try ListenerAddresses(c)
        var upstreamConfig = c.upstreamClientConfiguration
        let home = group.loops[0]
        // The token endpoint has its own, shorter timeout: a request waiting on a refresh
        // waits at most this long, then is replayed or answered.
        let tokenClient = await UpstreamClient.make(on: home, configuration: c.tokenClientConfiguration)
        let replayRule = c.replayRule
        let discovery = IssuerDiscovery(
            transport: CurlTransport(client: tokenClient), logger: logger, allowInsecureHTTP: c.allowInsecureHTTP == true)
        let rejectionPolicy = c.upstreamRejection ?? UpstreamRejectionPolicy()
        let stores = startup.adaptStores(
            try await GatewayStores.open(c, key: startup.secrets.storeKey, logger: logger, runner: startup.background))
        // Closed when anything below fails (a discovery, a listener), before the error goes on.
        do {
            let metrics = GatewayMetrics(sessions: c.allSessions.map(\.name))
            let recent = metrics.recentUpstreamLatency()
            upstreamConfig.connectionGauges = metrics.upstreamConnections
            let (sessions, grantClients) = try await makeSessions(
                startup, stores: stores, metrics: metrics, upstreamLatency: { recent.estimate() }, home: home,
                tokenClient: tokenClient, discovery: discovery, rejectionPolicy: rejectionPolicy, replayRule: replayRule)
            let autoLogins = Self.autoLogins(c, sessions: sessions, clock: startup.clock, logger: logger)
            let (readiness, keyFileCheck) = Self.readiness(
                c, sessions: sessions, stores: stores, autoLogins: autoLogins, logger: logger)
            await restoreSessions(sessions, readiness: readiness, logger: logger)
            stores.follow(Dictionary(uniqueKeysWithValues: sessions.values.map { (AccountID($0.name), $0.actor) }))
            let followers = Self.startFollowers(of: sessions, autoLogins: autoLogins, in: startup.background)
            let proxyResponder = ReverseProxy(
                routes: c.proxyRoutes, clientConfiguration: upstreamConfig,
                authentication: ProxyAuthentication(
                    sessions: sessions.mapValues(\.actor), rejectionPolicy: rejectionPolicy,
                    replayLimit: c.replayLimitBytes ?? 1 << 20, replayRule: replayRule),
                metrics: metrics, livenessPath: c.proxyLivenessPath ?? "/livez", trustedProxies: Set(c.trustForwardedFrom ?? []))
            proxyResponder.replaceSettings(
                c.proxySettings(accessLogger: startup.accessLogger, connectionGauges: metrics.upstreamConnections))
            let (listeners, admin) = Self.listeners(
                c, startup, at: addresses, group: group, proxy: proxyResponder, sessions: sessions, metrics: metrics,
                readiness: readiness,
                stores: stores, reloader: reloader)
            await reloader.attach(
                .init(
                    proxy: proxyResponder, admin: admin, grantClients: grantClients, home: home,
                    accessLogger: startup.accessLogger,
                    tokenClient: tokenClient))
            do {
                try await listeners.listen()
            } catch {
                for s in sessions.values { s.actor.events.finish() }
                await followers.idle(timeout: .seconds(5))
                throw error
            }
            var listening = listeners.metadata
            listening["loops"] = "\(group.loops.count)"
            logger.info("listening", metadata: listening)
            return GatewayService(
                group: group, listeners: listeners, sessions: sessions, metrics: metrics,
                readiness: readiness, stores: stores, followers: followers, keyFileCheck: keyFileCheck,
                proxyTasks: proxyResponder.tasks,
                adminTasks: admin.tasks,
                logger: logger, reloader: reloader)
        } catch {
            await stores.close()
            throw error
        }
    }
}

// MARK: Starting, step by step

extension GatewayService {
    /// What `/readyz` asks of the parts, and the check of the sessions' DPoP key files it
    /// starts (which shutdown waits for).
    private static func readiness(
        _ c: GatewayConfiguration, sessions: [String: GatewaySession], stores: GatewayStores,
        autoLogins: [(SessionAutoLogin, AuthActor)], logger: Logger
    ) -> (Readiness, SingleFlight) {
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
        return (readiness, keyFileCheck)
    }

    /// Starts the followers of the sessions' events (the user-info call, `autoLogin`): in
    /// `background`, the caller's group, when there is one; else in tasks of their own.
    private static func startFollowers(
        of sessions: [String: GatewaySession], autoLogins: [(SessionAutoLogin, AuthActor)], in background: BackgroundRunner?
    ) -> TaskTracker {
        let followers = TaskTracker()
        for follower in Self.followers(of: sessions, autoLogins: autoLogins) {
            if let background {
                background.run(followers.counted(follower))
            } else {
                followers.start(on: nil, follower)
            }
        }
        return followers
    }

    /// Where each listener listens: checked (each address valid, each Unix socket's directory
    /// there) before anything opens.
    private struct ListenerAddresses {
        let proxy: ListenAddress
        let admin: ListenAddress
        let probes: ListenAddress?
        let metrics: ListenAddress?

        init(_ c: GatewayConfiguration) throws {
            proxy = try c.proxy.address(at: "proxy")
            admin = try c.admin.address(at: "admin")
            probes = try c.probes?.address(at: "probes")
            metrics = try c.metrics?.address(at: "metrics")
            try c.checkListenerDirectories()
        }
    }

    /// The listeners, not yet listening: the proxy's for `proxy`, the admin API's (returned
    /// too, for the reloader), and the probe and metrics listeners when configured.
    private static func listeners(
        _ c: GatewayConfiguration, _ startup: Startup, at addresses: ListenerAddresses, group: EventLoopGroup,
        proxy: ReverseProxy, sessions: [String: GatewaySession], metrics: GatewayMetrics, readiness: Readiness,
        stores: GatewayStores, reloader: GatewayReloader
    ) -> (GatewayListeners, AdminAPI) {
        let budget = BufferBudget(limit: c.maxBufferedRequestBytes ?? 64 << 20)
        let proxyServer = HTTPServer(
            configuration: HTTPServerConfiguration(
                address: addresses.proxy, maxConnections: c.maxConnections ?? 10_000, bufferBudget: budget),
            group: group, responder: proxy)
        let directory = c.stateDirectory
        let admin = AdminAPI(
            configuration: .init(adminToken: c.adminTokenDisabled == true ? nil : startup.secrets.adminToken),
            sessions: sessions,
            metrics: metrics, readiness: readiness,
            processGauges: { [weak proxyServer] in
                GatewayMetrics.ProcessGauges(
                    proxyConnections: proxyServer?.activeConnections ?? 0,
                    stateDirectoryFreeBytes: StateDirectory.freeBytes(directory), bufferedRequestBytes: budget.inUse,
                    upstreamQueueWaiting: proxy.upstreamQueueWaiting, upstreamLimits: proxy.upstreamLimits)
            }, reloader: reloader, store: StoreView(stores))
        let adminServer = HTTPServer(
            configuration: HTTPServerConfiguration(address: addresses.admin, maxConnections: 1_024, bufferBudget: budget),
            group: group, responder: admin)
        let probeServer = addresses.probes.map {
            HTTPServer(
                configuration: HTTPServerConfiguration(address: $0, maxConnections: 1_024), group: group,
                responder: TokenFreeAPI(.probes(readiness)))
        }
        let metricsServer = addresses.metrics.map {
            HTTPServer(
                configuration: HTTPServerConfiguration(address: $0, maxConnections: 1_024), group: group,
                responder: TokenFreeAPI(.metrics(admin.metricsEndpoint)))
        }
        let listeners = GatewayListeners(proxy: proxyServer, admin: adminServer, probes: probeServer, metrics: metricsServer)
        return (listeners, admin)
    }
}

extension GatewayService {
    /// What a gateway starts from: the configuration and secrets, and the few things a
    /// caller may supply instead of the defaults (a clock, the sessions' base timing, where
    /// a reload reads from, the access log, where the background work runs).
    struct Startup: Sendable {
        var configuration: GatewayConfiguration
        var secrets: Secrets
        var logger: Logger
        var clock: any AuthClock = SystemAuthClock()
        var sessionConfiguration: AuthActor.Configuration?
        var reloadSource: GatewayReloader.Source?
        var accessLogger: Logger
        var background: BackgroundRunner?
        /// Applied to the stores once opened, before any session uses them (tests wrap them
        /// to hold or fail their writes).
        var adaptStores: @Sendable (GatewayStores) -> GatewayStores = { $0 }
    }
}

extension GatewayService {
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
}
