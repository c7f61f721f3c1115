import HTTPWire
import Locking
import Tracing

/// Carried in the context of a traced refresh (``RequestTrace/refresh(_:after:)``): the
/// tracer, and whether the token-endpoint request ran under it. AuthCore starts the refresh
/// in a task that inherits the starting caller's task-locals, so only the request that
/// started a refresh finds its mark in the context of the token-endpoint call.
final class RefreshMark: Sendable {
    let tracer: any Tracer
    private let sent = Locked(false)

    init(tracer: any Tracer) {
        self.tracer = tracer
    }

    /// Whether a token-endpoint request was made for this refresh.
    var started: Bool { sent.withLock { $0 } }

    func markStarted() {
        sent.withLock { $0 = true }
    }
}

private enum RefreshMarkKey: ServiceContextKey {
    typealias Value = RefreshMark
}

extension ServiceContext {
    /// The traced refresh this context belongs to, if any.
    var refreshMark: RefreshMark? {
        get { self[RefreshMarkKey.self] }
        set { self[RefreshMarkKey.self] = newValue }
    }
}

/// The `token endpoint` span of a refresh's request, when the refresh is traced: a client
/// span, child of the refresh, whose context the request carries (`traceparent`). Its
/// attributes are the method, the endpoint's address and the status: never the form, the
/// grant, a token or the client's credentials.
struct TokenEndpointTrace {
    private let span: any Span

    /// Starts the span and puts its context into `headers`; nil outside a traced refresh.
    init?(method: String, url: String, headers: inout HTTPHeaders) {
        guard let mark = ServiceContext.current?.refreshMark else { return nil }
        mark.markStarted()
        span = mark.tracer.startSpan("token endpoint", context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["http.request.method"] = method
        span.attributes["server.address"] = Self.authority(url)
        var injected = HTTPHeaders()
        mark.tracer.inject(span.context, into: &injected, using: HTTPHeadersInjector())
        TracePropagation.apply(injected, to: &headers)
    }

    /// Ends the span with the endpoint's status, or with the failure's code.
    func end(status: Int?, error: String? = nil) {
        if let status { span.attributes["http.response.status_code"] = status }
        if let error {
            span.attributes["error.type"] = error
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    /// `host[:port]` of `url` (no user info, path or query).
    static func authority(_ url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<end]
        if let at = authority.lastIndex(of: "@") { return String(authority[authority.index(after: at)...]) }
        return String(authority)
    }
}
