import Testing

@testable import Runtime

typealias SpliceMachine = Splice.StateMachine

/// Idle timeout 1000 ms, high water 100 bytes.
private func started(at now: UInt64 = 0) -> SpliceMachine {
    var m = SpliceMachine(configuration: .init(idleTimeout: 1000, highWater: 100))
    _ = m.start(now: now)
    return m
}

struct SpliceStateMachineTests {
    @Test func startReadsBothSidesAndArmsTheIdleTimer() {
        var m = SpliceMachine(configuration: .init(idleTimeout: 1000, highWater: 100))
        #expect(m.start(now: 5) == [.resumeReading(.client), .resumeReading(.upstream), .armTimer(deadline: 1005)])
        #expect(m.start(now: 6) == [])
    }

    @Test(arguments: Splice.Side.allCases)
    func bytesReadOnOneSideAreWrittenToTheOther(side: Splice.Side) {
        var m = started()
        #expect(m.received(from: side, now: 1) == [.forward(to: side.other)])
    }

    @Test(arguments: Splice.Side.allCases)
    func aQueueAboveHighWaterPausesTheSourceUntilItDrainsToHalf(target: Splice.Side) {
        var m = started()
        _ = m.received(from: target.other, now: 1)
        #expect(m.writeQueued(to: target, queuedBytes: 100) == [])
        #expect(m.writeQueued(to: target, queuedBytes: 101) == [.pauseReading(target.other)])
        #expect(m.direction(to: target).sourcePaused)
        // A second queued write while paused pauses nothing more.
        #expect(m.writeQueued(to: target, queuedBytes: 300) == [])
        #expect(m.writeCompleted(to: target, failed: false, queuedBytes: 51, now: 2) == [])
        #expect(m.writeCompleted(to: target, failed: false, queuedBytes: 50, now: 3) == [.resumeReading(target.other)])
        #expect(m.direction(to: target).writesInFlight == 1)
        // The other direction was never touched.
        #expect(m.direction(to: target.other) == SpliceMachine.Direction())
    }

    @Test(arguments: Splice.Side.allCases)
    func anEndOfInputShutsDownWritingToTheOtherSide(side: Splice.Side) {
        var m = started()
        #expect(m.readEnded(from: side, now: 1) == [.shutdownWrite(side.other)])
        // Said once; later bytes from an ended side are not forwarded.
        #expect(m.readEnded(from: side, now: 2) == [])
        #expect(m.received(from: side, now: 3) == [])
        // The other direction still flows (half-close).
        #expect(m.received(from: side.other, now: 4) == [.forward(to: side)])
        #expect(m.shutdownCompleted(side.other, failed: false) == [])
        #expect(!m.isClosed)
    }

    @Test func theSpliceClosesOnceBothDirectionsEnded() {
        var m = started()
        _ = m.readEnded(from: .upstream, now: 1)
        _ = m.shutdownCompleted(.client, failed: false)
        _ = m.readEnded(from: .client, now: 2)
        #expect(m.shutdownCompleted(.upstream, failed: false) == [.close(.finished)])
        #expect(m.outcome == .finished)
    }

    @Test func anEndWhilePausedDoesNotResumeTheEndedSide() {
        var m = started()
        _ = m.received(from: .client, now: 1)
        #expect(m.writeQueued(to: .upstream, queuedBytes: 500) == [.pauseReading(.client)])
        #expect(m.readEnded(from: .client, now: 2) == [.shutdownWrite(.upstream)])
        #expect(m.writeCompleted(to: .upstream, failed: false, queuedBytes: 0, now: 3) == [])
    }

    @Test(arguments: Splice.Side.allCases)
    func anyFailureClosesBothSidesAtOnce(side: Splice.Side) {
        var a = started()
        #expect(a.readFailed(from: side) == [.close(.failed(side))])
        var b = started()
        _ = b.received(from: side.other, now: 1)
        _ = b.writeQueued(to: side, queuedBytes: 10)
        #expect(b.writeCompleted(to: side, failed: true, queuedBytes: 0, now: 2) == [.close(.failed(side))])
        var c = started()
        #expect(c.writeFailed(to: side) == [.close(.failed(side))])
        var d = started()
        _ = d.readEnded(from: side.other, now: 1)
        #expect(d.shutdownCompleted(side, failed: true) == [.close(.failed(side))])
        var e = started()
        #expect(e.closedOutside(side) == [.close(.failed(side))])
    }

    @Test func afterTheCloseEveryEventIsIgnored() {
        var m = started()
        _ = m.closedOutside(.client)
        #expect(m.received(from: .client, now: 1) == [])
        #expect(m.writeQueued(to: .client, queuedBytes: 1000) == [])
        #expect(m.writeCompleted(to: .client, failed: false, queuedBytes: 0, now: 1) == [])
        #expect(m.readEnded(from: .upstream, now: 1) == [])
        #expect(m.readFailed(from: .upstream) == [])
        #expect(m.shutdownCompleted(.client, failed: false) == [])
        #expect(m.timerFired(now: 5000) == [])
        #expect(m.closedOutside(.upstream) == [])
        #expect(m.outcome == .failed(.client))
    }

    @Test func theIdleTimerClosesOnlyAfterATimeoutWithoutBytes() {
        var m = started(at: 0)
        _ = m.received(from: .client, now: 600)
        // Fired at the first deadline: bytes moved since, so it waits until 600 + 1000.
        #expect(m.timerFired(now: 1000) == [.armTimer(deadline: 1600)])
        _ = m.received(from: .upstream, now: 1500)
        _ = m.writeQueued(to: .client, queuedBytes: 10)
        // A write completing counts as bytes moving.
        _ = m.writeCompleted(to: .client, failed: false, queuedBytes: 0, now: 2400)
        #expect(m.timerFired(now: 2500) == [.armTimer(deadline: 3400)])
        #expect(m.timerFired(now: 3400) == [.close(.idleTimeout)])
        #expect(m.outcome?.name == "idle-timeout")
    }

    @Test func aStalledWriterIsIdleEvenWhileTheSourceIsPaused() {
        var m = started(at: 0)
        _ = m.received(from: .client, now: 10)
        #expect(m.writeQueued(to: .upstream, queuedBytes: 1000) == [.pauseReading(.client)])
        // The upstream never takes the bytes: nothing moves, so the splice is idle.
        #expect(m.timerFired(now: 1010) == [.close(.idleTimeout)])
    }

    @Test func outcomesHaveStableNames() {
        #expect(Splice.Outcome.finished.name == "finished")
        #expect(Splice.Outcome.failed(.client).name == "client-failed")
        #expect(Splice.Outcome.failed(.upstream).name == "upstream-failed")
    }
}
