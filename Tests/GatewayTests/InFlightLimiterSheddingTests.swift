import Gateway
import TestSupport
import Testing

/// A first try that would wait longer than its queue timeout, by the queue's length and the
/// upstream's recent latency, is refused at once with a `Retry-After` from the queue; a
/// replay is never refused so.
@Suite struct InFlightLimiterSheddingTests {
    /// A limiter of `limit` whose upstream answered in `latency` seconds.
    func limiter(limit: Int, latency: Double) async throws -> InFlightLimiter {
        // A window of one sample, so that one sample sets the recent latency.
        let limiter = InFlightLimiter(
            AdaptiveLimit.Parameters(initial: limit, minimum: limit, maximum: limit, windowSamples: 1), timeout: .seconds(1))
        let inFlight = try await limiter.acquire(.first)
        limiter.release(
            AdaptiveLimit.Sample(latency: .seconds(latency), inFlight: inFlight, outcome: .answered), at: .now)
        return limiter
    }

    /// The code of the error `body` ends with; nil when it succeeds or throws another error.
    static func failure(_ body: () async throws(GatewayError) -> Int) async -> GatewayError.Code? {
        do throws(GatewayError) {
            _ = try await body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aFirstTryWhoseExpectedWaitIsBeyondTheTimeoutIsShedAtOnce() async throws {
        let limiter = try await limiter(limit: 1, latency: 2.5)
        try await limiter.acquire(.first)
        // One ahead at the upstream, 2.5 s each: 2.5 s expected, over the 1 s timeout.
        await #expect(throws: GatewayError.upstreamShed(retryAfter: 3)) { try await limiter.acquire(.first) }
        #expect(limiter.load.waiting == 0, "it never joined the queue")
        limiter.release()
    }

    @Test func aLongerTimeoutLetsItWait() async throws {
        let limiter = try await limiter(limit: 2, latency: 4)
        try await limiter.acquire(.first)
        try await limiter.acquire(.first)
        // 2 s expected: over the limiter's 1 s, within this request's 30 s.
        let waiter = Task { try await limiter.acquire(.first, timeout: .seconds(30)) }
        while limiter.load.waiting == 0 { await Task.yield() }
        limiter.release()
        _ = try await waiter.value
        #expect(limiter.load.inFlight == 2)
        limiter.release()
        limiter.release()
    }

    @Test func aReplayIsNeverShed() async throws {
        let limiter = try await limiter(limit: 1, latency: 5)
        try await limiter.acquire(.first)
        let replay = Task { try await limiter.acquire(.replay, timeout: .seconds(30)) }
        while limiter.load.waiting == 0 { await Task.yield() }
        limiter.release()
        _ = try await replay.value
        #expect(limiter.load.inFlight == 1)
        limiter.release()
    }

    @Test func aRequestThatTimesOutIsToldTheQueuesExpectedWait() async throws {
        let limiter = try await limiter(limit: 1, latency: 2.5)
        try await limiter.acquire(.first)
        // Two replays wait far longer than the test; a third gives up at once.
        let patient = (0..<2).map { _ in Task { try await limiter.acquire(.replay, timeout: .seconds(3600)) } }
        while limiter.load.waiting < 2 { await Task.yield() }
        // Two still waiting when it leaves, and a newcomer: 3 × 2.5 s at one slot.
        await #expect(throws: GatewayError.upstreamBusy(retryAfter: 8)) {
            try await limiter.acquire(.replay, timeout: .milliseconds(20))
        }
        for task in patient { task.cancel() }
        for task in patient { _ = try? await task.value }
        #expect(limiter.load.waiting == 0)
        limiter.release()
    }

    @Test func nobodyIsShedWhileTheLimitIsStillInSlowStart() async throws {
        // An adaptive limit at 1 that doubles per window: 2.5 s at the upstream would read
        // as an expected wait over the 1 s timeout, but the limit is about to grow.
        let limiter = InFlightLimiter(AdaptiveLimit.Parameters(windowSamples: 1), timeout: .seconds(1))
        let inFlight = try await limiter.acquire(.first)
        limiter.release(
            AdaptiveLimit.Sample(latency: .seconds(2.5), inFlight: inFlight, outcome: .answered), at: .now)
        #expect(limiter.limit == 2 && limiter.controller.probing, "still in slow start")
        try await limiter.acquire(.first)
        try await limiter.acquire(.first)
        // 1 × 2.5 s ÷ 2 slots: 1.25 s expected, over the 1 s timeout; it waits all the same.
        // Told apart by how it ends, not by when it is looked at: a queued request times out
        // (`upstream-busy`) once its second is up, a shed one is refused at once
        // (`upstream-shed`), however long this task is kept from running.
        let ended = await Self.failure { () async throws(GatewayError) -> Int in try await limiter.acquire(.first) }
        #expect(ended == .upstreamBusy, "it was shed rather than queued")
        limiter.release()
        limiter.release()
    }

    @Test func aLimitThatSlowStartLeftLowShedsNobodyBeforeItsProbesShowTheUpstreamFull() async throws {
        // Slow start at 1 (100 ms), then 2 (160 ms): a queue, so it ends at 1 (1.4). Its
        // queue of a few would read as over the 1 s timeout at 6 answers a second, but
        // nothing has shown the upstream full at 1: the limit may be the one at fault (a
        // false queue ended slow start at 2 in front of 16 slots in a storm, and every first
        // try was refused at once for the rest of it).
        let limiter = InFlightLimiter(AdaptiveLimit.Parameters(windowSamples: 1), timeout: .seconds(1))
        let start = ContinuousClock.now
        let first = try await limiter.acquire(.first)
        limiter.release(AdaptiveLimit.Sample(latency: .milliseconds(100), inFlight: first, outcome: .answered), at: start)
        // Two sent at 2 in flight after the limit doubled (samples sent before a change are
        // left out).
        try await limiter.acquire(.first)
        try await limiter.acquire(.first)
        let later = start.advanced(by: .milliseconds(200))
        limiter.release(AdaptiveLimit.Sample(latency: .milliseconds(160), inFlight: 2, outcome: .answered), at: later)
        limiter.release(AdaptiveLimit.Sample(latency: .milliseconds(160), inFlight: 2, outcome: .answered), at: later)
        #expect(limiter.limit == 1 && !limiter.controller.probing, "slow start ended at 1")
        #expect(!limiter.controller.upstreamShownFull)
        try await limiter.acquire(.first)
        let waiting = (0..<7).map { _ in Task { try await limiter.acquire(.first, timeout: .seconds(3600)) } }
        #expect(await eventually { limiter.load.waiting == 7 }, "queued")
        // 8 waiting at 1 ÷ 0.16 s: 1.3 s, over the 1 s timeout. Queued, it times out
        // (`upstream-busy`); shed, it would have been refused at once (`upstream-shed`).
        let ended = await Self.failure { () async throws(GatewayError) -> Int in try await limiter.acquire(.first) }
        #expect(ended == .upstreamBusy, "it was shed on a limit nothing has shown full")
        for task in waiting { task.cancel() }
        for task in waiting { _ = try? await task.value }
        limiter.release()
    }

    @Test func theQueueDrainsAtTheRateTheUpstreamHasLatelyAnswered() async throws {
        // A limit of 1 whose answers took 1 s each, yet came 4 a second (the limit had just
        // dipped; the upstream serves more than it): three in the queue wait 0.75 s, not 3 s.
        let limiter = InFlightLimiter(
            AdaptiveLimit.Parameters(initial: 1, minimum: 1, maximum: 1, windowSamples: 2), timeout: .seconds(1))
        let start = ContinuousClock.now
        for i in 0..<5 {
            let inFlight = try await limiter.acquire(.first)
            limiter.release(
                AdaptiveLimit.Sample(latency: .seconds(1), inFlight: inFlight, outcome: .answered),
                at: start.advanced(by: .milliseconds(250 * i)))
        }
        #expect(limiter.controller.answerRate == 4)
        try await limiter.acquire(.first)
        let replays = (0..<2).map { _ in Task { try await limiter.acquire(.replay, timeout: .seconds(3600)) } }
        #expect(await eventually { limiter.load.waiting == 2 }, "the replays are queued")
        // Queued, it times out (`upstream-busy`) after its second; shed, it would have been
        // refused at once (`upstream-shed`), whenever this task runs.
        let ended = await Self.failure { () async throws(GatewayError) -> Int in try await limiter.acquire(.first) }
        #expect(ended == .upstreamBusy, "it was shed: the wait was reckoned at one answer a second")
        for task in replays { task.cancel() }
        for task in replays { _ = try? await task.value }
        limiter.release()
    }

    @Test func withoutAnyLatencyYetNobodyIsShed() async throws {
        let limiter = InFlightLimiter(limit: 1, timeout: .seconds(30))
        try await limiter.acquire(.first)
        let waiter = Task { try await limiter.acquire(.first) }
        while limiter.load.waiting == 0 { await Task.yield() }
        limiter.release()
        _ = try await waiter.value
        limiter.release()
    }
}
