import AuthCore
import CoreMetrics
import Locking
public import Prometheus
public import Runtime

/// The gateway's metrics: swift-metrics instruments on a Prometheus registry of its own,
/// rendered as Prometheus text by `GET /metrics`.
///
/// The registry is per gateway, not the process-wide `MetricsSystem`, so two gateways in
/// one process (as in the tests) never mix their counts. The session's own instruments
/// (refreshes, logouts, store failures) are made by the `AuthActor` with ``factory``.
///
/// Labels are fixed small sets (route kind, status class, outcome, reason, session name),
/// never a path, a subject or a token. Every counter whose label values are known in
/// advance exists from the start at 0, so `rate()` and `increase()` see its first event;
/// every family has `# HELP` text (``helpTexts``).
public final class GatewayMetrics: Sendable {
    /// The registry `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry``; give it to the `AuthActor`.
    public let factory: PrometheusMetricsFactory

    /// Request latency buckets, 1 ms to 120 s: past the default upstream timeout (60 s) and
    /// queue timeout (30 s), so a slow request lands in a bucket of its own, not in `+Inf`.
    static let latencyBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(120),
    ]
    /// The values of the `route_kind` label.
    static let kinds = ["public", "authenticated"]
    /// The values of the `status_class` label.
    static let classes = ["1xx", "2xx", "3xx", "4xx", "5xx"]
    /// The status the proxy reports for a request whose client went away before the answer
    /// (nginx's 499): counted in `authgate_requests_abandoned_total`, not as a status class.
    public static let clientGoneStatus = 499
    /// The values of `authgate_replays_total`'s `outcome` label.
    public static let replayOutcomes =
        ["replayed", "refresh_failed"] + ReplayRule.PassReason.allCases.map(\.rawValue) + DPoPNonceRule.outcomes
    /// The values of `authgate_logouts_total`'s `reason` label (``AuthCore/LogoutReason/code``).
    public static let logoutReasons: [String] = [
        LogoutReason.userInitiated, .refreshRejected(code: ""), .expiredWithoutRefreshToken, .replacedByLogin,
        .tokensMissing, .userInfoRejected(status: 0), .endedElsewhere,
    ].map(\.code)
    /// The values of `authgate_upstream_failures_total`'s `kind` label.
    public static let upstreamFailureKinds = RuntimeError.Code.all.filter(\.isUpstream).map(\.description)

    private let requests: [[CoreMetrics.Counter]]  // [kind][class], indexed as `kinds` and `classes`
    private let abandoned: [CoreMetrics.Counter]  // [kind]
    private let latency: [LatencyHistogram]  // [kind]
    private let openConnections: CoreMetrics.Gauge
    /// Registered only while the free space is known (a -1 would read as a full disk).
    private let stateFreeBytes = Locked<Prometheus.Gauge?>(nil)
    private let bufferedBytes: CoreMetrics.Gauge
    private let queueWaiting: CoreMetrics.Gauge
    /// The counts of each adaptive limit's moves as last published, by labels: the counter
    /// grows by the difference at each scrape.
    let limitChangesRecorded = Locked<[String: Int]>([:])
    /// The proxy's HTTP/1.1 connections per upstream origin, busy and idle, summed over the
    /// loops (``UpstreamClientConfiguration/connectionGauges``); rendered as
    /// `authgate_upstream_connections{origin, state}`.
    public let upstreamConnections = UpstreamConnectionGauges()
    private let phases: [LatencyHistogram]  // indexed as `ExchangePhase.allCases`

    /// What `/metrics` reads of one session when it renders.
    public struct SessionGauges: Sendable {
        /// The session's name (the `session` label).
        public var name: String
        /// A refresh is in flight.
        public var refreshing: Bool
        /// The session holds tokens.
        public var loggedIn: Bool
        /// A rotated pair is held only in memory (its save failed).
        public var unsavedCredentials: Bool
        /// Creates the readings.
        public init(name: String, refreshing: Bool, loggedIn: Bool, unsavedCredentials: Bool = false) {
            self.name = name
            self.refreshing = refreshing
            self.loggedIn = loggedIn
            self.unsavedCredentials = unsavedCredentials
        }
    }

    /// What `/metrics` reads of the process when it renders.
    public struct ProcessGauges: Sendable {
        /// Connections open on the proxy listener.
        public var proxyConnections: Int
        /// Room left on the state directory's file system; nil when unknown.
        public var stateDirectoryFreeBytes: Int?
        /// Request bodies held in memory, across both listeners.
        public var bufferedRequestBytes: Int
        /// Authenticated requests waiting for a slot at their route's upstream.
        public var upstreamQueueWaiting: Int
        /// Each in-flight limit's readings.
        public var upstreamLimits: [UpstreamLimitReading] = []
        /// Creates the readings.
        public init(
            proxyConnections: Int = 0, stateDirectoryFreeBytes: Int? = nil, bufferedRequestBytes: Int = 0,
            upstreamQueueWaiting: Int = 0, upstreamLimits: [UpstreamLimitReading] = []
        ) {
            self.upstreamQueueWaiting = upstreamQueueWaiting
            self.upstreamLimits = upstreamLimits
            self.proxyConnections = proxyConnections
            self.stateDirectoryFreeBytes = stateDirectoryFreeBytes
            self.bufferedRequestBytes = bufferedRequestBytes
        }
    }

    /// Creates a registry with the gateway's instruments, the counters of `sessions` among
    /// them, each at 0.
    public init(sessions: [String] = ["default"]) {
        registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        self.factory = factory
        requests = Self.kinds.map { kind in
            Self.classes.map { cls in
                CoreMetrics.Counter(
                    label: "authgate_requests_total", dimensions: [("route_kind", kind), ("status_class", cls)],
                    factory: factory)
            }
        }
        abandoned = Self.kinds.map { kind in
            CoreMetrics.Counter(label: "authgate_requests_abandoned_total", dimensions: [("route_kind", kind)], factory: factory)
        }
        // The durations are recorded on the request path, so they are kept by lock-free
        // histograms of the gateway's own, rendered beside the registry's families.
        latency = Self.kinds.map { kind in
            LatencyHistogram(
                name: "authgate_request_duration_seconds", labelName: "route_kind", labelValue: kind,
                bounds: Self.latencyBuckets)
        }
        openConnections = CoreMetrics.Gauge(label: "authgate_open_connections", factory: factory)
        bufferedBytes = CoreMetrics.Gauge(label: "authgate_buffered_request_bytes", factory: factory)
        queueWaiting = CoreMetrics.Gauge(label: "authgate_upstream_queue_waiting", factory: factory)
        phases = ExchangePhase.allCases.map {
            LatencyHistogram(
                name: "authgate_exchange_phase_seconds", labelName: "phase", labelValue: $0.rawValue,
                bounds: Self.latencyBuckets)
        }
        // The counters the sessions and the upstreams will count, at 0 until they do. The
        // `AuthActor` makes its refresh and store-failure counters itself, at 0 too.
        for kind in Self.upstreamFailureKinds {
            _ = CoreMetrics.Counter(label: "authgate_upstream_failures_total", dimensions: [("kind", kind)], factory: factory)
        }
        for session in sessions {
            for outcome in Self.replayOutcomes {
                _ = CoreMetrics.Counter(
                    label: "authgate_replays_total", dimensions: [("session", session), ("outcome", outcome)], factory: factory)
            }
            for reason in Self.logoutReasons {
                _ = CoreMetrics.Counter(
                    label: "authgate_logouts_total", dimensions: [("session", session), ("reason", reason)], factory: factory)
            }
        }
    }

    /// The p99 of the upstream phase of authenticated requests since it was last read
    /// (``RecentLatency``): what the refresh lead of short tokens follows by default.
    func recentUpstreamLatency() -> RecentLatency {
        RecentLatency(phases[ExchangePhase.upstream.index])
    }

    /// Where an authenticated request spent its time: `authgate_exchange_phase_seconds{phase}`
    /// (``ExchangePhase``), to find where requests wait.
    public func phase(_ phase: ExchangePhase, _ duration: Duration) {
        phases[phase.index].record(duration)
    }

    /// One proxied request: its route kind (`public`/`authenticated`), final status and
    /// duration. A request whose client went away (``clientGoneStatus``) counts as abandoned,
    /// with no status class and no duration.
    public func request(kind: String, status: Int, duration: Duration) {
        guard let k = Self.kinds.firstIndex(of: kind) else { return }
        if status == Self.clientGoneStatus {
            abandoned[k].increment()
            return
        }
        requests[k][Self.statusClassIndex(status)].increment()
        latency[k].record(duration)
    }

    /// The index in ``classes`` of `status`'s class; a status outside 100–599 (none is
    /// sent) counts with the nearest class.
    static func statusClassIndex(_ status: Int) -> Int {
        max(1, min(5, status / 100)) - 1
    }

    /// A refresh-and-replay of a request on `session`'s route: `replayed`, `refresh_failed`,
    /// or a ``AuthCore/ReplayRule/PassReason`` (`skipped_body_streamed`, `replay_limit`,
    /// `current_token_rejected`, `no_session`).
    public func replay(_ outcome: String, session: String = "default") {
        CoreMetrics.Counter(
            label: "authgate_replays_total", dimensions: [("session", session), ("outcome", outcome)], factory: factory
        ).increment()
    }

    /// An upstream failure, by kind.
    public func upstreamFailure(_ kind: String) {
        CoreMetrics.Counter(label: "authgate_upstream_failures_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    /// The Prometheus text exposition (version 0.0.4), with `# HELP` lines and the gauges
    /// read now: `authgate_refreshes_in_flight{session}`, `authgate_session_logged_in{session}`,
    /// `authgate_unsaved_credentials{session}`, `authgate_open_connections`,
    /// `authgate_state_directory_free_bytes` (absent while unknown) and
    /// `authgate_buffered_request_bytes` (request bodies held in memory, all listeners) and
    /// `authgate_upstream_queue_waiting` (requests waiting for a route's `maxInFlight` slot).
    public func render(sessions: [SessionGauges], process: ProcessGauges) -> String {
        for s in sessions {
            CoreMetrics.Gauge(label: "authgate_refreshes_in_flight", dimensions: [("session", s.name)], factory: factory)
                .record(s.refreshing ? 1 : 0)
            CoreMetrics.Gauge(label: "authgate_session_logged_in", dimensions: [("session", s.name)], factory: factory)
                .record(s.loggedIn ? 1 : 0)
            CoreMetrics.Gauge(label: "authgate_unsaved_credentials", dimensions: [("session", s.name)], factory: factory)
                .record(s.unsavedCredentials ? 1 : 0)
        }
        openConnections.record(process.proxyConnections)
        stateFreeBytes.withLock { gauge in
            if let free = process.stateDirectoryFreeBytes {
                let g =
                    gauge
                    ?? registry.makeGauge(
                        descriptor: MetricNameDescriptor(
                            namespace: "authgate", subsystem: "state_directory", metricName: "free", unitName: "bytes",
                            helpText: ""))
                g.set(Double(free))
                gauge = g
            } else if let g = gauge {
                registry.unregisterGauge(g)
                gauge = nil
            }
        }
        bufferedBytes.record(process.bufferedRequestBytes)
        queueWaiting.record(process.upstreamQueueWaiting)
        record(process.upstreamLimits)
        for (origin, busy, idle) in upstreamConnections.snapshot() {
            for (state, value) in [("busy", busy), ("idle", idle)] {
                CoreMetrics.Gauge(
                    label: "authgate_upstream_connections", dimensions: [("origin", origin), ("state", state)], factory: factory
                ).record(value)
            }
        }
        var exposition = registry.emitToString()
        // Each family's `# TYPE` line comes before its first label set only.
        for family in [latency, phases] {
            for (i, histogram) in family.enumerated() { histogram.render(into: &exposition, withType: i == 0) }
        }
        return Self.withHelp(exposition)
    }
}

extension ExchangePhase {
    /// The phase's place in `allCases`, without making that array.
    fileprivate var index: Int {
        switch self {
        case .queue: 0
        case .token: 1
        case .refresh: 2
        case .upstream: 3
        }
    }
}
