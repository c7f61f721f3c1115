import Foundation

extension AdaptiveLimit {
    /// The probe cycle after slow start, and the answer rates its probes found, each as the
    /// logarithm of its ratio to the rate at the limit: a mean over the probes since the last
    /// change, decaying once it holds eight.
    struct Probes: Sendable, Equatable {
        enum Phase: Sendable, Equatable { case cruise, down, up }
        var phase = Phase.cruise
        /// Whether no probe has gone over the limit since slow start ended.
        var fresh = false
        /// Whether the current window follows a change of level (its rate is off).
        var settling = false
        /// Windows at the limit in this cycle.
        var position = 0
        /// The share of the limit admitted now.
        var factor = 1.0
        /// The answer rate and mean latency of the recent windows at the limit.
        var reference: Double?
        var referenceLatency = 0.0
        /// The mean log-ratio of the lower probes' rates to the reference, and their number.
        var down = 0.0
        var downs = 0
        /// The same for the upper probes.
        var up = 0.0
        var ups = 0
        /// Consecutive moves up whose probe answered in proportion to its level.
        var streak = 0
        /// How much longer answers take at the limit than at the lower probe, seconds.
        var latencyGap = 0.0

        /// A running mean of `count` values, an exponential one once past eight.
        private static func mean(_ old: Double, _ count: Int, _ new: Double) -> Double {
            old + (new - old) / Double(min(count, 8))
        }

        mutating func record(reference rate: Double, latency: Double) {
            reference = reference.map { 0.7 * $0 + 0.3 * rate } ?? rate
            referenceLatency = referenceLatency == 0 ? latency : 0.7 * referenceLatency + 0.3 * latency
        }

        mutating func record(down rate: Double, latency: Double) {
            guard let reference, reference > 0, rate > 0 else { return }
            downs += 1
            down = Self.mean(down, downs, log(rate / reference))
            latencyGap = Self.mean(latencyGap, downs, referenceLatency - latency)
        }

        mutating func record(up rate: Double) {
            guard let reference, reference > 0, rate > 0 else { return }
            ups += 1
            up = Self.mean(up, ups, log(rate / reference))
        }

        /// After a change the probes' ratios describe the old limit.
        mutating func forgetDown() {
            down = 0
            downs = 0
            latencyGap = 0
        }

        /// Whether enough probes under the limit answered within the margin as much as it,
        /// for the limit to go down to their level. With `noise` (the standard error of one
        /// probe's log-ratio) the margin is at least one standard error of their mean: a
        /// queued level's probes read a few per cent under it as often as over it when
        /// answers vary tenfold.
        func lowerServesAsMuch(_ p: Parameters, noise: Double) -> Bool {
            downs >= p.probesNeeded && down >= min(log(1 - p.probeMargin), -noise / Double(downs).squareRoot())
        }

        /// Whether the probes under the limit so far answered as much as the limit, and
        /// faster: a queue at the upstream (one probe is enough to hold back a probe over
        /// the limit, not to lower it; that takes ``lowerServesAsMuch(_:noise:)``).
        func limitLooksQueued(_ p: Parameters) -> Bool {
            downs >= 1 && down >= log(1 - p.probeMargin) && latencyGap > p.minimumQueueDelay
        }

        /// Whether the probes over the limit answered clearly more, for the limit to go up:
        /// by the margin, and by two and a half standard errors of their mean (`noise` is one
        /// probe's), so that two lucky windows of a full upstream do not raise it.
        func higherServesMore(_ p: Parameters, noise: Double) -> Bool {
            ups >= 2 && up >= max(log(1 + 2.5 * p.probeMargin), 2.5 * noise / Double(ups).squareRoot())
        }

        /// Whether the probes over the limit answered no more than it (then growing at the
        /// minimum is pointless).
        func higherServesNoMore(_ p: Parameters) -> Bool {
            ups >= p.probesNeeded / 2 && up < log(1 + p.probeMargin)
        }
    }
}
