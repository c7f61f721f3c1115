public import ServiceLifecycle

/// Runs the gateway's background work as one service of the gateway's one `ServiceGroup`, the
/// way hummingbird's `Application.run()` runs every service beside its server: the shared
/// token store's connections (its `run()`) and the sessions' followers (the user-info call
/// and `autoLogin`, each on its session's events).
///
/// The gateway opens its store and starts its sessions while it starts, after the group has
/// started; so the runner is listed in the group before the gateway, and the gateway hands it
/// each piece of work as it starts it. The group stops the gateway first (it ends the
/// sessions' events, so the followers return; then its sessions' last writes and the store's
/// `close()`), then the runner, which waits for what it runs to return. Without a runner (a
/// gateway started outside a group, as tests do) each piece runs in a task of its own.
///
/// ```swift
/// let background = BackgroundRunner()
/// var gateway = GatewayRunner(configuration: c, secrets: s, logger: logger)
/// gateway.background = background
/// let group = ServiceGroup(configuration: .init(
///     services: [.init(service: background), .init(service: gateway)], logger: logger))
/// ```
public final class BackgroundRunner: Service, Sendable {
    private let services: AsyncStream<any Service>
    private let handOver: AsyncStream<any Service>.Continuation

    /// Creates a runner with nothing to run yet.
    public init() {
        (services, handOver) = AsyncStream.makeStream(of: (any Service).self)
    }

    /// Runs `service` from now until the group's graceful shutdown (or until it returns by
    /// itself, as a store does once closed).
    func run(_ service: any Service) {
        handOver.yield(service)
    }

    /// Runs `work` from now until it returns. It does not see the group's graceful shutdown;
    /// it is cancelled only when the group is.
    func run(_ work: @escaping @Sendable () async -> Void) {
        handOver.yield(Work(body: work))
    }

    /// Runs every service handed over until a graceful shutdown or cancellation, then
    /// waits for them to end (they see the same graceful shutdown).
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await service in services.cancelOnGracefulShutdown() {
                group.addTask { try? await service.run() }
            }
            // One handed over as the shutdown began still runs, and stops at once.
            handOver.finish()
            for await service in services {
                group.addTask { try? await service.run() }
            }
        }
    }

    /// A piece of work as a service.
    private struct Work: Service {
        let body: @Sendable () async -> Void
        func run() async { await body() }
    }
}
