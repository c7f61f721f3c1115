import Foundation
import Locking
import TestSupport
import Testing

@testable import Gateway

/// The limiter over real tasks: never more than its limit at once, a bounded wait, and
/// cancellation that gives every slot back.
@Suite struct InFlightLimiterTests {
    @Test func manyTasksNeverExceedTheLimit() async throws {
        // The wait is bounded far past the run: this test is about the bound, and under the
        // sanitizers the whole suite shares two threads for minutes.
        let limiter = InFlightLimiter(limit: 3, timeout: .seconds(1800))
        let now = Locked((current: 0, most: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<60 {
                group.addTask {
                    try await limiter.acquire(i % 4 == 0 ? .replay : .first)
                    now.withLock {
                        $0.current += 1
                        $0.most = max($0.most, $0.current)
                    }
                    await Task.yield()
                    now.withLock { $0.current -= 1 }
                    limiter.release()
                }
            }
            try await group.waitForAll()
        }
        #expect(now.withLock { $0.most } <= 3)
        #expect(limiter.load.inFlight == 0)
        #expect(limiter.load.waiting == 0)
    }

    @Test func aWaiterGivesUpAfterTheTimeoutWithoutTakingASlot() async throws {
        let limiter = InFlightLimiter(limit: 1, timeout: .milliseconds(50))
        try await limiter.acquire(.first)
        await #expect(throws: GatewayError.upstreamBusy(retryAfter: 1), "no latency known yet: 1 s") {
            try await limiter.acquire(.first)
        }
        #expect(limiter.load.waiting == 0)
        limiter.release()
        #expect(limiter.load.inFlight == 0)
        try await limiter.acquire(.first)
        limiter.release()
    }

    @Test func aCancelledWaiterLeavesTheQueue() async throws {
        let limiter = InFlightLimiter(limit: 1, timeout: .seconds(30))
        try await limiter.acquire(.first)
        let waiter = Task { try await limiter.acquire(.first) }
        while limiter.load.waiting == 0 { await Task.yield() }
        waiter.cancel()
        await #expect(throws: GatewayError.slotCancelled) { try await waiter.value }
        #expect(limiter.load.waiting == 0)
        limiter.release()
        #expect(limiter.load.inFlight == 0)
    }

    @Test func aLaterWaiterWithAShorterTimeoutGivesUpFirst() async throws {
        let limiter = InFlightLimiter(limit: 1, timeout: .seconds(1800))
        try await limiter.acquire(.first)
        let patient = Task { try await limiter.acquire(.first) }
        while limiter.load.waiting == 0 { await Task.yield() }
        // The one task that times waits out sleeps until the patient waiter's deadline; the
        // hasty one's, earlier, must wake it sooner.
        await #expect(throws: GatewayError.upstreamBusy(retryAfter: 1)) {
            try await limiter.acquire(.first, timeout: .milliseconds(50))
        }
        #expect(limiter.load.waiting == 1, "the patient waiter still waits")
        limiter.release()
        _ = try await patient.value
        limiter.release()
        #expect(limiter.load.inFlight == 0)
    }

    @Test func waitersTimeOutEachAtItsOwnDeadlineAndNeverBefore() async throws {
        let limiter = InFlightLimiter(limit: 1, timeout: .seconds(1800))
        try await limiter.acquire(.first)
        let clock = ContinuousClock()
        func waiter(_ timeout: Duration) -> Task<Duration, Never> {
            Task {
                let start = clock.now
                do {
                    try await limiter.acquire(.first, timeout: timeout)
                    Issue.record("a waiter got the slot that was never released")
                } catch {
                    #expect((error as? GatewayError)?.code == .upstreamBusy)
                }
                return clock.now - start
            }
        }
        let short = waiter(.milliseconds(200))
        while limiter.load.waiting < 1 { await Task.yield() }
        let long = waiter(.milliseconds(600))
        // After the first deadline the same task sleeps again until the second.
        #expect(await short.value >= .milliseconds(200))
        #expect(await long.value >= .milliseconds(600))
        #expect(limiter.load.waiting == 0)
        #expect(await eventually { !limiter.timesOutWaits }, "nobody waits: the task ended")
        limiter.release()
    }

    @Test func theTimingTaskEndsOnceNobodyWaits() async throws {
        let limiter = InFlightLimiter(limit: 1, timeout: .milliseconds(100))
        #expect(!limiter.timesOutWaits)
        try await limiter.acquire(.first)
        let waiter = Task { try await limiter.acquire(.first) }
        while limiter.load.waiting == 0 { await Task.yield() }
        #expect(limiter.timesOutWaits)
        limiter.release()
        _ = try await waiter.value
        // It wakes at the admitted waiter's deadline, finds nobody, and ends.
        #expect(await eventually { !limiter.timesOutWaits })
        limiter.release()
    }

    @Test func aWaiterWithoutATaskIsToldOnceAndOnlyWhenItWaited() {
        let limiter = InFlightLimiter(limit: 1, timeout: .seconds(1800))
        let told = Locked<[Result<Int, GatewayError>]>([])
        let tell: @Sendable (Result<Int, GatewayError>) -> Void = { result in told.withLock { $0.append(result) } }
        #expect(limiter.requestSlot(.first, whenDecided: tell) == .granted(inFlight: 1), "a free slot is taken at once")
        guard case .waiting(let handed) = limiter.requestSlot(.first, whenDecided: tell),
            case .waiting(let cancelled) = limiter.requestSlot(.first, whenDecided: tell)
        else {
            Issue.record("a request found a slot that was taken")
            return
        }
        #expect(told.withLock { $0 }.isEmpty, "nobody is told what was answered at once, or before its wait ends")
        limiter.cancelWait(cancelled)
        #expect(told.withLock { $0 } == [.failure(.slotCancelled)])
        limiter.release()
        #expect(told.withLock { $0 } == [.failure(.slotCancelled), .success(1)], "the release handed its slot over")
        limiter.cancelWait(handed)
        #expect(told.withLock { $0 }.count == 2, "a wait that ended is not ended again")
        limiter.release()
        #expect(limiter.load == (inFlight: 0, waiting: 0))
    }
}
