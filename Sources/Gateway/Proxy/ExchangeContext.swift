import HTTPWire
import Runtime

/// One proxied request as each step of its exchange sees it: what arrived, the route and
/// target it goes to, the writer that answers it, the settings it arrived under, and its
/// ``Record``. Made once when ``ReverseProxy`` sends a request to a route and handed whole to
/// every step, first try to replay.
struct ExchangeContext: Sendable {
    /// The request as it arrived.
    let request: HTTPRequest
    /// The route that serves it.
    let route: ProxyRoute
    /// Its target, parsed.
    let target: RequestTarget
    /// Where the answer goes.
    let writer: ResponseWriter
    /// The settings the request arrived under (a reload meanwhile does not change them).
    let settings: ProxySettings
    /// What records the request, and ends it.
    var record: Record

    /// What records one routed request: its access log record, its spans, when it began and
    /// its kind. Small on purpose: a callback that only ends the request captures this, not
    /// the whole context.
    struct Record: Sendable {
        /// The access log's record of the request; nil when it is not sampled.
        let facts: AccessFacts?
        /// The request's spans; nil when it is not traced.
        var trace: RequestTrace?
        /// When the proxy began to serve it.
        let started: ContinuousClock.Instant
        /// Whether the route sends the session's token.
        let authenticated: Bool

        /// The end of the request, however it ended (answered, refused, failed, the client
        /// gone): counted with its status and duration, its access log line written, its
        /// trace ended. Every path of a routed request ends here, once.
        func end(status: Int, _ metrics: GatewayMetrics) {
            metrics.request(
                kind: authenticated ? "authenticated" : "public", status: status, duration: ContinuousClock.now - started)
            facts?.end(status: status)
            trace?.end(status: status)
        }
    }

    /// The access log's record of the request; nil when it is not sampled.
    var facts: AccessFacts? { record.facts }
    /// The request's spans; nil when it is not traced.
    var trace: RequestTrace? { record.trace }
}
