/// How many exchanges an upstream should have at once, found from what its answers say: a
/// pure value that takes samples (latency, in flight at send, outcome) with the time they
/// ended and moves its ``limit``. ``InFlightLimiter`` feeds it under its lock and applies
/// the limit to its ``AdmissionQueue``.
///
/// It works in windows of ``Parameters/windowSamples`` samples. At the end of each:
/// - the window's mean latency (each sample clipped at ``Parameters/clip`` times the last
///   window's, so one slow request moves it little) is compared with the **baseline**, the
///   smallest window mean of the last two baseline buckets: the latency of the upstream when
///   nothing waits in its own queue (Envoy's min-RTT, without pinning the concurrency to
///   measure it: the sawtooth below brings the limit under the upstream's concurrency often
///   enough for the baseline to be seen);
/// - when the mean is more than ``Parameters/tolerance`` above the baseline, more than
///   ``Parameters/minimumQueueDelay`` in absolute terms, and more than
///   ``Parameters/noiseMargin`` standard errors of a window's mean (an upstream whose
///   answers take 50 to 500 ms has window means that differ by a tenth with no queue at all,
///   and the least of a period's windows lies that much under its usual latency), requests
///   wait in the upstream's queue. By Little's law the upstream serves about
///   `inFlight × baseline / mean` at once; the limit drops to that plus half the tolerance
///   (never below half of itself in one window, never below ``Parameters/minimum``);
/// - unless the upstream answers more at this limit than it did lately at that lower one:
///   the answer rate of each window that reached the limit (by Little's law, in flight ÷
///   latency) is kept per level of the limit, and a decrease is skipped when this window's
///   rate exceeds the best recent rate at or under the target by more than half the
///   tolerance. A queue adds latency at a constant rate; an API with threads to spare on
///   shared cores answers slower *and* more as it is given more, and throttling it to its
///   unloaded latency would cut its throughput to a fraction (the rise is then taken as its
///   latency at this load, and the limit may grow);
/// - a window with a timeout or a dropped exchange backs off by ``Parameters/backoff``, once
///   (AIMD's multiplicative decrease);
/// - otherwise, when the limit was reached in the window (the load could use more) and no
///   answer in it was a 401 for a token superseded while at the upstream, the limit grows by
///   ``Parameters/growth`` of itself (at least ``Parameters/minimumGrowth``). A superseded 401
///   means a rotation caught requests at the upstream; growing then would put more of them
///   there for the next one.
/// - a decrease that would leave the upstream serving less than one request at a time
///   re-measures the baseline and starts slow start again instead: at one request in flight
///   there is no queue of ours;
/// - when the baseline rises by more than the tolerance (a whole baseline period without a
///   window as fast as before: each request got slower, which the decreases above took for a
///   queue), slow start begins again from where the limit fell to.
///
/// ```swift
/// var limit = AdaptiveLimit(AdaptiveLimit.Parameters())
/// let changed = limit.record(.init(latency: .milliseconds(60), inFlight: 8, outcome: .answered), at: .seconds(12))
/// if changed { queue.setLimit(limit.admitted) }
/// ```
public struct AdaptiveLimit: Sendable, Equatable {
    /// How the limit moves.
    public struct Parameters: Sendable, Equatable {
        /// The limit before any sample.
        public var initial: Int
        /// The least the limit falls to.
        public var minimum: Int
        /// The most the limit grows to (a route's `maxInFlight`, when set).
        public var maximum: Int
        /// How far above the baseline a window's mean latency may be before it counts as a
        /// queue at the upstream (0.25: 25 %).
        public var tolerance: Double
        /// Samples in a window.
        public var windowSamples: Int
        /// How long a baseline bucket lasts; the baseline is the smallest window mean of the
        /// current and the previous bucket, so a faster upstream is seen at once and a slower
        /// one within two buckets.
        public var baselinePeriod: Duration
        /// The share the limit grows by in a window that reached it without a queue.
        public var growth: Double
        /// The least it grows by.
        public var minimumGrowth: Double
        /// The factor applied once in a window with a timeout or a dropped exchange.
        public var backoff: Double
        /// A sample counts at most this many times the last window's mean latency.
        public var clip: Double
        /// The least a window's mean must exceed the baseline by to count as a queue, in
        /// seconds. Below it the rise is AuthGate's own work under load (a loop busy with
        /// many connections delays every answer it reads), not the upstream's queue; and a
        /// queue that short holds no token long enough for a rotation to matter.
        public var minimumQueueDelay: Double
        /// The least a window's mean must exceed the baseline by to count as a queue, in
        /// standard errors of a window's mean (the spread of the recent samples ÷ √samples).
        /// The baseline is the least of many window means, about two standard errors under
        /// the typical one; four leave a window with no queue a few per cent chance of
        /// reading as one.
        public var noiseMargin: Double

