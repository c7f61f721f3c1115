public import AuthCore
public import Runtime

/// A ``FakeAuthorizationServer`` and a ``FakeResourceServer`` that accepts its tokens,
/// served over real HTTP on loopback on an event loop of their own: what `authgate dev`
/// puts behind the gateway.
///
/// ```swift
/// try await FakeServers.with(configuration: config) { fakes in
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
    ) async throws {
        group = try EventLoopGroup(loopCount: 1, name: "fakes")
        authorization = FakeAuthorizationServer(configuration: configuration, clock: clock)
        api = FakeResourceServer(authorization: authorization)
        authorizationServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: authorizationPort), group: group,
            responder: FakeAuthorizationServerResponder(server: authorization))
        apiServer = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: apiPort), group: group, responder: api)
        do {
            try await authorizationServer.listen()
            try await apiServer.listen()
        } catch {
            await authorizationServer.close(grace: .zero)
            await group.close()
            throw error
        }
    }

    /// Stops both servers and their loop; returns once the loop has stopped.
    public func close() async {
        await authorizationServer.close(grace: .zero)
        await apiServer.close(grace: .zero)
        await group.close()
    }

    /// Runs `body` with both servers up, and stops them when it returns or throws.
    public static func with<Result>(
        configuration: FakeAuthorizationServer.Configuration = .init(), clock: any AuthClock = SystemAuthClock(),
        authorizationPort: Int = 0, apiPort: Int = 0, _ body: (FakeServers) async throws -> Result
    ) async throws -> Result {
        let fakes = try await FakeServers(
            configuration: configuration, clock: clock, authorizationPort: authorizationPort, apiPort: apiPort)
        do {
            let result = try await body(fakes)
            await fakes.close()
            return result
        } catch {
            await fakes.close()
            throw error
        }
    }
}
