import CoreMetrics
import Locking
public import Prometheus

/// The gateway's metrics: swift-metrics instruments on a Prometheus registry of its own,
/// rendered as Prometheus text by `GET /metrics`.
///
/// The registry is per gateway, not the process-wide `MetricsSystem`, so two gateways in
/// one process (as in the tests) never mix their counts. The session's own instruments
/// (refreshes, logouts, store failures) are made by the `AuthActor` with ``factory``.
///
/// Labels are fixed small sets (route kind, status class, outcome, reason), never a path, a
/// subject or a token.
public final class GatewayMetrics: Sendable {
    /// The registry `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry``; give it to the `AuthActor`.
    public let factory: PrometheusMetricsFactory

    /// Request latency buckets, 1 ms to 10 s.
    static let latencyBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    static let kinds = ["public", "authenticated"]
    static let classes = ["1xx", "2xx", "3xx", "4xx", "5xx", "client_gone"]

    private let requests: [[CoreMetrics.Counter]]  // [kind][class], indexed as `kinds` and `classes`
    private let latency: [CoreMetrics.Timer]  // [kind]
    private let openConnections: CoreMetrics.Gauge
    private let stateFreeBytes: CoreMetrics.Gauge
    private let bufferedBytes: CoreMetrics.Gauge
    private let queueWaiting: CoreMetrics.Gauge
    private let phases: [CoreMetrics.Timer]  // indexed as `AuthenticatedExchange.Phase.allCases`

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
        /// Creates the readings.
        public init(
            proxyConnections: Int = 0, stateDirectoryFreeBytes: Int? = nil, bufferedRequestBytes: Int = 0,
            upstreamQueueWaiting: Int = 0
        ) {
            self.upstreamQueueWaiting = upstreamQueueWaiting
            self.proxyConnections = proxyConnections
            self.stateDirectoryFreeBytes = stateDirectoryFreeBytes
            self.bufferedRequestBytes = bufferedRequestBytes
        }
    }

    /// Creates an empty registry with the gateway's instruments.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["authgate_request_duration_seconds"] = Self.latencyBuckets
        factory.durationHistogramBuckets["authgate_exchange_phase_seconds"] = Self.latencyBuckets
        self.factory = factory
        requests = Self.kinds.map { kind in
            Self.classes.map { cls in
                CoreMetrics.Counter(
                    label: "authgate_requests_total", dimensions: [("route", kind), ("status_class", cls)], factory: factory)
            }
        }
        latency = Self.kinds.map { kind in
            CoreMetrics.Timer(label: "authgate_request_duration_seconds", dimensions: [("route", kind)], factory: factory)
        }
        openConnections = CoreMetrics.Gauge(label: "authgate_open_connections", factory: factory)
        stateFreeBytes = CoreMetrics.Gauge(label: "authgate_state_directory_free_bytes", factory: factory)
        bufferedBytes = CoreMetrics.Gauge(label: "authgate_buffered_request_bytes", factory: factory)
        queueWaiting = CoreMetrics.Gauge(label: "authgate_upstream_queue_waiting", factory: factory)
        phases = AuthenticatedExchange.Phase.allCases.map {
            CoreMetrics.Timer(label: "authgate_exchange_phase_seconds", dimensions: [("phase", $0.rawValue)], factory: factory)
        }
    }

    /// Where an authenticated request spent its time: `authgate_exchange_phase_seconds{phase}`
    /// (``AuthenticatedExchange/Phase``), to find where requests wait.
    public func phase(_ phase: AuthenticatedExchange.Phase, _ duration: Duration) {
        phases[AuthenticatedExchange.Phase.allCases.firstIndex(of: phase)!].record(duration: duration)
    }

    /// One proxied request: its route kind (`public`/`authenticated`), final status and duration.
    public func request(kind: String, status: Int, duration: Duration) {
        guard let k = Self.kinds.firstIndex(of: kind) else { return }
        let cls = status == 499 ? Self.classes.count - 1 : max(1, min(5, status / 100)) - 1
        requests[k][cls].increment()
        latency[k].record(duration: duration)
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

    /// The Prometheus text exposition (version 0.0.4), with the gauges read now:
    /// `authgate_refreshes_in_flight{session}`, `authgate_session_logged_in{session}`,
    /// `authgate_unsaved_credentials{session}`, `authgate_open_connections`,
    /// `authgate_state_directory_free_bytes` (-1: unknown) and
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
        stateFreeBytes.record(process.stateDirectoryFreeBytes ?? -1)
        bufferedBytes.record(process.bufferedRequestBytes)
        queueWaiting.record(process.upstreamQueueWaiting)
        return registry.emitToString()
    }
}
