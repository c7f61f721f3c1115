import AuthCore
import HTTPWire
import Locking
import Runtime
import Tracing

/// The spans of one proxied request, made only when tracing is on (``TracingSwitch``):
///
/// ```
/// GET /api/                  server   http.route, http.request.method, http.response.status_code, authgate.replayed
/// ├─ upstream                client   one per try: authgate.attempt 0, its status
/// └─ replay                  internal authgate.replay 1
///    ├─ refresh              internal authgate.refresh.role: started | joined
///    │  └─ token endpoint    client   (when this request's refresh called it)
///    └─ upstream             client   authgate.attempt 1
/// ```
///
/// The server span's parent is the client's `traceparent`, when it sent one; each upstream
/// try carries its own span's context, and so does the token-endpoint request. No attribute
/// holds a header value, a query or a token. Used from the request's loop and the task
/// serving it, under a lock.
final class RequestTrace: Sendable {
    let tracer: any Tracer
    private let server: any Span
    private struct State {
        var replay: (any Span)?
        var replays = 0
    }
    private let state = Locked(State())

    /// Starts the server span of `request` on `route`.
    init(tracer: any Tracer, request: HTTPRequest, route: ProxyRoute, path: String) {
        self.tracer = tracer
        var parent = ServiceContext.topLevel
        tracer.extract(request.head.headers, into: &parent, using: HTTPHeadersExtractor())
        let method = request.head.method
        server = tracer.startSpan("\(method) \(route.prefix)", context: parent, ofKind: .server)
        server.attributes["http.request.method"] = method
        server.attributes["http.route"] = route.prefix
        server.attributes["url.path"] = path
        server.attributes["authgate.authenticated"] = route.requiresAuthentication
    }

    /// Starts the span of one try at the upstream (a child of the replay in progress, or of
    /// the request) and puts its context into `headers`.
    func upstream(_ headers: inout HTTPHeaders, route: ProxyRoute) -> UpstreamTry {
        let (parent, attempt) = state.withLock { ($0.replay?.context, $0.replays) }
        let span = tracer.startSpan("upstream", context: parent ?? server.context, ofKind: .client)
        span.attributes["authgate.attempt"] = attempt
        span.attributes["server.address"] = route.upstream.authority
        var injected = HTTPHeaders()
        tracer.inject(span.context, into: &injected, using: HTTPHeadersInjector())
        TracePropagation.apply(injected, to: &headers)
        return UpstreamTry(trace: self, span: span)
    }

    /// One try's span, held by reference: the closure that ends it carries one pointer
    /// (none when tracing is off) rather than a copy of the span's existential.
    final class UpstreamTry: Sendable {
        let trace: RequestTrace
        let span: any Span

        init(trace: RequestTrace, span: any Span) {
            self.trace = trace
            self.span = span
        }

        /// Ends the try's span with what it came to.
        func ended(_ outcome: ExchangeOutcome) { trace.upstreamEnded(span, outcome) }
    }

    /// Ends a try's span with what it came to; a replay ends with its try.
    func upstreamEnded(_ span: any Span, _ outcome: ExchangeOutcome) {
        switch outcome {
        case .forwarded(let status, _):
            span.attributes["http.response.status_code"] = status
        case .held(let why, let status):
            span.attributes["http.response.status_code"] = status
            switch why {
            case .forRefresh: span.attributes["authgate.token_rejected"] = true
            case .forNonce: span.attributes["authgate.dpop_nonce_requested"] = true
            case .proofRefused: span.attributes["authgate.dpop_proof_refused"] = true
            }
        case .failed(let error):
            span.attributes["error.type"] = error.code.description
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
        state.withLock { s -> (any Span)? in
            defer { s.replay = nil }
            return s.replay
        }?.end()
    }

    /// The refresh a replay waits for, in a `replay` span and a `refresh` span under it. A
    /// token-endpoint request made for it (``TokenEndpointTrace``) is a child of the refresh
    /// span, and marks it `started`; otherwise this request `joined` one in flight (or took
    /// the newer token a refresh already committed).
    func refresh(_ session: AuthActor, after generation: TokenGeneration) async throws -> AccessToken {
        let replay = state.withLock { s -> any Span in
            s.replays += 1
            let span = tracer.startSpan("replay", context: server.context, ofKind: .internal)
            span.attributes["authgate.replay"] = s.replays
            s.replay = span
            return span
        }
        let span = tracer.startSpan("refresh", context: replay.context, ofKind: .internal)
        let mark = RefreshMark(tracer: tracer)
        var context = span.context
        context.refreshMark = mark
        defer {
            span.attributes["authgate.refresh.role"] = mark.started ? "started" : "joined"
            span.end()
        }
        do {
            return try await ServiceContext.withValue(context) { try await session.refresh(after: generation) }
        } catch {
            span.attributes["error.type"] = (error as? AuthError)?.code.name ?? "cancelled"
            span.setStatus(SpanStatus(code: .error))
            // No try follows: the replay ends here.
            state.withLock { s -> (any Span)? in
                defer { s.replay = nil }
                return s.replay
            }?.end()
            throw error
        }
    }

    /// Ends the request's span with the status the client got.
    func end(status: Int) {
        let replays = state.withLock { $0.replays }
        server.attributes["http.response.status_code"] = status
        server.attributes["authgate.replayed"] = replays > 0
        if status >= 500 { server.setStatus(SpanStatus(code: .error)) }
        server.end()
    }
}

extension Optional where Wrapped == RequestTrace {
    /// `session`'s token newer than `generation` for a replay: traced when the request is
    /// (``RequestTrace/refresh(_:after:)``), else asked of the session directly.
    func refresh(_ session: AuthActor, after generation: TokenGeneration) async throws -> AccessToken {
        if let trace = self { return try await trace.refresh(session, after: generation) }
        return try await session.refresh(after: generation)
    }
}
