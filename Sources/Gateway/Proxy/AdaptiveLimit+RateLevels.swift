extension AdaptiveLimit {
    /// The answer rate an upstream reached at each level of in-flight exchanges lately, and
    /// what it says of a decrease the latency asks for.
    ///
    /// Levels are each count up to 8, then half octaves (8–11, 12–15, 16–22, 23–31, …);
    /// each keeps the decaying sums of in flight, latency and samples of the windows seen
    /// there, and their ratio is the level's rate by Little's law. Sums rather than each
    /// window's rate: a window of 20 answers on busy processors has a mean latency a third
    /// off, its rate with it, and the best of such rates is the luckiest. Fixed arrays, so
    /// that recording allocates nothing.
    struct RateLevels: Sendable, Equatable {
        private static let count = 24
        /// What a level's sums keep of their past at each new window (about five windows).
        private static let decay = 0.8
        private var inFlight = [Double](repeating: 0, count: count)
        private var latency = [Double](repeating: 0, count: count)
        private var samples = [Double](repeating: 0, count: count)
        private var seen = [Duration?](repeating: nil, count: count)
        /// How long a level's rate stands for the upstream as it is now.
        private var freshFor = Duration.zero

        /// The level of an in-flight count.
        static func level(_ inFlight: Int) -> Int {
            let n = max(1, inFlight)
            if n <= 8 { return n - 1 }
            let octave = Int.bitWidth - n.leadingZeroBitCount - 1
            let upper = n.multipliedReportingOverflow(by: n).partialValue >= 1 << (2 * octave + 1) ? 1 : 0
            return min(count - 1, 8 + 2 * (octave - 3) + upper)
        }

        /// Takes a window's samples (`count` of them, `meanInFlight` in flight on average,
        /// `meanLatency` seconds each) at `now`; a level not seen for `freshFor` starts over.
        /// Returns the level's rate, answers per second.
        @discardableResult
        mutating func record(count: Int, meanInFlight: Double, meanLatency: Double, now: Duration, freshFor: Duration)
            -> Double
        {
            self.freshFor = freshFor
            let i = Self.level(Int(meanInFlight.rounded()))
            let keep = seen[i].map { now - $0 <= freshFor } == true ? Self.decay : 0
            inFlight[i] = keep * inFlight[i] + Double(count) * meanInFlight
            latency[i] = keep * latency[i] + Double(count) * meanLatency
            samples[i] = keep * samples[i] + Double(count)
            seen[i] = now
            return inFlight[i] / latency[i]
        }

        /// What the rates say of a decrease.
        enum Verdict: Equatable {
            /// Too little is known: the latency decides.
            case unknown
            /// A lower level answered as much, within the noise: go down to it (its mean in
            /// flight), or to the latency's target when that is higher.
            case decrease(to: Double)
            /// Every lower level seen answered clearly less, but the one just under this one
            /// has not been seen lately: stay (a level between might answer as much).
            case hold
            /// Every lower level seen answered clearly less, the one just under this one
            /// too: more in flight still buys answers.
            case grow
        }

        /// What the rates say when the latency of a window at `inFlight` asks to go down to
        /// `target`, `rate` being this level's rate: `noise` is a window's relative standard
        /// error of its mean latency, `least` the samples a level needs to count,
        /// `minimumGain` the least difference between two levels' rates that counts.
        func verdict(
            inFlight: Int, rate: Double, target: Int, noise: Double, least: Double, minimumGain: Double, now: Duration
        ) -> Verdict {
            let top = Self.level(inFlight)
            let bottom = Self.level(target)
            guard bottom < top, known(top, least: least, now: now), known(bottom, least: least, now: now) else {
                return .unknown
            }
            // Two levels' rates differ by their errors combined (each a window's over the
            // square root of its windows) with no difference at all; three such errors
            // leave little chance of reading a difference where there is none.
            func gain(_ i: Int) -> Double {
                1 + max(minimumGain, 3 * noise * (least / samples[top] + least / samples[i]).squareRoot())
            }
            var below = bottom
            for i in bottom..<top where known(i, least: least, now: now) {
                if self.inFlight[i] / latency[i] * gain(i) >= rate {
                    return .decrease(to: max(Double(target), self.inFlight[i] / samples[i]))
                }
                below = i
            }
            return below == top - 1 ? .grow : .hold
        }

        private func known(_ i: Int, least: Double, now: Duration) -> Bool {
            guard let last = seen[i], now - last <= freshFor else { return false }
            return samples[i] >= least
        }
    }
}
