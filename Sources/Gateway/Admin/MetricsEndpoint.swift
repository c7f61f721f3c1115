import HTTPWire
import Runtime

/// `GET /metrics`: the Prometheus text exposition, with the sessions' and the process'
/// gauges read at the time of the scrape. Served by the admin API (with the admin token)
/// and, when `metrics` is configured, by the metrics listener (without one).
public struct MetricsEndpoint: Sendable {
    let sessions: [GatewaySession]
    let metrics: GatewayMetrics
    let processGauges: @Sendable () -> GatewayMetrics.ProcessGauges

    /// Creates the endpoint over the gateway's sessions and metrics.
    public init(
        sessions: [GatewaySession], metrics: GatewayMetrics,
        processGauges: @escaping @Sendable () -> GatewayMetrics.ProcessGauges = { .init() }
    ) {
        self.sessions = sessions.sorted { $0.name < $1.name }
        self.metrics = metrics
        self.processGauges = processGauges
    }

    /// The exposition, now.
    public func render() async -> String {
        var states: [GatewayMetrics.SessionGauges] = []
        for session in sessions {
            states.append(
                .init(
                    name: session.name, refreshing: await session.actor.isRefreshing,
                    loggedIn: await session.actor.status.isLoggedIn,
                    unsavedCredentials: session.actor.holdsUnsavedCredentials))
        }
        return metrics.render(sessions: states, process: processGauges())
    }

    /// Answers a scrape: 200 with the exposition, never cached.
    func respond(_ writer: ResponseWriter) async {
        let text = await render()
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        h.add(name: "Cache-Control", value: "no-store")
        writer.respond(status: 200, headers: h, body: Array(text.utf8))
    }
}
