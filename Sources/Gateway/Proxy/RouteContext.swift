import Runtime

/// What every step of the proxy (the caller check, the authenticated request's runner, the
/// exchange with the upstream) reads about one request besides the request itself, passed
/// as one value rather than as a list of positional parameters. The request stays apart: a
/// step borrows it, where a copy in here would retain each of its parts (the runner, which
/// lives as long as the request, keeps one copy of each).
struct RouteContext: Sendable {
    /// The route the request matched.
    let route: ProxyRoute
    /// Its target, checked.
    let target: RequestTarget
    /// Where its answer goes.
    let writer: ResponseWriter
    /// The settings it arrived under: a reload meanwhile does not change them for it.
    let settings: ProxySettings
    /// Its end's bookkeeping.
    var end: RequestEnd

    /// The access log's record, when the access log is on.
    var facts: AccessFacts? { end.facts }
    /// The request's trace, when it is traced.
    var trace: RequestTrace? { end.trace }
}

/// The end of a routed request, however it ended (answered, refused, failed, the client
/// gone): counted with its kind, status and duration, its access log line written, its
/// trace ended. Every routed request ends here, once. Apart from ``RouteContext`` and
/// small, so a callback that ends a request captures this and nothing more.
struct RequestEnd: Sendable {
    /// `public` or `authenticated`, the `kind` label of `authgate_requests_total`.
    let kind: String
    /// When the request was routed, as an offset from ``origin``: a `Duration`, whose layout
    /// is known where this is compiled. A `ContinuousClock.Instant`'s is not (the standard
    /// library may change it), so every copy of a value holding one would go through its
    /// type's metadata, on every request.
    private let started: Duration
    /// The access log's record, when the access log is on.
    let facts: AccessFacts?
    /// The request's trace, when it is traced (set once the caller is admitted).
    var trace: RequestTrace?

    /// The instant the offsets count from.
    private static let origin = ContinuousClock.now

    /// `instant` as an offset from the instant the offsets count from.
    static func offset(of instant: ContinuousClock.Instant) -> Duration { instant - origin }

    /// When the request was routed, as an offset (``offset(of:)``).
    var startOffset: Duration { started }

    /// The end of a request routed at `started`.
    init(kind: String, started: ContinuousClock.Instant, facts: AccessFacts?, trace: RequestTrace?) {
        self.kind = kind
        self.started = started - Self.origin
        self.facts = facts
        self.trace = trace
    }

    /// From when the request was routed to `instant`.
    func elapsed(until instant: ContinuousClock.Instant) -> Duration {
        (instant - Self.origin) - started
    }

    /// Counts the request, writes its access log line and ends its trace: it ended at
    /// `ended` with `status`.
    func finish(_ metrics: GatewayMetrics, status: Int, at ended: ContinuousClock.Instant = .now) {
        metrics.request(kind: kind, status: status, duration: elapsed(until: ended))
        facts?.end(status: status)
        trace?.end(status: status)
    }
}
