public import AuthCore
import Foundation
public import Logging
public import Runtime

/// The whole gateway, running: event loops, the proxy listener, the admin listener,
/// the session and its stores.
///
/// `start` restores the session from the stores before either listener opens (SEEDS
/// row 4), so the first request already sees the restored session.
public final class GatewayService: Sendable {
    /// Secrets resolved by `main` (from files or the environment).
    public struct Secrets: Sendable {
        public var clientSecret: String?
        public var adminToken: String?
        public var storeKey: TokenStoreKey
        public init(clientSecret: String?, adminToken: String?, storeKey: TokenStoreKey) {
            self.clientSecret = clientSecret
            self.adminToken = adminToken
            self.storeKey = storeKey
        }
    }

    public let group: EventLoopGroup
    public let proxyServer: HTTPServer
    public let adminServer: HTTPServer
    public let session: AuthActor
    public let metrics: GatewayMetrics
    public let readiness: Readiness
    /// The user-info call, when configured.
    public let userInfo: UserInfoProbe?
    /// Subscribers of the session's events (the user-info call) that shutdown waits for.
    private let eventTasks: [Task<Void, Never>]

    private init(
        group: EventLoopGroup, proxyServer: HTTPServer, adminServer: HTTPServer, session: AuthActor, metrics: GatewayMetrics,
        readiness: Readiness, userInfo: UserInfoProbe?, eventTasks: [Task<Void, Never>]
    ) {
        self.group = group
        self.proxyServer = proxyServer
        self.adminServer = adminServer
        self.session = session
        self.metrics = metrics
        self.readiness = readiness
        self.userInfo = userInfo
        self.eventTasks = eventTasks
    }

    /// Starts everything; throws when a store cannot be opened or a port cannot be bound.
    public static func start(
        configuration c: GatewayConfiguration, secrets: Secrets, logger: Logger,
        clock: any AuthClock = SystemAuthClock(), sessionConfiguration: AuthActor.Configuration? = nil
    ) async throws -> GatewayService {
        let group = try EventLoopGroup(loopCount: c.loops ?? EventLoopGroup.coreCount)
        do {
            return try await start(c, secrets, logger, clock, sessionConfiguration, group)
        } catch {
            group.shutdown()
            throw error
        }
    }

    private static func start(
        _ c: GatewayConfiguration, _ secrets: Secrets, _ logger: Logger, _ clock: any AuthClock,
        _ sessionConfiguration: AuthActor.Configuration?, _ group: EventLoopGroup
    ) async throws -> GatewayService {
        var upstreamConfig = UpstreamClientConfiguration()
        upstreamConfig.caFile = c.caFile
        if let s = c.connectTimeoutSeconds { upstreamConfig.connectTimeout = .seconds(s) }
        if let s = c.upstreamTimeoutSeconds { upstreamConfig.totalTimeout = .seconds(s) }
        let home = group.loops[0]
        let tokenClient = await UpstreamClient.make(on: home, configuration: upstreamConfig)
        let authentication: ClientAuthentication =
            switch c.authorization.clientAuthentication ?? "basic" {
            case "post": .post
            case "none": .none
            default: .basic
            }
        let oauth = OAuth2Client(
            configuration: .init(
                tokenEndpoint: c.authorization.tokenEndpoint, clientID: c.authorization.clientID,
                clientSecret: secrets.clientSecret, authentication: authentication,
                mapping: c.authorization.mapping ?? .standard, revocationEndpoint: c.authorization.revocationEndpoint),
            transport: CurlTransport(client: tokenClient), clock: clock)
        let rejectionPolicy = c.upstreamRejection ?? UpstreamRejectionPolicy()
        try FileManager.default.createDirectory(atPath: c.stateDirectory, withIntermediateDirectories: true)
        let tokenStore = try EncryptedFileTokenStore(directory: c.stateDirectory, key: secrets.storeKey)
        let stateStore = try FileSessionStateStore(directory: c.stateDirectory)
        var sessionConfig = sessionConfiguration ?? AuthActor.Configuration()
        if let skew = c.refreshSkewSeconds { sessionConfig.skew = .seconds(skew) }
        let metrics = GatewayMetrics()
        let session = AuthActor(
            client: oauth, tokenStore: tokenStore, stateStore: stateStore, clock: clock, configuration: sessionConfig,
            logger: logger, executor: home, metricsFactory: metrics.factory)
        let userInfo = c.userInfo.map {
            UserInfoProbe(
                configuration: $0, session: session, transport: CurlTransport(client: tokenClient), policy: rejectionPolicy,
                logger: logger)
        }
        let directory = c.stateDirectory
        let readiness = Readiness(storesWritable: { access(directory, W_OK) == 0 }, pending: { userInfo?.notReadyReason })
        do {
            let status = try await session.restore()
            if status.isLoggedIn { userInfo?.expect(epoch: status.epoch) }
            readiness.restored(true)
            logger.info(
                "session restored", metadata: ["auth.logged_in": "\(status.isLoggedIn)", "auth.epoch": "\(status.epoch)"])
        } catch {
            // Never a silently empty session: not ready, and the reason is logged.
            readiness.restored(false, problem: "the session could not be restored: \(error)")
            logger.error("session restore failed; /readyz reports not ready", metadata: ["error": "\(error)"])
        }
        var eventTasks: [Task<Void, Never>] = []
        if let userInfo {
            let events = session.events.subscribe()
            eventTasks.append(Task { await userInfo.follow(events) })
        }
        let proxyResponder = ReverseProxy(
            routes: c.proxyRoutes, clientConfiguration: upstreamConfig,
            authentication: ProxyAuthentication(
                session: session, rejectionPolicy: rejectionPolicy,
                replayLimit: c.replayLimitBytes ?? 1 << 20),
            metrics: metrics, livenessPath: c.proxyLivenessPath ?? "/livez")
        let proxyServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: c.proxy.host, port: c.proxy.port), group: group,
            responder: proxyResponder)
        let admin = AdminAPI(
            configuration: .init(adminToken: c.adminTokenDisabled == true ? nil : secrets.adminToken), session: session,
            metrics: metrics, readiness: readiness, proxyConnections: { [weak proxyServer] in proxyServer?.activeConnections ?? 0 },
            userInfo: userInfo)
        let adminServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: c.admin.host, port: c.admin.port), group: group, responder: admin)
        do {
            try proxyServer.start()
            try adminServer.start()
        } catch {
            proxyServer.shutdown(grace: .zero)
            session.events.finish()
            for t in eventTasks { await t.value }
            throw error
        }
        logger.info(
            "listening",
            metadata: ["proxy.port": "\(proxyServer.port)", "admin.port": "\(adminServer.port)", "loops": "\(group.loops.count)"])
        return GatewayService(
            group: group, proxyServer: proxyServer, adminServer: adminServer, session: session, metrics: metrics,
            readiness: readiness, userInfo: userInfo, eventTasks: eventTasks)
    }

    /// Stops accepting, lets in-flight exchanges finish for up to `grace`, then stops the loops.
    /// The session's files are already durable (every change is written as it happens).
    public func shutdown(grace: Duration = .seconds(10)) async {
        // A logout's revocation still on its way goes out before the loops stop.
        await session.finishRevocations()
        let proxy = proxyServer
        let admin = adminServer
        let group = group
        await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                admin.shutdown(grace: .zero)
                proxy.shutdown(grace: grace)
                group.shutdown()
                cont.resume()
            }
        }
        // End every subscription to this session (SSE streams, the user-info follower), then
        // wait for its own subscribers to end, so nothing of this gateway outlives it.
        session.events.finish()
        for t in eventTasks { await t.value }
    }
}
