import ArgumentParser
import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import Glibc
import HTTPWire
import Logging
import Runtime

/// `authgate dev`: everything in one process on fixed loopback ports — a fake
/// authorization server, a fake API that rejects expired tokens, and the gateway.
struct Dev: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run AuthGate in development mode on 127.0.0.1.")

    @Option(help: "Port of the proxy listener.") var port = 8080
    @Option(help: "Port of the admin API.") var adminPort = 8081
    @Option(help: "Port of the fake authorization server.") var authPort = 8082
    @Option(help: "Port of the fake API behind the proxy.") var apiPort = 8083
    @Option(help: "Lifetime of the access tokens the fake server issues, in seconds.") var tokenLifetime = 30
    @Option(help: "Refresh this many seconds before expiry (0: only when the API says 401).") var refreshSkew = 5
    @Option(help: "Where the dev session's encrypted tokens and state live.") var stateDir = ".authgate-dev"
    @Option(help: "Event loops (default: one per core).") var loops = EventLoopGroup.coreCount
    @Option(help: "Fake authorization server latency in milliseconds.") var authLatencyMs = 0
    @Option(help: "Refreshes that may replace a young token within 30 s before the refresh-loop guard stops them.")
    var refreshLoopLimit = 5
    @Flag(help: "Make the user-info call (GET /userinfo on the fake API) after each login and restore.")
    var userInfo = false

    func run() throws {
        LoggingSystem.bootstrap { label in
            var h = JSONLogHandler(label: label)
            h.logLevel = .info
            return h
        }
        let signals = SignalWaiter(SIGINT, SIGTERM)
        let logger = Logger(label: "authgate.dev")
        var bytes = [UInt8](repeating: 0, count: 24)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        let adminToken = bytes.map { String(format: "%02x", $0) }.joined()

        // The fake servers get their own loop.
        let fakes = try EventLoopGroup(loopCount: 1, name: "dev-fakes")
        var fakeConfig = FakeAuthorizationServer.Configuration()
        fakeConfig.accessTokenLifetime = .seconds(tokenLifetime)
        fakeConfig.latency = .milliseconds(authLatencyMs)
        let clock = SystemAuthClock()
        let authorization = FakeAuthorizationServer(configuration: fakeConfig, clock: clock)
        let authServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: authPort), group: fakes,
            responder: FakeAuthorizationServerResponder(server: authorization))
        let api = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: apiPort), group: fakes,
            responder: FakeResourceServer(authorization: authorization))
        try authServer.start()
        try api.start()

        var config = GatewayConfiguration(
            proxy: .init(host: "127.0.0.1", port: port), admin: .init(host: "127.0.0.1", port: adminPort),
            authorization: .init(
                tokenEndpoint: "http://127.0.0.1:\(authServer.port)/oauth/token", clientID: "authgate",
                clientAuthentication: "basic", revocationEndpoint: "http://127.0.0.1:\(authServer.port)/oauth/revoke"),
            routes: [
                .init(prefix: "/public", upstream: "http://127.0.0.1:\(api.port)", requiresAuthentication: false),
                .init(prefix: "/", upstream: "http://127.0.0.1:\(api.port)", requiresAuthentication: true),
            ],
            stateDirectory: stateDir, keyFile: "\(stateDir)/store.key", createKey: true, loops: loops)
        if userInfo { config.userInfo = UserInfoProbe.Configuration(url: "http://127.0.0.1:\(api.port)/userinfo") }
        // Dev mode's own scratch directory: made owner-only rather than refused.
        try FileManager.default.createDirectory(
            atPath: stateDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: stateDir)
        let key = try TokenStoreKey.load(fromFile: "\(stateDir)/store.key", createIfMissing: true)
        var sessionConfig = AuthActor.Configuration()
        sessionConfig.skew = .seconds(refreshSkew)
        sessionConfig.jitter = .zero
        sessionConfig.refreshWindow = RefreshWindow(interval: .seconds(30), maximumAttempts: max(1, refreshLoopLimit))
        let secrets = GatewayService.Secrets(clientSecret: "s3cret", adminToken: adminToken, storeKey: key)
        let sessionSettings = sessionConfig
        let gatewayConfig = config
        let service = try runBlocking {
            try await GatewayService.start(
                configuration: gatewayConfig, secrets: secrets, logger: logger, clock: clock, sessionConfiguration: sessionSettings)
        }
        let p = service.proxyServer.port
        let a = service.adminServer.port
        print(
            """

            AuthGate dev mode
              proxy          http://127.0.0.1:\(p)   (→ fake API on :\(api.port); /public/… is a guest route)
              admin API      http://127.0.0.1:\(a)   admin token: \(adminToken)
              fake authorization server http://127.0.0.1:\(authServer.port)   user alice / wonderland; tokens live \(tokenLifetime) s
              state          \(stateDir)/ (encrypted tokens, session state, store key)

            Try, in another terminal:
              export AG=\(adminToken)
              curl -i http://127.0.0.1:\(p)/api/hello                 # 401 login required: nothing reaches the API
              curl -i http://127.0.0.1:\(p)/public/hello              # guest route, no token needed
              curl -N -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/auth/events     # watch the session (keep it open)
              curl -H "Authorization: Bearer $AG" -H 'Content-Type: application/json' \\
                   -d '{"grant_type":"password","username":"alice","password":"wonderland"}' http://127.0.0.1:\(a)/auth/login
              curl -i http://127.0.0.1:\(p)/api/hello                 # 200: the token was attached
              sleep \(tokenLifetime); curl -i http://127.0.0.1:\(p)/api/hello   # refreshed on the way (see the events)
              curl -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/auth/session     # with --user-info: "registration"
              curl -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/metrics
              curl -X POST -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/auth/logout
              curl http://127.0.0.1:\(authServer.port)/stats           # what the fake authorization server saw

            """)
        fflush(nil)
        let sig = signals.wait()
        logger.info("shutting down", metadata: ["signal": "\(sig)"])
        try runBlocking { await service.shutdown(grace: .seconds(2)) }
        authServer.shutdown(grace: .zero)
        api.shutdown(grace: .zero)
        fakes.shutdown()
    }
}