        /// The defaults, justified in docs/RUNTIME.md; `maximum` is the fixed cap.
        public init(
            initial: Int = 1, minimum: Int = 1, maximum: Int = 1_000, tolerance: Double = 0.25, windowSamples: Int = 20,
            baselinePeriod: Duration = .seconds(5), growth: Double = 0.1, minimumGrowth: Double = 0.2, backoff: Double = 0.9,
            clip: Double = 4, minimumQueueDelay: Double = 0.005, noiseMargin: Double = 4
        ) {
            self.minimumQueueDelay = minimumQueueDelay
            self.noiseMargin = noiseMargin
            precondition(minimum >= 1 && maximum >= minimum && windowSamples >= 1 && baselinePeriod > .zero)
            self.initial = min(max(initial, minimum), maximum)
            self.minimum = minimum
            self.maximum = maximum
            self.tolerance = tolerance
            self.windowSamples = windowSamples
            self.baselinePeriod = baselinePeriod
            self.growth = growth
            self.minimumGrowth = minimumGrowth
            self.backoff = backoff
            self.clip = clip
        }

        /// A limit that never moves: `minimum`, `maximum` and `initial` all `limit`.
        public static func fixed(_ limit: Int) -> Parameters {
            Parameters(initial: limit, minimum: limit, maximum: limit)
        }
    }

    /// How an exchange ended.
    public enum Outcome: Sendable, Equatable {
        /// The upstream answered (any status but the next).
        case answered
        /// The upstream answered 401 for a token superseded while the exchange was there.
        case superseded
        /// No answer: the connection failed or was reset.
        case dropped
        /// No answer in the upstream timeout.
        case timedOut
    }

    /// One exchange's facts.
    public struct Sample: Sendable, Equatable {
        /// From sending to the end of the answer.
        public var latency: Duration
        /// Exchanges at the upstream when it was sent, itself included.
        public var inFlight: Int
        /// How it ended.
        public var outcome: Outcome

        /// A sample.
        public init(latency: Duration, inFlight: Int, outcome: Outcome) {
            self.latency = latency
            self.inFlight = inFlight
            self.outcome = outcome
        }
    }

    /// The current window's sums.
    private struct Window: Sendable, Equatable {
        var samples = 0
        var timed = 0
        /// The sum of the timed samples' latencies, and of their squares, in nanoseconds.
        var latency: Int64 = 0
        var squares: Double = 0
        var inFlight = 0
        var mostInFlight = 0
        var superseded = false
        var failed = false
    }

    /// The smallest window means of the current and the previous baseline period.
    private struct Bucket: Sendable, Equatable {
        var current = Double.infinity
        var previous = Double.infinity
        var started: Duration?
    }

