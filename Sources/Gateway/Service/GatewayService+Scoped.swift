public import AuthCore
public import Logging

extension GatewayService {
    /// Runs a gateway for the duration of `body`: the one way `serve`, `dev` and the tests
    /// start one.
    ///
    /// The gateway is started as ``start(configuration:secrets:logger:clock:sessionConfiguration:)``
    /// does (sessions restored before a listener opens). When `body` returns, it is shut down
    /// with `grace` for the exchanges in flight; when `body` throws (or is cancelled), at
    /// once, and the error is rethrown. Either way every loop has stopped when this returns.
    ///
    /// ```swift
    /// try await GatewayService.withGateway(configuration: c, secrets: s, logger: logger) { gateway in
    ///     print("proxy on port \(gateway.proxyServer.port)")
    ///     try await gracefulShutdown()
    /// }
    /// ```
    public static func withGateway<Result: Sendable>(
        configuration: GatewayConfiguration, secrets: Secrets, logger: Logger, clock: any AuthClock = SystemAuthClock(),
        sessionConfiguration: AuthActor.Configuration? = nil, grace: Duration = .seconds(10),
        reloadSource: GatewayReloader.Source? = nil, accessLogger: Logger? = nil, background: BackgroundRunner? = nil,
        _ body: (GatewayService) async throws -> Result
    ) async throws -> Result {
        let gateway = try await start(
            configuration: configuration, secrets: secrets, logger: logger, clock: clock,
            sessionConfiguration: sessionConfiguration, reloadSource: reloadSource,
            accessLogger: accessLogger, background: background)
        let result: Result
        do {
            result = try await body(gateway)
        } catch {
            await gateway.shutdown(grace: .zero)
            throw error
        }
        await gateway.shutdown(grace: grace)
        return result
    }
}
