import Foundation

extension AdaptiveLimit {
    /// Slow start's unqueued samples taken together: their count, mean and sum of squared
    /// deviations (seconds), merged a window at a time (Chan et al.'s pairwise update). At
    /// one or two in flight a window holds four samples, too few for its mean alone to stand
    /// for the upstream's latency when answers vary tenfold.
    struct Pool: Sendable, Equatable {
        var count = 0.0
        var mean = 0.0
        var squares = 0.0

        /// Adds a window of `count` samples with `mean` and sum of squared deviations
        /// `squares`.
        mutating func merge(count n: Double, mean m: Double, squares s: Double) {
            guard n > 0 else { return }
            let total = count + n
            let delta = m - mean
            mean += delta * n / total
            squares += s + delta * delta * count * n / total
            count = total
        }

        /// The samples' variance (unbiased), seconds squared.
        var variance: Double { count > 1 ? squares / (count - 1) : 0 }
    }
}
