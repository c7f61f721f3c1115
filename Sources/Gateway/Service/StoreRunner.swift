public import ServiceLifecycle

/// Runs the shared token store's connections (its `run()`) as a service of the gateway's
/// one `ServiceGroup`, the way hummingbird's `Application.run()` runs every service beside
/// its server.
///
/// The gateway opens its store while it starts, after the group has started; so the runner
/// is listed in the group before the gateway, and the gateway hands it the store as soon as
/// it is open. The group stops the gateway first (its sessions' last writes, then the
/// store's `close()`), then the runner. Without a runner (a gateway started outside a
/// group, as tests do) the store runs in a task of its own until it is closed.
///
/// ```swift
/// let stores = StoreRunner()
/// let gateway = GatewayRunner(configuration: c, secrets: s, logger: logger, storeRunner: stores)
/// let group = ServiceGroup(configuration: .init(
///     services: [.init(service: stores), .init(service: gateway)], logger: logger))
/// ```
public final class StoreRunner: Service, Sendable {
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
}
