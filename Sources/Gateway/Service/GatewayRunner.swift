public import Logging
public import Runtime
public import ServiceLifecycle
public import UnixSignals

/// The gateway as a swift-service-lifecycle `Service`, for `authgate serve`.
///
/// `run()` restores the session and opens the listeners (``GatewayService/start``), then
/// waits. On graceful shutdown (SIGTERM or SIGINT, through the `ServiceGroup`) it stops
/// accepting, lets exchanges in flight finish for up to `grace`, and returns; the session's
/// files are already durable, since every change is written as it happens. When the task
/// is cancelled instead (a second signal), it stops at once.
///
/// With `reloadSignals` (SIGHUP for `authgate serve`), each such signal reloads the
/// configuration while the gateway runs, as `POST /auth/reload` does.
///
/// ```swift
/// let runner = GatewayRunner(configuration: c, secrets: s, logger: logger, reloadSignals: [.sighup])
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
    let reloadSignals: [UnixSignal]
    /// Where the gateway's background work runs (a shared store's connections, the sessions'
    /// followers): a ``BackgroundRunner`` listed before this service in the same group, as
    /// ``runUntilSignalled(alongside:)`` lists one; when nil, tasks of the gateway's own.
    public var background: BackgroundRunner?

    /// Creates the service; `started` is called once the listeners are open. With
    /// `reloadSource`, the gateway can reload its configuration from it (``GatewayReloader``),
    /// and does on each of `reloadSignals` (block them in every thread first, as the group's
    /// shutdown signals).
    public init(
        configuration: GatewayConfiguration, secrets: GatewayService.Secrets, logger: Logger,
        grace: Duration = .seconds(10), started: (@Sendable (GatewayService) -> Void)? = nil,
        reloadSource: GatewayReloader.Source? = nil, reloadSignals: [UnixSignal] = []
    ) {
        self.reloadSource = reloadSource
        self.reloadSignals = reloadSignals
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
                reloadSource: reloadSource, background: background
            ) { gateway in
                started?(gateway)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if !reloadSignals.isEmpty {
                        let signals = await UnixSignalsSequence(trapping: reloadSignals)
                        group.addTask { await Self.reload(gateway, on: signals, logger: logger) }
                    }
                    defer { group.cancelAll() }
                    do {
                        try await gracefulShutdown()
                    } catch {
                        logger.info("cancelled: stopping now")
                        throw error
                    }
                    logger.info("graceful shutdown: draining", metadata: ["shutdown.grace": "\(grace)"])
                }
            }
        } catch is CancellationError {
            // Stopped at once; the service group asked for it.
        }
        logger.info("stopped")
    }

    /// Reloads `gateway`'s configuration on each of `signals` until cancelled (the reloader
    /// logs what it applied, or the field that made it refuse).
    private static func reload(_ gateway: GatewayService, on signals: UnixSignalsSequence, logger: Logger) async {
        for await signal in signals {
            logger.info("\(signal): reloading the configuration")
            _ = try? await gateway.reloader.reload()
        }
    }

    /// Runs the gateway until SIGTERM or SIGINT starts a graceful shutdown, in one
    /// `ServiceGroup` with `alongside` (a span exporter) and its background work (a shared
    /// store's connections, the sessions' followers: ``BackgroundRunner``), which stop after it
    /// in reverse order: what `authgate serve` and
    /// `authgate dev` do. Block the signals in every thread first, so the group's signal
    /// source is the only one to see them.
    public func runUntilSignalled(alongside: [any Service] = []) async throws {
        let background = BackgroundRunner()
        var gateway = self
        gateway.background = background
        let group = ServiceGroup(
            configuration: .init(
                services: alongside.map { .init(service: $0) } + [
                    // Stopped after the gateway: the sessions' last writes come first.
                    .init(service: background),
                    // Ended, or failed to start: the others still stop gracefully (spans flushed).
                    .init(
                        service: gateway, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger))
        try await group.run()
    }
}

/// Process-wide protections `authgate serve` applies before it reads any secret: no core
/// file, no same-user `ptrace` (``Runtime/ProcessHardening/disableDumping()``).
public typealias ProcessHardening = Runtime.ProcessHardening
