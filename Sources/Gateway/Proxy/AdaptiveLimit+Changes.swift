extension AdaptiveLimit {
    /// How many times the limit moved, by why: what `authgate_upstream_limit_changes_total`
    /// counts, so that an operator can tell a limit that found its upstream from one that
    /// keeps backing off or starting again. A probe window's level is not a move.
    public struct Changes: Sendable, Equatable {
        /// Grew in slow start.
        public var slowStart = 0
        /// Slow start ended at the first queue, down to what the upstream serves.
        public var queueFound = 0
        /// Backed off after a timeout or a dropped exchange.
        public var backoff = 0
        /// Went down to the lower probe's level, which answered as much.
        public var probeDown = 0
        /// Went up to the higher probe's level, which answered clearly more.
        public var probeUp = 0
        /// Grew by one at the minimum, where a window found no queue.
        public var growth = 0
        /// Slow start began again: the upstream got slower, or the baseline was too low.
        public var restart = 0

        /// No move yet.
        public init() {}

        /// The `reason` label values, in the order of ``counts``.
        public static let reasons = ["slow_start", "queue_found", "backoff", "probe_down", "probe_up", "growth", "restart"]

        /// The counts, in the order of ``reasons``.
        public var counts: [Int] { [slowStart, queueFound, backoff, probeDown, probeUp, growth, restart] }
    }
}
