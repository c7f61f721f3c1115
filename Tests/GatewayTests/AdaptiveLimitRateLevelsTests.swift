import Testing

@testable import Gateway

/// The answer rates per level of in flight, and what they say of a decrease the latency asks
/// for: without sockets or a clock.
@Suite struct AdaptiveLimitRateLevelsTests {
    typealias Levels = AdaptiveLimit.RateLevels

    @Test func levelsAreEachCountUpToEightThenHalfOctaves() {
        let expected: [(Int, Int)] = [
            (0, 0), (1, 0), (2, 1), (3, 2), (8, 7), (9, 8), (11, 8), (12, 9), (15, 9), (16, 10), (22, 10), (23, 11),
            (31, 11), (32, 12), (45, 12), (46, 13), (64, 14), (91, 15), (128, 16), (1_000, 21), (1 << 40, 23),
        ]
        for (inFlight, level) in expected {
            #expect(Levels.level(inFlight) == level, "\(inFlight)")
        }
    }

    /// Records `windows` windows of 20 answers at `inFlight` in flight, `latency` seconds each.
    private func record(_ levels: inout Levels, _ inFlight: Double, latency: Double, windows: Int = 3, at now: Duration) {
        for _ in 0..<windows {
            levels.record(count: 20, meanInFlight: inFlight, meanLatency: latency, now: now, freshFor: .seconds(10))
        }
    }

    private func verdict(_ levels: Levels, at inFlight: Double, latency: Double, target: Int, now: Duration)
        -> Levels.Verdict
    {
        levels.verdict(
            inFlight: Int(inFlight), rate: inFlight / latency, target: target, noise: 0.02, least: 20, minimumGain: 0.05,
            now: now)
    }

    @Test func aPoolAnswersNoMoreAboveItsSizeSoTheDecreaseGoesToIt() {
        // Eight workers, 60 ms: 133 answers a second at 8 and at 16 alike.
        var levels = Levels()
        record(&levels, 8, latency: 0.060, at: .seconds(1))
        record(&levels, 16, latency: 0.120, at: .seconds(2))
        #expect(verdict(levels, at: 16, latency: 0.120, target: 6, now: .seconds(2)) == .unknown, "6 not seen")
        #expect(verdict(levels, at: 16, latency: 0.120, target: 8, now: .seconds(2)) == .decrease(to: 8))
        // A target under the pool, with the pool's own level seen: down to the pool, not under it.
        record(&levels, 4, latency: 0.060, at: .seconds(2))
        #expect(verdict(levels, at: 16, latency: 0.120, target: 4, now: .seconds(2)) == .decrease(to: 8))
    }

    @Test func anUpstreamThatAnswersMoreWithMoreIsNotTakenDown() {
        // Latency 40 ms from 4 to 32 in flight: the rate doubles with each doubling.
        var levels = Levels()
        record(&levels, 8, latency: 0.040, at: .seconds(1))
        record(&levels, 12, latency: 0.040, at: .seconds(1))
        record(&levels, 16, latency: 0.040, at: .seconds(1))
        #expect(verdict(levels, at: 16, latency: 0.040, target: 8, now: .seconds(1)) == .grow)
        // 12–15 not seen: 16 answers clearly more than every
        // level seen, but a level between might do as well.
        var sparse = Levels()
        record(&sparse, 8, latency: 0.040, at: .seconds(1))
        record(&sparse, 16, latency: 0.040, at: .seconds(1))
        #expect(verdict(sparse, at: 16, latency: 0.040, target: 8, now: .seconds(1)) == .hold)
    }

    @Test func staleOrThinLevelsSayNothing() {
        var levels = Levels()
        record(&levels, 8, latency: 0.060, at: .seconds(1))
        record(&levels, 16, latency: 0.120, at: .seconds(12))
        #expect(verdict(levels, at: 16, latency: 0.120, target: 8, now: .seconds(12)) == .unknown, "8 is 11 s old")
        var thin = Levels()
        record(&thin, 8, latency: 0.060, windows: 0, at: .seconds(1))
        thin.record(count: 10, meanInFlight: 8, meanLatency: 0.060, now: .seconds(1), freshFor: .seconds(10))
        record(&thin, 16, latency: 0.120, at: .seconds(1))
        #expect(verdict(thin, at: 16, latency: 0.120, target: 8, now: .seconds(1)) == .unknown, "10 samples at 8")
    }

    @Test func noiseWidensWhatCountsAsAnsweringAsMuch() {
        // 16 answers 15 % more than 8: a difference with quiet answers, none with noisy ones.
        var levels = Levels()
        record(&levels, 8, latency: 0.060, at: .seconds(1))
        record(&levels, 11, latency: 0.060 * 11 / 8, at: .seconds(1))
        record(&levels, 12, latency: 0.060 * 12 / 8, at: .seconds(1))
        record(&levels, 16, latency: 0.120 / 1.15, at: .seconds(1))
        let quiet = levels.verdict(
            inFlight: 16, rate: 16 / (0.120 / 1.15), target: 8, noise: 0.01, least: 20, minimumGain: 0.05, now: .seconds(1))
        #expect(quiet == .grow)
        let noisy = levels.verdict(
            inFlight: 16, rate: 16 / (0.120 / 1.15), target: 8, noise: 0.10, least: 20, minimumGain: 0.05, now: .seconds(1))
        #expect(noisy == .decrease(to: 8))
    }
}
