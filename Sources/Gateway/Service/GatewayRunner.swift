public import Logging
public import ServiceLifecycle

/// The gateway as a swift-service-lifecycle `Service`, for `authgate serve`.
///
/// `run()` restores the session and opens the listeners (``GatewayService/start``), then
/// waits. On graceful shutdown (SIGTERM or SIGINT, through the `ServiceGroup`) it stops
/// accepting, lets exchanges in flight finish for up to `grace`, and returns; the session's
/// files are already durable, since every change is written as it happens. When the task
/// is cancelled instead (a second signal), it stops at once.
///
/// ```swift
/// let runner = GatewayRunner(configuration: c, secrets: s, logger: logger)
/// let group = ServiceGroup(configuration: .init(
///     services: [.init(service: runner)], gracefulShutdownSignals: [.sigterm, .sigint],
///     cancellationSignals: [], logger: logger))
/// try await group.run()
/// ```
public struct GatewayRunner: Service {
    let configuration: GatewayConfiguration
    let secrets: GatewayService.Secrets
    let logger: Logger
    let grace: Duration
    let started: (@Sendable (GatewayService) -> Void)?
    let reloadSource: GatewayReloader.Source?

    /// Creates the service; `started` is called once the listeners are open. With
    /// `reloadSource`, the gateway can reload its configuration from it (``GatewayReloader``).
    public init(
        configuration: GatewayConfiguration, secrets: GatewayService.Secrets, logger: Logger,
        grace: Duration = .seconds(10), started: (@Sendable (GatewayService) -> Void)? = nil,
        reloadSource: GatewayReloader.Source? = nil
    ) {
        self.reloadSource = reloadSource
        self.configuration = configuration
        self.secrets = secrets
        self.logger = logger
        self.grace = grace
        self.started = started
    }

    /// Runs the gateway until a graceful shutdown (drained for up to `grace`) or
    /// cancellation (stopped at once).
    public func run() async throws {
        do {
            try await GatewayService.withGateway(
                configuration: configuration, secrets: secrets, logger: logger, grace: grace,
                reloadSource: reloadSource
            ) { gateway in
                started?(gateway)
                do {
                    try await gracefulShutdown()
                } catch {
                    logger.info("cancelled: stopping now")
                    throw error
                }
                logger.info("graceful shutdown: draining", metadata: ["shutdown.grace": "\(grace)"])
            }
        } catch is CancellationError {
            // Stopped at once; the service group asked for it.
        }
        logger.info("stopped")
    }

    /// Runs the gateway in a `ServiceGroup` of its own until SIGTERM or SIGINT starts a
    /// graceful shutdown: what `authgate serve` and `authgate dev` do. Block both signals in
    /// every thread first, so the group's signal source is the only one to see them.
    public func runUntilSignalled() async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: self)], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [],
                logger: logger))
        try await group.run()
    }
}