    /// How the limit moves.
    public let parameters: Parameters
    /// The limit, unrounded.
    public private(set) var limit: Double
    /// The upstream's latency with nothing waiting there, seconds; nil before a window.
    public private(set) var baseline: Double?
    /// The last window's mean latency, seconds; nil before a window.
    public private(set) var windowLatency: Double?
    /// The upstream's recent latency, seconds: the last window's mean; nil before a window.
    public var recentLatency: Double? { windowLatency }
    /// Answers per second lately, whatever the limit was (every sample counts, those left
    /// out of the windows too), smoothed over runs of ``Parameters/windowSamples``; nil
    /// before the first run. While the queue stays full it is what the upstream can serve,
    /// however the limit moved meanwhile.
    public private(set) var answerRate: Double?
    /// The samples of the current run, and when the one before its first ended.
    private struct Run: Sendable, Equatable {
        var count = 0
        var started: Duration?
    }
    private var run = Run()
    /// The standard error of a window's mean, seconds: the recent windows' sample spread
    /// over √samples, smoothed; nil before a window.
    public private(set) var noise: Double?
    /// The most a sample counts for, in nanoseconds: ``Parameters/clip`` times the last
    /// window's mean.
    private var clipAt: Int64 = .max
    /// Whether the limit still doubles per window: until the first window that finds a
    /// queue at the upstream (TCP's slow start). Starting low and doubling measures the
    /// baseline before the upstream's own queue can inflate it.
    public private(set) var probing = true
    /// Windows evaluated so far.
    public private(set) var windows = 0
    /// Windows that found a queue by their latency but did not decrease, because every
    /// lower level the decrease could go to answered less.
    public private(set) var declinedDecreases = 0
    private var window = Window()
    private var bucket = Bucket()
    private var rates = RateLevels()
    /// When ``admitted`` last changed.
    private var changed: Duration?

    /// A limit at `parameters.initial`.
    public init(_ parameters: Parameters) {
        self.parameters = parameters
        self.limit = Double(parameters.initial)
    }

    /// The whole number of exchanges admitted at once.
    public var admitted: Int {
        min(parameters.maximum, max(parameters.minimum, Int(limit)))
    }

    /// Takes one exchange's facts, ended at `now` (any monotonic origin). Returns whether
    /// ``admitted`` changed.
    public mutating func record(_ sample: Sample, at now: Duration) -> Bool {
        countAnswer(at: now)
        // Per sample only additions and comparisons of durations; the conversion to seconds
        // waits for the window's end.
        if let changed, now - sample.latency < changed {
            // Sent under the limit before the last change: it tells nothing about this one.
            return false
        }
        window.samples += 1
        window.inFlight += sample.inFlight
        window.mostInFlight = max(window.mostInFlight, sample.inFlight)
        switch sample.outcome {
        case .answered, .superseded:
            let nanoseconds = min(sample.latency.wholeNanoseconds, clipAt)
            window.latency &+= nanoseconds
            window.squares += Double(nanoseconds) * Double(nanoseconds)
            window.timed += 1
            if sample.outcome == .superseded { window.superseded = true }
        case .dropped, .timedOut:
            window.failed = true
        }
        // In slow start, and at the minimum, a window is two rounds of the limit (at least 4
        // samples): doubling from 1 takes a few round trips, not twenty each, and a limit of
        // 1 in front of a slow upstream (3 answers a second) moves within a second or two,
        // not seven. The noise margin widens with the fewer samples.
        let short = probing || admitted <= parameters.minimum
        let size = short ? min(parameters.windowSamples, max(4, 2 * admitted)) : parameters.windowSamples
        guard window.samples >= size else { return false }
        let before = admitted
        evaluate(at: now)
        guard admitted != before else { return false }
        changed = now
        return true
    }

    private mutating func countAnswer(at now: Duration) {
        guard let started = run.started else {
            run.started = now
            return
        }
        run.count += 1
        guard run.count >= parameters.windowSamples, now > started else { return }
        let rate = Double(run.count) / ((now - started) / .seconds(1))
        answerRate = answerRate.map { 0.7 * $0 + 0.3 * rate } ?? rate
        run = Run(count: 0, started: now)
    }

