import Foundation

/// How many exchanges an upstream should have at once, found from what its answers say: a
/// pure value that takes samples (latency, in flight at send, outcome) with the time they
/// ended and moves its ``limit``. ``InFlightLimiter`` feeds it under its lock and applies
/// ``admitted`` to its ``AdmissionQueue``.
///
/// It works in windows of ``Parameters/windowSamples`` samples, in two phases:
/// - **Slow start** (TCP's): from ``Parameters/initial`` the limit doubles per window that
///   reached it, until a window's mean latency (each sample clipped at ``Parameters/clip``
///   times the last window's, so one slow request moves it little) is more than
///   ``Parameters/tolerance`` above the **baseline**, more than
///   ``Parameters/minimumQueueDelay`` and more than ``Parameters/noiseMargin`` standard
///   errors. Slow start's baseline is the mean of all its samples that found no queue (its
///   pool): the upstream's latency with nothing queued there, measured while the limit is
///   still low, and a standard error is that of the window's mean less the pool's, with the
///   pool's spread. The least of its short windows would lie well under the latency when
///   answers vary tenfold. That first queue ends slow start at what the upstream serves by
///   Little's law (`inFlight × baseline / mean`) plus half the tolerance, never under the
///   level before the last doubling. After it the baseline is the smallest window mean of
///   the last two baseline buckets (Envoy's min-RTT), and a standard error is a window's.
/// - **Probes** (BBR's) after it: latency no longer moves the limit, because an upstream on
///   busy shared cores answers twice as slow from one tenth of a second to the next with
///   no queue at all. In each cycle of ``Parameters/probeEvery`` windows at the limit, one
///   window runs at ``Parameters/probeDown`` times it and one (after a window to fill the
///   upstream) at ``Parameters/probeUp`` times it. Each probe's answer rate (in flight ÷
///   latency, Little's law) is compared with the recent windows at the limit and averaged
///   since the limit last moved: the limit goes down to the lower level when
///   ``Parameters/probesNeeded`` probes say it answers within ``Parameters/probeMargin`` (or
///   one standard error of their mean) as much and faster, and up to the higher one when two
///   say it answers clearly more (by the margin and two and a half standard errors). A
///   queue at the upstream makes the lower level answer as much and faster; an upstream
///   with threads to spare answers more at the higher one. While the lower level answered
///   as much and faster the upward probe is skipped: it would only lengthen a queue. An
///   upward probe that answered in proportion to its level starts a streak: the next one
///   goes up at once and further, as far as its answers grow.
/// - A window with a timeout or a dropped exchange backs off by ``Parameters/backoff``, once
///   (AIMD's multiplicative decrease). A window with a 401 for a token superseded while at
///   the upstream never grows the limit: growing would put more requests there for the next
///   rotation.
/// - Slow start begins again, growing by half per window rather than doubling, when the
///   baseline rises by more than the tolerance (every request got slower for a whole
///   baseline period) or a queue would leave the upstream serving under one request at once
///   (the baseline was a lucky window).
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
        /// Windows in a probe cycle after slow start: the last two of each are a window at
        /// ``probeDown`` times the limit, then one at ``probeUp`` times it.
        public var probeEvery: Int
        /// The level of a downward probe, as a share of the limit.
        public var probeDown: Double
        /// The level of an upward probe, as a share of the limit.
        public var probeUp: Double
        /// How close (a share) the lower probe's answer rate must come to the limit's for the
        /// limit to go down to it; the upper probe must answer that much more and half again
        /// for the limit to go up to it.
        public var probeMargin: Double
        /// Probes of a direction needed before their rates move the limit.
        public var probesNeeded: Int

        /// The defaults, justified in docs/RUNTIME.md; `maximum` is the fixed cap.
        public init(
            initial: Int = 1, minimum: Int = 1, maximum: Int = 1_000, tolerance: Double = 0.25, windowSamples: Int = 20,
            baselinePeriod: Duration = .seconds(5), growth: Double = 0.1, minimumGrowth: Double = 0.2, backoff: Double = 0.9,
            clip: Double = 4, minimumQueueDelay: Double = 0.005, noiseMargin: Double = 4, probeEvery: Int = 4,
            probeDown: Double = 0.8, probeUp: Double = 1.3, probeMargin: Double = 0.02, probesNeeded: Int = 3
        ) {
            self.probeEvery = max(3, probeEvery)
            self.probeDown = probeDown
            self.probeUp = probeUp
            self.probeMargin = probeMargin
            self.probesNeeded = max(1, probesNeeded)
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

        /// Whether the limit can move (a fixed one has `minimum` equal to `maximum`).
        public var isAdaptive: Bool { minimum != maximum }

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
    /// Whether slow start has ended once (a later one grows more gently).
    private var restarted = false
    /// Windows evaluated so far.
    public private(set) var windows = 0
    /// Windows after slow start whose latency read as a queue at the upstream. Only the
    /// probes move the limit then, so none of these decreased it by itself.
    public private(set) var declinedDecreases = 0
    private var window = Window()
    private var bucket = Bucket()
    private var probes = Probes()
    /// Slow start's samples that found no queue, since it began.
    private var pool = Pool()
    /// The variance of one sample's latency, seconds squared: the recent windows' spread,
    /// smoothed; nil before a window.
    private var spread: Double?
    /// When ``admitted`` last changed.
    private var changed: Duration?
    /// How many times the limit moved, by why; a new controller that takes over from this
    /// one (a reload's) carries them on.
    public internal(set) var changes = Changes()

    /// A limit at `parameters.initial`.
    public init(_ parameters: Parameters) {
        self.parameters = parameters
        self.limit = Double(parameters.initial)
    }

    /// Whether the upstream is known to be full at the limit: it is fixed or at its cap, or
    /// since the limit last moved a probe under it answered as much (and faster) or one over
    /// it answered no more. Until then a queue in front of the limit may be the limit's own
    /// error (a false queue can end slow start at 2 in front of 16 slots), and what it lets
    /// through is no measure of what the upstream would serve.
    public var upstreamShownFull: Bool {
        let p = parameters
        return !p.isAdaptive || admitted >= p.maximum
            || !probing && (probes.limitLooksQueued(p) || probes.higherServesNoMore(p))
    }

    /// The whole number of exchanges admitted at once: the limit, or during a probe window
    /// the level probed (``Parameters/probeDown`` or ``Parameters/probeUp`` times it).
    public var admitted: Int {
        min(parameters.maximum, max(parameters.minimum, level(probes.factor)))
    }

    /// The whole number of exchanges at `factor` times the limit's whole number (a probe
    /// from 2.7, admitted 2, goes to 3, not 4): a probe moves by at least one.
    private func level(_ factor: Double) -> Int {
        let base = Int(limit)
        // Every exchange asks for ``admitted``: at the limit itself no arithmetic.
        if factor == 1 { return base }
        let probed = Int((Double(base) * factor).rounded())
        return factor > 1 ? max(base + 1, probed) : factor < 1 ? min(base - 1, probed) : base
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
        // not seven. The noise margin widens with the fewer samples. In slow start a level
        // over ``Parameters/windowSamples`` gets a whole round: the first answers at a new
        // level are the quickest (those sent before it are left out), and 20 of 64 in flight
        // would hide a queue of 32 behind them.
        let rounds = max(4, 2 * admitted)
        let size =
            probing
            ? min(max(parameters.windowSamples, admitted), rounds)
            : admitted <= parameters.minimum ? min(parameters.windowSamples, rounds) : parameters.windowSamples
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
            let before = limit
            limit = max(Double(p.minimum), limit * p.backoff)
            if limit != before { changes.backoff += 1 }
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
        let spread = self.spread.map { 0.75 * $0 + 0.25 * variance } ?? variance
        self.spread = spread
        if let started = bucket.started, now - started >= p.baselinePeriod {
            bucket = Bucket(current: .infinity, previous: bucket.current, started: now)
        }
        bucket.started = bucket.started ?? now
        // Slow start's windows are short (4 samples at 1 and 2 in flight) or the first at
        // their level: the least of them can lie far under the upstream's latency (by half when
        // answers vary tenfold), and every later level then looks queued. Slow start compares
        // with the mean of all its unqueued samples instead (its pool), and with the least
        // window mean of the windows before it began, if any.
        if !probing { bucket.current = min(bucket.current, mean) }
        let pooled = probing && pool.count > 0
        var base = min(bucket.current, bucket.previous)
        if pooled { base = min(base, pool.mean) }
        if !base.isFinite { base = mean }
        if let old = baseline, base > old * (1 + p.tolerance), !pooled {
            // The upstream got slower per request for a whole baseline period, not more
            // queued (a queue would have shown in the decreases): find its concurrency again
            // from where the limit fell to.
            restartSlowStart()
        }
        baseline = base
        let ratio = mean / base
        let meanInFlight = Double(window.inFlight) / Double(window.samples)
        let reached = window.mostInFlight >= admitted
        // The window's mean is off by its samples' spread over √samples, however few they
        // are: a window of 4 is not held to the margin of the usual 20.
        var margin = p.noiseMargin * max(noise, (spread / n).squareRoot())
        if pooled && !restarted {
            // The first slow start tests the window's mean against the pool's: the standard
            // error of their difference, with the pool's spread (what the window's would be
            // with no queue).
            margin = p.noiseMargin * (pool.variance * (1 / n + 1 / pool.count)).squareRoot()
        }
        let queued = ratio > 1 + p.tolerance && mean - base > max(p.minimumQueueDelay, margin)
        if probing && !queued { pool.merge(count: n, mean: mean, squares: variance * n) }
        if queued {
            let serving = meanInFlight / ratio
            if serving < 1 {
                // An upstream serves at least one request at a time: a queue that leaves it
                // less means the baseline is too low (a lucky window set it, or every
                // request got slower). What it answers in now is its baseline, and slow start
                // finds its concurrency again from here.
                bucket = Bucket(current: mean, previous: mean, started: now)
                baseline = mean
                restartSlowStart()
                return
            }
            if probing {
                // The first queue ends slow start: down to what the upstream serves (Little's
                // law), plus half the tolerance.
                let target = max(limit / 2, serving * (1 + p.tolerance / 2))
                let before = limit
                limit = min(limit, max(Double(p.minimum), target))
                if limit != before { changes.queueFound += 1 }
                probing = false
                // The probes' baseline starts from slow start's.
                pool = Pool()
                bucket = Bucket(current: base, previous: base, started: now)
                probes = Probes()
                probes.fresh = true
                return
            }
        }
        if probing {
            if reached && !window.superseded { grow() }
            return
        }
        evaluateProbes(rate: meanInFlight / mean, latency: mean, reached: reached, queued: queued)
    }

    /// After slow start: the cycle of windows at the limit and probe windows under and over
    /// it, and what their rates say.
    private mutating func evaluateProbes(rate: Double, latency: Double, reached: Bool, queued: Bool) {
        let p = parameters
        let settling = probes.settling
        probes.settling = false
        // The standard error of a probe's log-ratio to the limit's rate: a window's relative
        // spread, and a little more for the smoothed reference it is compared with.
        let rateNoise = 1.09 * ((spread ?? 0) / Double(p.windowSamples)).squareRoot() / latency
        switch probes.phase {
        case .down:
            probes.record(down: rate, latency: latency)
            probes.phase = .cruise
            probes.factor = 1
            probes.settling = true
            if probes.lowerServesAsMuch(p, noise: rateNoise), probes.latencyGap > p.minimumQueueDelay {
                limit = max(Double(p.minimum), Double(level(p.probeDown)))
                changes.probeDown += 1
                probes.forgetDown()
            }
            return
        case .up:
            // The first window over the limit fills the upstream from the limit's level:
            // its latency is that level's, and its rate too high by Little's law.
            if settling { return }
            // What the probe's level added to the limit's, and to its answer rate.
            let probed = min(p.maximum, level(probes.factor))
            let levelGain = log(Double(probed) / max(1, Double(Int(limit))))
            let gain = probes.reference.map { rate > 0 && $0 > 0 ? log(rate / $0) : 0 } ?? 0
            let extended = probes.factor > p.probeUp
            probes.record(up: rate)
            probes.phase = .cruise
            probes.position = 0
            probes.factor = 1
            probes.settling = true
            if probes.higherServesMore(p, noise: rateNoise), !window.superseded {
                // A probe a streak extended goes only as far as its answers grew: from 3
                // to a probe at 5 that answered a third more, to 4.
                let grown = extended ? max(Double(level(p.probeUp)), (limit * exp(gain)).rounded(.up)) : Double(probed)
                limit = min(Double(p.maximum), Double(probed), grown)
                changes.probeUp += 1
                probes.forgetDown()
                probes.ups = probes.up >= log(1 + 6 * p.probeMargin) ? min(probes.ups, 1) : 0
                // An answer rate that grew with the level (more than three fifths of it, where
                // a queue at the upstream would give none) says the upstream is far from full.
                probes.streak = gain >= 0.6 * levelGain && probed < p.maximum ? probes.streak + 1 : 0
            } else {
                probes.streak = 0
            }
            return
        case .cruise:
            break
        }
        if reached && !settling { probes.record(reference: rate, latency: latency) }
        probes.position += 1
        let useless = probes.lowerServesAsMuch(p, noise: rateNoise) || probes.higherServesNoMore(p)
        if queued { declinedDecreases += 1 }
        if reached && !window.superseded && !queued && !useless && admitted <= p.minimum { grow() }
        guard reached, !settling, probes.reference != nil else { return }
        if probes.streak > 0 {
            // The last probe over the limit answered in proportion to its level: the next
            // one goes up at once, without the windows at the limit and the one under it, and
            // further each time (1.3×, 1.69×, then 2×), as BBR's later versions lengthen
            // their probes up while the delivery rate keeps growing. A limit that a false
            // queue took down early climbs back in a few windows rather than one cycle a step.
            probes.phase = .up
            probes.factor = min(2, pow(p.probeUp, Double(1 + probes.streak)))
            probes.settling = true
        } else if probes.position == p.probeEvery / 2 {
            probes.phase = .down
            probes.factor = p.probeDown
        } else if probes.position >= p.probeEvery && probes.limitLooksQueued(p)
            && (probes.fresh || probes.downs > 1 && probes.latencyGap > 2 * (noise ?? 0))
        {
            // The level under the limit answered as much and clearly faster: the limit is
            // over the upstream's concurrency (slow start's last window overstates what it
            // serves), and a level above it would only lengthen its queue.
            probes.position = 0
        } else if probes.position >= p.probeEvery {
            probes.phase = .up
            probes.fresh = false
            probes.factor = p.probeUp
            probes.settling = true
        }
    }

    /// Slow start again, after its first end: the limit was near the upstream's concurrency
    /// a moment ago, so it grows by half per window rather than doubling (doubling from
    /// there would put as many requests again in the upstream's own queue). The probes'
    /// findings stay: they describe the upstream, not the limit.
    private mutating func restartSlowStart() {
        changes.restart += 1
        probing = true
        pool = Pool()
        restarted = true
    }

    private mutating func grow() {
        let p = parameters
        // At the minimum, one more request at once (a window with no queue at one in flight
        // says the upstream can take it), not a fifth of one per window.
        let least = admitted <= p.minimum ? 1 : p.minimumGrowth
        let grown = probing ? limit * (restarted ? 1.5 : 2) : limit + max(least, limit * p.growth)
        let before = limit
        limit = min(Double(p.maximum), grown)
        guard limit != before else { return }
        if probing { changes.slowStart += 1 } else { changes.growth += 1 }
    }
}
