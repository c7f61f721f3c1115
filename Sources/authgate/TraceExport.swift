import Gateway
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// Span export over OTLP/HTTP (swift-otel), off by default: bootstrapped only when the
/// environment asks (``TracingSwitch/exportRequested(environment:)``: `OTEL_TRACES_EXPORTER=otlp`),
/// configured by the standard `OTEL_*` variables, which swift-otel reads itself
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`,
/// `OTEL_TRACES_SAMPLER`, …). Only traces: logs and metrics keep AuthGate's own handlers.
/// Its exporter is a service of the gateway's own `ServiceGroup`, which stops it after the
/// gateway, sending the spans still queued.
enum TraceExport {
    /// Bootstraps the tracer and answers its exporter's service, or nil when export is not
    /// asked for. Throws when the `OTEL_*` variables name something this build cannot do.
    static func start(environment: [String: String], logger: Logger) throws -> (any Service)? {
        guard TracingSwitch.exportRequested(environment: environment) else { return nil }
        if let problem = TracingSwitch.unsupported(environment: environment) { throw problem }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "authgate"  // OTEL_SERVICE_NAME overrides it
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning  // OTEL_LOG_LEVEL overrides it
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
    }
}
