public import ServiceLifecycle

/// An ``HTTPServer`` as a swift-service-lifecycle `Service`: a `ServiceGroup` starts it,
/// stops it gracefully on its shutdown signals, and cancels it when another service fails.
///
/// ```swift
/// let group = try EventLoopGroup()
/// let server = HTTPServer(configuration: .init(port: 8080), group: group, responder: MyResponder())
/// let services = ServiceGroup(
///     configuration: .init(services: [server], gracefulShutdownSignals: [.sigterm], logger: logger))
/// try await services.run()
/// await group.close()
/// ```
extension HTTPServer: Service {
    /// Listens, serves until the group's graceful shutdown, then stops accepting and lets the
    /// responses in flight finish for up to ``HTTPServerConfiguration/shutdownGrace``. When
    /// cancelled, it closes every connection at once and throws `CancellationError`. Throws
    /// the listener's error when it cannot listen.
    public func run() async throws {
        try await run(onListening: { _ in })
    }

    /// ``run()``, calling `onListening` with the address (its port bound) once every loop
    /// listens.
    public func run(onListening: @Sendable (ListenAddress) async -> Void) async throws {
        try await listen()
        await onListening(address)
        do {
            try await gracefulShutdown()
        } catch {
            await close(grace: .zero)
            throw error
        }
        await close(grace: configuration.shutdownGrace)
    }
}
