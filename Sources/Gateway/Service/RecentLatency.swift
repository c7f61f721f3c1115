import Synchronization

/// A high percentile of the durations a ``LatencyHistogram`` counted since it was last read:
/// how long the upstream has been taking lately, for the refresh lead of short tokens
/// (``AuthCore/AuthActor/Configuration/upstreamLatency``).
///
/// It reads the histogram's counts, which the request path keeps anyway, so a request pays
/// nothing for it. A reading with fewer than ``minimumSamples`` new durations keeps the
/// previous estimate (and leaves them to be counted with the next), so a quiet minute
/// neither forgets what was measured nor judges from a handful.
final class RecentLatency: Sendable {
    /// The fewest new durations a new estimate is made from.
    static let minimumSamples = 20
    private let histogram: LatencyHistogram
    private let quantile: Double
    private let state = Mutex<(counts: [Int], estimate: Duration?)>(([], nil))

    /// Estimates the `quantile` (0.99: the p99) of what `histogram` counts.
    init(_ histogram: LatencyHistogram, quantile: Double = 0.99) {
        self.histogram = histogram
        self.quantile = quantile
    }

    /// The quantile of the durations counted since the last estimate; the last estimate when
    /// too few were; nil before any.
    func estimate() -> Duration? {
        let now = histogram.cumulativeCounts
        return state.withLock { state in
            let before = state.counts.isEmpty ? Array(repeating: 0, count: now.count) : state.counts
            let recent = zip(now, before).map { $0 - $1 }
            if (recent.last ?? 0) >= Self.minimumSamples {
                state.estimate = histogram.quantile(quantile, cumulative: recent)
                state.counts = now
            }
            return state.estimate
        }
    }
}
