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
}