    private mutating func evaluate(at now: Duration) {
        defer { window = Window() }
        windows += 1
        let p = parameters
        if window.failed {
            limit = max(Double(p.minimum), limit * p.backoff)
            return
        }
        guard window.timed > 0 else { return }
        let n = Double(window.timed)
        let meanNanoseconds = Double(window.latency) / n
        let mean = meanNanoseconds / 1e9
        windowLatency = mean
        clipAt = Int64(min(meanNanoseconds * p.clip, 1e18))
        let variance = max(0, window.squares / n - meanNanoseconds * meanNanoseconds) / 1e18
        let standardError = (variance / n).squareRoot()
        let noise = self.noise.map { 0.75 * $0 + 0.25 * standardError } ?? standardError
        self.noise = noise
        if let started = bucket.started, now - started >= p.baselinePeriod {
            bucket = Bucket(current: .infinity, previous: bucket.current, started: now)
        }
        bucket.started = bucket.started ?? now
        bucket.current = min(bucket.current, mean)
        let base = min(bucket.current, bucket.previous)
        if let old = baseline, base > old * (1 + p.tolerance) {
            // The upstream got slower per request for a whole baseline period, not more
            // queued (a queue would have shown in the decreases): find its concurrency again
            // from where the limit fell to.
            probing = true
        }
        baseline = base
        let ratio = mean / base
        let meanInFlight = Double(window.inFlight) / Double(window.samples)
        let reached = window.mostInFlight >= admitted
        // What the upstream answers per second at this window's level (Little's law over
        // the level's recent windows), kept at the level the window really had in flight: a
        // window in slow start that ramps up to the limit has fewer.
        let rate =
            reached
            ? rates.record(
                count: window.timed, meanInFlight: meanInFlight, meanLatency: mean, now: now, freshFor: p.baselinePeriod * 2)
            : meanInFlight / mean
        let queued = ratio > 1 + p.tolerance && mean - base > max(p.minimumQueueDelay, p.noiseMargin * noise)
        // Not in slow start: the first queue it finds ends it, as always (its doubling
        // outruns the levels it ramps through).
        if queued && !probing {
            let target = max(p.minimum, Int(meanInFlight / ratio * (1 + p.tolerance / 2)))
            let verdict = rates.verdict(
                inFlight: Int(meanInFlight.rounded()), rate: rate, target: target, noise: noise / mean,
                least: Double(p.windowSamples), minimumGain: p.tolerance / 5, now: now)
            switch verdict {
            case .unknown:
                break
            case .decrease(let to):
                limit = min(limit, max(Double(p.minimum), to))
                return
            case .hold:
                declinedDecreases += 1
                return
            case .grow:
                // More in flight buys more answers: the rise is this upstream's latency at
                // this load, not a queue. Grow as if no queue had been seen.
                declinedDecreases += 1
                if reached && !window.superseded { grow() }
                return
            }
        }
        if queued {
            let serving = meanInFlight / ratio
            if serving < 1 {
                // An upstream serves at least one request at a time: a queue that leaves it
                // less means the baseline is too low (a lucky window set it, or every
                // request got slower). What it answers in now is its baseline, and slow start
                // finds its concurrency again from here.
                bucket = Bucket(current: mean, previous: mean, started: now)
                baseline = mean
                probing = true
                return
            }
            let target = max(limit / 2, serving * (1 + p.tolerance / 2))
            limit = min(limit, max(Double(p.minimum), target))
            probing = false
        } else if reached && !window.superseded {
            grow()
        }
    }

    private mutating func grow() {
        let p = parameters
        // At the minimum, one more request at once (a window with no queue at one in flight
        // says the upstream can take it), not a fifth of one per window.
        let least = admitted <= p.minimum ? 1 : p.minimumGrowth
        let grown = probing ? limit * 2 : limit + max(least, limit * p.growth)
        limit = min(Double(p.maximum), grown)
    }
}
