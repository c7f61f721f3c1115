import Gateway
import Logging
import ServiceLifecycle
import Tracing

#if canImport(OTel)
    import OTel
#endif

/// Span export over OTLP/HTTP (swift-otel), off by default: bootstrapped only when the
/// environment asks (``TracingSwitch/exportRequested(environment:)``: `OTEL_TRACES_EXPORTER=otlp`),
/// configured by the standard `OTEL_*` variables, which swift-otel reads itself
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`,
/// `OTEL_TRACES_SAMPLER`, …). Only traces: logs and metrics keep AuthGate's own handlers.
/// Its exporter runs beside the gateway and is flushed by ``shutdown()`` when the gateway stops.
final class TraceExport: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(group: ServiceGroup) {
        self.group = group
        running = Task { try await group.run() }
    }

    /// Bootstraps the tracer and starts its exporter, or returns nil when export is not asked
    /// for. Throws when the `OTEL_*` variables name something this build cannot do.
    static func start(environment: [String: String], logger: Logger) throws -> TraceExport? {
        guard TracingSwitch.exportRequested(environment: environment) else { return nil }
        if let problem = TracingSwitch.unsupported(environment: environment) { throw problem }
        #if canImport(OTel)
            var configuration = OTel.Configuration.default
            configuration.serviceName = "authgate"  // OTEL_SERVICE_NAME overrides it
            configuration.diagnosticLogger = .custom(logger)
            configuration.diagnosticLogLevel = .warning  // OTEL_LOG_LEVEL overrides it
            configuration.logs.enabled = false
            configuration.metrics.enabled = false
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(backend.factory)
            return TraceExport(
                group: ServiceGroup(configuration: ServiceGroupConfiguration(services: [backend.service], logger: logger)))
        #else
            // A build without swift-otel (the TSan build): export cannot be honoured.
            throw ConfigurationError.at(
                "OTEL_TRACES_EXPORTER", .unsupported, "this build has no span exporter (built without swift-otel)")
        #endif
    }

    /// Sends the spans still queued, then stops the exporter.
    func shutdown() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
