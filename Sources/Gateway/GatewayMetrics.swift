import Locking

/// Counters and latency histograms of the gateway, rendered as Prometheus text.
///
/// Labels are fixed small sets (route kind, status class, outcome), never a path, a
/// subject or a token.
public final class GatewayMetrics: Sendable {
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Histogram {
        var counts = [Int](repeating: 0, count: GatewayMetrics.buckets.count)
        var sum = 0.0
        var total = 0

        mutating func observe(_ seconds: Double) {
            for (i, b) in GatewayMetrics.buckets.enumerated() where seconds <= b { counts[i] += 1 }
            sum += seconds
            total += 1
        }
    }

    struct State {
        var requests: [String: Int] = [:]  // "kind,class"
        var latency: [String: Histogram] = [:]  // kind
        var replays: [String: Int] = [:]  // outcome
        var refreshes: [String: Int] = [:]  // outcome
        var logouts: [String: Int] = [:]  // reason
        var refreshLatency = Histogram()
        var upstreamFailures: [String: Int] = [:]  // kind
    }

    private let state = Locked(State())

    /// Creates an empty registry.
    public init() {}

    /// One proxied request: its route kind (`public`/`authenticated`), final status and duration.
    public func request(kind: String, status: Int, seconds: Double) {
        let cls = status == 499 ? "client_gone" : "\(max(1, min(5, status / 100)))xx"
        state.withLock { s in
            s.requests["\(kind),\(cls)", default: 0] += 1
            s.latency[kind, default: Histogram()].observe(seconds)
        }
    }

    /// A refresh-and-replay: `replayed`, `refresh_failed`, or `skipped_body_streamed`.
    public func replay(_ outcome: String) {
        state.withLock { $0.replays[outcome, default: 0] += 1 }
    }

    /// A refresh outcome seen on the event stream (`success`, `transient`, …).
    public func refresh(_ outcome: String) {
        state.withLock { $0.refreshes[outcome, default: 0] += 1 }
    }

    /// A logout, by reason code.
    public func logout(_ reason: String) {
        state.withLock { $0.logouts[reason, default: 0] += 1 }
    }

    /// An upstream failure, by kind.
    public func upstreamFailure(_ kind: String) {
        state.withLock { $0.upstreamFailures[kind, default: 0] += 1 }
    }

    /// The Prometheus text exposition (version 0.0.4).
    public func render(refreshesInFlight: Int, loggedIn: Bool, activeConnections: Int) -> String {
        let s = state.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("authgate_requests_total", "counter", "Proxied requests by route kind and status class.")
        for (key, v) in s.requests.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: ",")
            out += "authgate_requests_total{route=\"\(parts[0])\",status_class=\"\(parts[1])\"} \(v)\n"
        }
        family("authgate_request_duration_seconds", "histogram", "Time from request head to the end of the exchange.")
        for (kind, h) in s.latency.sorted(by: { $0.key < $1.key }) {
            for (i, b) in GatewayMetrics.buckets.enumerated() {
                out += "authgate_request_duration_seconds_bucket{route=\"\(kind)\",le=\"\(b)\"} \(h.counts[i])\n"
            }
            out += "authgate_request_duration_seconds_bucket{route=\"\(kind)\",le=\"+Inf\"} \(h.total)\n"
            out += "authgate_request_duration_seconds_sum{route=\"\(kind)\"} \(h.sum)\n"
            out += "authgate_request_duration_seconds_count{route=\"\(kind)\"} \(h.total)\n"
        }
        family("authgate_replays_total", "counter", "Requests answered 401 for their token, by what followed.")
        for (k, v) in s.replays.sorted(by: { $0.key < $1.key }) { out += "authgate_replays_total{outcome=\"\(k)\"} \(v)\n" }
        family("authgate_refreshes_total", "counter", "Token refreshes by outcome.")
        for (k, v) in s.refreshes.sorted(by: { $0.key < $1.key }) { out += "authgate_refreshes_total{outcome=\"\(k)\"} \(v)\n" }
        family("authgate_logouts_total", "counter", "Session logouts by reason.")
        for (k, v) in s.logouts.sorted(by: { $0.key < $1.key }) { out += "authgate_logouts_total{reason=\"\(k)\"} \(v)\n" }
        family("authgate_upstream_failures_total", "counter", "Upstream exchanges that failed before a response, by kind.")
        for (k, v) in s.upstreamFailures.sorted(by: { $0.key < $1.key }) {
            out += "authgate_upstream_failures_total{kind=\"\(k)\"} \(v)\n"
        }
        family("authgate_refreshes_in_flight", "gauge", "Refreshes running now (0 or 1 per session).")
        out += "authgate_refreshes_in_flight \(refreshesInFlight)\n"
        family("authgate_session_logged_in", "gauge", "1 when the session holds tokens.")
        out += "authgate_session_logged_in \(loggedIn ? 1 : 0)\n"
        family("authgate_open_connections", "gauge", "Client connections open on the proxy listener.")
        out += "authgate_open_connections \(activeConnections)\n"
        return out
    }
}
