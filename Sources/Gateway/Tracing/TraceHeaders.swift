public import HTTPWire
public import Tracing

/// Reads trace context (W3C `traceparent`/`tracestate`, or whatever the bootstrapped
/// tracer propagates) from a request's header fields; names match case-insensitively.
public struct HTTPHeadersExtractor: Extractor {
    /// Creates the extractor.
    public init() {}

    /// The first value of `key`, if any.
    public func extract(key: String, from carrier: HTTPHeaders) -> String? {
        carrier[first: key]
    }
}

/// Writes trace context into header fields, replacing any field of the same name.
public struct HTTPHeadersInjector: Injector {
    /// Creates the injector.
    public init() {}

    /// Sets `key` to `value`.
    public func inject(_ value: String, forKey key: String, into carrier: inout HTTPHeaders) {
        carrier.replaceOrAdd(name: key, value: value)
    }
}

/// Which trace header fields an outgoing request carries: a pure decision, tested without
/// sockets.
///
/// When a span of ours is the parent, the fields the tracer injected for it replace the
/// client's `traceparent` and `tracestate` (a stale `tracestate` must not travel with a new
/// parent id). When the tracer injected nothing (a tracer that does not propagate W3C
/// context), the client's fields pass through untouched, as they do with tracing off.
public enum TracePropagation {
    /// The W3C Trace Context header fields.
    public static let fieldNames = ["traceparent", "tracestate"]

    /// Applies `injected` (what the tracer wrote for the outgoing span) to `headers`.
    public static func apply(_ injected: HTTPHeaders, to headers: inout HTTPHeaders) {
        guard injected.count > 0 else { return }
        if injected.contains("traceparent") {
            for name in fieldNames { headers.remove(name: name) }
        }
        for (name, value) in injected.fields { headers.replaceOrAdd(name: name, value: value) }
    }
}
