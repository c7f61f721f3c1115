import ArgumentParser
import AuthGateTesting
import Foundation
import Gateway
import Glibc
import Logging

/// `authgate dev`: everything in one process on fixed loopback ports — a fake
/// authorization server, a fake API that rejects expired tokens, and the gateway.
struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run AuthGate in development mode on 127.0.0.1.")

    @Option(help: "Port of the proxy listener.") var port = 8080
    @Option(help: "Port of the admin API.") var adminPort = 8081
    @Option(help: "Port of the fake authorization server.") var authPort = 8082
    @Option(help: "Port of the fake API behind the proxy.") var apiPort = 8083
    @Option(help: "Port of a metrics listener (/metrics without the admin token); none by default.") var metricsPort: Int?
    @Option(help: "Lifetime of the access tokens the fake server issues, in seconds.") var tokenLifetime = 30
    @Option(help: "Refresh this many seconds before expiry (0: only when the API says 401).") var refreshSkew = 5
    @Option(help: "Where the dev session's encrypted tokens and state live.") var stateDir = ".authgate-dev"
    @Option(help: "Event loops (default: one per core).") var loops: Int?
    @Option(help: "Fake authorization server latency in milliseconds.") var authLatencyMs = 0
    @Option(
        help:
            "Fake authorization server: a rotated refresh token presented again within this many milliseconds is accepted (a reuse grace window); 0: reuse always revokes the family."
    )
    var authReuseGraceMs = 0
    @Option(help: "Refreshes that may replace a young token within 30 s before the refresh-loop guard stops them.")
    var refreshLoopLimit = 5
    @Flag(help: "Make the user-info call (GET /userinfo on the fake API) after each login and restore.")
    var userInfo = false

    func run() async throws {
        JSONLogHandler.bootstrap(level: .info)
        // SIGINT and SIGTERM are blocked in every thread since the process started
        // (main.swift), so the service group's signal source sees them.
        let logger = Logger(label: "authgate.dev")
        var bytes = [UInt8](repeating: 0, count: 24)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        let adminToken = bytes.map { String(format: "%02x", $0) }.joined()
        var fakeConfig = FakeAuthorizationServer.Configuration()
        fakeConfig.accessTokenLifetime = .seconds(tokenLifetime)
        fakeConfig.latency = .milliseconds(authLatencyMs)
        if authReuseGraceMs > 0 { fakeConfig.reuseGraceWindow = .milliseconds(authReuseGraceMs) }
        // The fake servers get their own loop.
        try await FakeServers.with(configuration: fakeConfig, authorizationPort: authPort, apiPort: apiPort) { fakes in
            try await serve(fakes, adminToken: adminToken, logger: logger)
        }
    }

    /// Runs the gateway in front of `fakes` until SIGINT or SIGTERM.
    private func serve(_ fakes: FakeServers, adminToken: String, logger: Logger) async throws {
        let authorization = "http://127.0.0.1:\(fakes.authorizationPort)"
        let api = "http://127.0.0.1:\(fakes.apiPort)"
        var config = GatewayConfiguration(
            proxy: .init(host: "127.0.0.1", port: port), admin: .init(host: "127.0.0.1", port: adminPort),
            authorization: .init(
                tokenEndpoint: "\(authorization)/oauth/token", clientID: "authgate", clientAuthentication: "basic",
                revocationEndpoint: "\(authorization)/oauth/revoke"),
            routes: [
                .init(prefix: "/public", upstream: api, requiresAuthentication: false),
                .init(prefix: "/", upstream: api, requiresAuthentication: true),
            ],
            stateDirectory: stateDir, keyFile: "\(stateDir)/store.key", createKey: true, loops: loops)
        config.authorization.deviceAuthorizationEndpoint = "\(authorization)/oauth/device_authorization"
        if let metricsPort { config.metrics = .init(host: "127.0.0.1", port: metricsPort) }
        config.refreshSkewSeconds = refreshSkew
        config.refreshJitterSeconds = 0
        config.refreshLoopLimit = max(1, refreshLoopLimit)
        if userInfo { config.userInfo = UserInfoProbe.Configuration(url: "\(api)/userinfo") }
        // Dev mode's own scratch directory: made owner-only rather than refused.
        try FileManager.default.createDirectory(
            atPath: stateDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: stateDir)
        var secrets = try SecretSources.resolve(config, environment: [:])
        secrets.clientSecret = "s3cret"
        secrets.adminToken = adminToken
        let runner = GatewayRunner(configuration: config, secrets: secrets, logger: logger, grace: .seconds(2)) { gateway in
            banner(
                proxy: gateway.proxyServer.port, admin: gateway.adminServer.port, metrics: gateway.metricsServer?.port,
                fakes: fakes,
                adminToken: adminToken)
        }
        try await runner.runUntilSignalled()
    }

    private func banner(proxy p: Int, admin a: Int, metrics m: Int?, fakes: FakeServers, adminToken: String) {
        let authPort = fakes.authorizationPort
        print(
            """

            AuthGate dev mode
              proxy          http://127.0.0.1:\(p)   (→ fake API on :\(fakes.apiPort); /public/… is a guest route)
              admin API      http://127.0.0.1:\(a)   admin token: \(adminToken)
              fake authorization server http://127.0.0.1:\(authPort)   user alice / wonderland; tokens live \(tokenLifetime) s
              state          \(stateDir)/ (encrypted tokens, session state, store key)

            Try, in another terminal:
              export AG=\(adminToken)
              curl -i http://127.0.0.1:\(p)/api/hello                 # 401 login required: nothing reaches the API
              curl -i http://127.0.0.1:\(p)/public/hello              # guest route, no token needed
              AUTHGATE_ADMIN_TOKEN=$AG authgate events --admin http://127.0.0.1:\(a)   # watch the session (Ctrl-C ends it)
              curl -H "Authorization: Bearer $AG" -H 'Content-Type: application/json' \\
                   -d '{"grant_type":"password","username":"alice","password":"wonderland"}' http://127.0.0.1:\(a)/auth/login
              curl -i http://127.0.0.1:\(p)/api/hello                 # 200: the token was attached
              sleep \(tokenLifetime); curl -i http://127.0.0.1:\(p)/api/hello   # refreshed on the way (see the events)
              curl -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/auth/session     # with --user-info: "registration"
              curl -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/metrics\(m.map { "\n              curl http://127.0.0.1:\($0)/metrics                     # the same, no token: for Prometheus" } ?? "")
              curl -X POST -H "Authorization: Bearer $AG" http://127.0.0.1:\(a)/auth/logout
              AUTHGATE_ADMIN_TOKEN=$AG authgate login --grant device --admin http://127.0.0.1:\(a)   # prints a user code, waits
              curl -d user_code=CODE -d decision=approve http://127.0.0.1:\(authPort)/oauth/device   # approve it, as a person would
              curl http://127.0.0.1:\(authPort)/stats           # what the fake authorization server saw

            """)
        fflush(nil)
    }
}
