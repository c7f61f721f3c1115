import CoreMetrics

extension GatewayMetrics {
    /// What `/metrics` reads of one in-flight limit (``InFlightLimiter``) when it renders.
    public struct UpstreamLimitReading: Sendable, Equatable {
        /// The upstream origin (the `origin` label).
        public var origin: String
        /// The route prefix of a fixed `maxInFlight`, or `*` for an origin's adaptive limit.
        public var route: String
        /// Exchanges allowed at the upstream at once now.
        public var limit: Int
        /// Exchanges at the upstream now.
        public var inFlight: Int
        /// Requests waiting for a slot.
        public var waiting: Int
        /// The upstream's latency with nothing queued there, as the controller sees it.
        public var baselineSeconds: Double?
        /// The upstream's recent latency.
        public var latencySeconds: Double?
        /// How many times an adaptive limit moved, by why; nil for a fixed one.
        public var changes: AdaptiveLimit.Changes?

        /// Creates a reading.
        public init(
            origin: String, route: String, limit: Int, inFlight: Int, waiting: Int, baselineSeconds: Double? = nil,
            latencySeconds: Double? = nil, changes: AdaptiveLimit.Changes? = nil
        ) {
            self.origin = origin
            self.route = route
            self.limit = limit
            self.inFlight = inFlight
            self.waiting = waiting
            self.baselineSeconds = baselineSeconds
            self.latencySeconds = latencySeconds
            self.changes = changes
        }
    }

    /// A request answered 503 `upstream-busy` by `limiter`: at once, its expected wait being
    /// over its queue timeout (`expected_wait`), or after waiting that long (`timeout`).
    public func upstreamShed(_ limiter: InFlightLimiter?, reason: String) {
        CoreMetrics.Counter(
            label: "authgate_upstream_shed_total",
            dimensions: [("origin", limiter?.origin ?? ""), ("route", limiter?.route ?? ""), ("reason", reason)],
            factory: factory
        ).increment()
    }

    /// Records the gauges of each in-flight limit.
    func record(_ limits: [UpstreamLimitReading]) {
        for r in limits {
            let labels = [("origin", r.origin), ("route", r.route)]
            // The shed counters exist, at 0, from the first scrape.
            for reason in ["expected_wait", "timeout"] {
                _ = CoreMetrics.Counter(
                    label: "authgate_upstream_shed_total", dimensions: labels + [("reason", reason)], factory: factory)
            }
            CoreMetrics.Gauge(label: "authgate_upstream_limit", dimensions: labels, factory: factory).record(r.limit)
            CoreMetrics.Gauge(label: "authgate_upstream_in_flight", dimensions: labels, factory: factory).record(r.inFlight)
            CoreMetrics.Gauge(label: "authgate_upstream_limit_waiting", dimensions: labels, factory: factory).record(r.waiting)
            // NaN until the first window of samples has closed.
            CoreMetrics.Gauge(label: "authgate_upstream_baseline_latency_seconds", dimensions: labels, factory: factory)
                .record(r.baselineSeconds ?? .nan)
            CoreMetrics.Gauge(label: "authgate_upstream_recent_latency_seconds", dimensions: labels, factory: factory)
                .record(r.latencySeconds ?? .nan)
            if let changes = r.changes { recordChanges(changes, labels: labels) }
        }
    }

    /// Brings `authgate_upstream_limit_changes_total` up to the controller's counts: by what
    /// they grew since the last scrape (all of them once a fresh limiter counts from 0).
    private func recordChanges(_ changes: AdaptiveLimit.Changes, labels: [(String, String)]) {
        for (reason, count) in zip(AdaptiveLimit.Changes.reasons, changes.counts) {
            let dimensions = labels + [("reason", reason)]
            let key = dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
            let step = limitChangesRecorded.withLock { recorded -> Int in
                let last = recorded[key] ?? 0
                recorded[key] = count
                return count >= last ? count - last : count
            }
            let counter = CoreMetrics.Counter(
                label: "authgate_upstream_limit_changes_total", dimensions: dimensions, factory: factory)
            if step > 0 { counter.increment(by: step) }
        }
    }
}
