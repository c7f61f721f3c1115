public import AuthCore
public import Runtime

/// A ``FakeAuthorizationServer`` and a ``FakeResourceServer`` that accepts its tokens,
/// served over real HTTP on loopback on an event loop of their own: what `authgate dev`
/// puts behind the gateway.
///
/// ```swift
/// try FakeServers.with(configuration: config) { fakes in
///     print("token endpoint http://127.0.0.1:\(fakes.authorizationPort)/oauth/token")
/// }
/// ```
public final class FakeServers: Sendable {
    /// The authorization server (rotation, reuse detection, revocation, `/stats`).
    public let authorization: FakeAuthorizationServer
    /// The API behind the gateway.
    public let api: FakeResourceServer
    /// The loop both run on (a test may host more servers there).
    public let group: EventLoopGroup
    /// The authorization server's listener.
    public let authorizationServer: HTTPServer
    /// The API's listener.
    public let apiServer: HTTPServer

    /// The port the authorization server listens on.
    public var authorizationPort: Int { authorizationServer.port }
    /// The port the API listens on.
    public var apiPort: Int { apiServer.port }

    /// Starts both on `127.0.0.1` (port 0: any free port). Throws when a port is taken.
    public init(
        configuration: FakeAuthorizationServer.Configuration = .init(), clock: any AuthClock = SystemAuthClock(),
        authorizationPort: Int = 0, apiPort: Int = 0
    ) throws {
        group = try EventLoopGroup(loopCount: 1, name: "fakes")
        authorization = FakeAuthorizationServer(configuration: configuration, clock: clock)
        api = FakeResourceServer(authorization: authorization)
        authorizationServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: authorizationPort), group: group,
            responder: FakeAuthorizationServerResponder(server: authorization))
        apiServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: apiPort), group: group, responder: api)
        do {
            try authorizationServer.start()
            try apiServer.start()
        } catch {
            authorizationServer.shutdown(grace: .zero)
            group.shutdown()
            throw error
        }
    }

    /// Stops both servers and their loop; blocks until the loop has stopped.
    public func shutdown() {
        authorizationServer.shutdown(grace: .zero)
        apiServer.shutdown(grace: .zero)
        group.shutdown()
    }

    /// Runs `body` with both servers up, and stops them when it returns or throws.
    public static func with<Result>(
        configuration: FakeAuthorizationServer.Configuration = .init(), clock: any AuthClock = SystemAuthClock(),
        authorizationPort: Int = 0, apiPort: Int = 0, _ body: (FakeServers) throws -> Result
    ) throws -> Result {
        let fakes = try FakeServers(
            configuration: configuration, clock: clock, authorizationPort: authorizationPort, apiPort: apiPort)
        defer { fakes.shutdown() }
        return try body(fakes)
    }

    /// ``with(configuration:clock:authorizationPort:apiPort:_:)`` for an async `body`.
    public static func with<Result>(
        configuration: FakeAuthorizationServer.Configuration = .init(), clock: any AuthClock = SystemAuthClock(),
        authorizationPort: Int = 0, apiPort: Int = 0, _ body: (FakeServers) async throws -> Result
    ) async throws -> Result {
        let fakes = try FakeServers(
            configuration: configuration, clock: clock, authorizationPort: authorizationPort, apiPort: apiPort)
        defer { fakes.shutdown() }
        return try await body(fakes)
    }
}
