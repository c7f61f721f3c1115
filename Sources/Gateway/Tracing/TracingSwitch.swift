public import Tracing

/// Whether the proxy traces: decided once, when a proxy is made, so that with tracing off a
/// request pays one nil check and nothing else (no span, no task-local, no allocation).
public enum TracingSwitch {
    /// The tracer bootstrapped into `InstrumentationSystem`, or nil when there is none (the
    /// default no-op tracer): then nothing is traced.
    public static var installed: (any Tracer)? {
        let tracer = InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// Whether `environment` asks for trace export: `OTEL_TRACES_EXPORTER` set to an
    /// exporter (not `none`), and the SDK not disabled (`OTEL_SDK_DISABLED=true`). Off by
    /// default: with neither variable set nothing is bootstrapped.
    public static func exportRequested(environment: [String: String]) -> Bool {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        guard let exporters = environment["OTEL_TRACES_EXPORTER"] else { return false }
        let names = exporters.split(separator: ",").map { String($0.filter { !$0.isWhitespace }).lowercased() }
        return names.contains { !$0.isEmpty && $0 != "none" }
    }

    /// Why `environment` asks for something this build cannot export: a
    /// ``GatewayError`` with code ``GatewayError/Code/unsupported`` whose
    /// ``GatewayError/field`` is the variable at fault (`OTEL_EXPORTER_OTLP_PROTOCOL`,
    /// `OTEL_TRACES_SAMPLER`, …) and whose message starts with it; nil when it can, or when
    /// export is not asked for. swift-otel stops the process (a fatal error, not a thrown
    /// one) for an OTLP/gRPC exporter without its `OTLPGRPC` trait, which this build leaves
    /// out, and for the Jaeger remote sampler: refused here first, as a configuration error.
    public static func unsupported(environment: [String: String]) -> GatewayError? {
        guard exportRequested(environment: environment) else { return nil }
        // The traces-specific variable wins over the shared one.
        for key in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            guard let value = environment[key] else { continue }
            if value.lowercased() == "grpc" {
                return GatewayError(
                    .unsupported, field: key,
                    "\(key)=grpc: this build exports over OTLP/HTTP only (http/protobuf or http/json)")
            }
            break
        }
        if let sampler = environment["OTEL_TRACES_SAMPLER"]?.lowercased(), sampler.hasSuffix("jaeger_remote") {
            return GatewayError(
                .unsupported, field: "OTEL_TRACES_SAMPLER",
                "OTEL_TRACES_SAMPLER=\(sampler): not supported "
                    + "(always_on, always_off, traceidratio and their parentbased_ forms are)")
        }
        return nil
    }
}
