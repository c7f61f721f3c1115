import HTTPWire
import Testing

@testable import Runtime

/// Timeouts, lingering close, backpressure, the client leaving, and events that come late.
@Suite struct ConnectionStateMachineTimingTests {
    // MARK: Timeouts

    @Test func aHeadThatDoesNotArriveInTimeGets408() {
        var m = makeMachine()
        _ = m.bytesReceived(now: 100)
        let a = m.timerFired(now: 1000)
        #expect(
            a == [
                .write(
                    Array(problemResponse(WireError(.headTimeout, status: 408, "the request head did not arrive in time")).utf8)),
                .pauseReading,
            ])
        #expect(m.complete(a, now: 1001) == [.resumeWriters] + lingerActions(1001))
    }

    @Test func aStalledBodyGets408OnlyAfterAFullIdlePeriod() {
        var m = makeMachine()
        _ = m.receivedHead(request("POST", framing: .length(10)), body: .buffer(maxBytes: 100), now: 0)
        _ = m.receivedBody(3, now: 0)
        // A byte at 300: the timer at 500 re-arms for 300 + 500.
        #expect(m.bytesReceived(now: 300) == [.consumeInput])
        #expect(m.timerFired(now: 500) == [.armTimer(.bodyIdle, deadline: 800)])
        let a = m.timerFired(now: 800)
        #expect(writes(a) == [problemResponse(WireError(.bodyTimeout, status: 408, "the request body stalled"))])
        #expect(m.phase == .closingAfterFlush)
    }

    @Test func aBodyIsNotIdleWhileTheServerHasStoppedReading() {
        var m = makeMachine()
        _ = m.receivedHead(request("POST", framing: .length(10_000)), body: .stream, now: 0)
        #expect(m.streamFull() == [.pauseReading])
        #expect(m.timerFired(now: 500) == [.armTimer(.bodyIdle, deadline: 1000)], "our pause, not the client's")
        #expect(m.timerFired(now: 1000) == [.armTimer(.bodyIdle, deadline: 1500)])
        #expect(m.streamDrained(now: 1200) == [.resumeReading])
        #expect(m.timerFired(now: 1500) == [.armTimer(.bodyIdle, deadline: 1700)], "idle counts from the resume")
        #expect(writes(m.timerFired(now: 1700)).count == 1, "then 408")
    }

    @Test func theLingerTimerCloses() {
        var m = makeMachine()
        let a = m.parseFailed(WireError(.malformedRequest, status: 400, "x"), now: 0)
        _ = m.complete(a, now: 0)
        #expect(m.timer == .linger)
        #expect(m.timerFired(now: 2000) == [.failWriters, .close])
    }

    @Test func noTimerRunsWhileARequestWaitsForItsResponse() {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        #expect(m.timer == .none)
        #expect(m.timerFired(now: 99_999) == [], "a late fire of a cancelled timer is harmless")
    }

    // MARK: Lingering close

    @Test func lingeringDiscardsInputAndClosesWhenTheClientDoes() {
        var m = makeMachine()
        _ = m.complete(m.parseFailed(WireError(.malformedRequest, status: 400, "x"), now: 0), now: 0)
        #expect(m.phase == .lingering)
        #expect(m.bytesReceived(now: 10) == [], "read and discarded")
        #expect(!m.acceptsRequestBytes)
        #expect(m.peerClosed() == [.failWriters, .close])
    }

    @Test func theLingerWaitsForQueuedWrites() {
        var m = makeMachine()
        _ = m.receivedHead(request(connection: "close"), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        let a = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 0)
        #expect(m.writesInFlight == 1)
        #expect(m.phase == .closingAfterFlush)
        #expect(m.bytesReceived(now: 1) == [], "nothing more is parsed")
        #expect(m.writeCompleted(failed: false, queuedBytes: 0, now: 50) == [.resumeWriters] + lingerActions(50, paused: false))
        _ = a
    }

    @Test func aResponseBeforeTheRequestBodyEndedClosesTheConnection() {
        var m = makeMachine()
        _ = m.receivedHead(request("POST", framing: .length(100)), body: .stream, now: 0)
        let a = m.respond(1, status: 401, headers: HTTPHeaders(), body: [], now: 1)
        #expect(writes(a).joined().contains("Connection: close\r\n"))
        #expect(m.complete(a, now: 2) == [.resumeWriters] + lingerActions(2, paused: false))
        #expect(m.receivedBody(10, now: 3) == [])
    }

    @Test func aFailedShutdownClosesAtOnce() {
        var m = makeMachine()
        _ = m.complete(m.parseFailed(WireError(.malformedRequest, status: 400, "x"), now: 0), now: 0)
        #expect(m.shutdownFailed() == [.failWriters, .close])
    }

    // MARK: Backpressure

    @Test func aFullBodyStreamPausesReadingAndItsDrainResumesIt() {
        var m = makeMachine()
        _ = m.receivedHead(request("POST", framing: .chunked), body: .stream, now: 0)
        #expect(m.streamFull() == [.pauseReading])
        #expect(m.streamFull() == [], "already paused")
        #expect(m.pendingDrained(0, now: 1) == [], "the consumer is still behind")
        #expect(m.streamDrained(now: 2) == [.resumeReading])
        #expect(m.streamDrained(now: 3) == [], "already reading")
    }

    @Test func aDrainedStreamDoesNotResumeWhileTooMuchInputIsHeld() {
        var m = makeMachine()
        _ = m.receivedHead(request("POST", framing: .chunked), body: .stream, now: 0)
        _ = m.inputHeld(100_000)
        #expect(m.streamDrained(now: 1) == [])
        #expect(m.pendingDrained(100, now: 2) == [.resumeReading])
    }

    @Test(arguments: [(0, true), (500, true), (501, false), (1000, false)])
    func writersResumeOnlyBelowHalfTheHighWaterMark(_ c: (queued: Int, resumes: Bool)) {
        var m = makeMachine()
        _ = m.parseFailed(WireError(.malformedRequest, status: 400, "x"), now: 0)
        let a = m.writeCompleted(failed: false, queuedBytes: c.queued, now: 1)
        #expect(a.contains(.resumeWriters) == c.resumes)
    }

    @Test func writabilityFollowsTheHighWaterMark() {
        var m = makeMachine()
        #expect(m.isWritable(queuedBytes: 1000))
        #expect(!m.isWritable(queuedBytes: 1001))
        #expect(m.runsWritableHandlerNow(queuedBytes: 0))
        _ = m.parseFailed(WireError(.malformedRequest, status: 400, "x"), now: 0)
        #expect(!m.runsWritableHandlerNow(queuedBytes: 0), "a write is in flight")
        _ = m.abort()
        #expect(m.isWritable(queuedBytes: 5000), "a closed connection never makes a writer wait")
    }

    // MARK: Budget

    @Test func bufferedBytesAreReservedAndGivenBackWhenTheExchangeEnds() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(30)), body: .buffer(maxBytes: 100), now: 0)
        #expect(m.receivedBody(10, now: 0) == [.bufferBody(reserve: 10)])
        #expect(m.receivedBody(20, now: 0) == [.bufferBody(reserve: 20)])
        _ = m.receivedEnd(now: 0)
        let a = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 0)
        #expect(a.contains(.releaseBudget(30)))
    }

    @Test func aRefusedReservationGets503AndGivesBackWhatWasHeldAtTheClose() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(30)), body: .buffer(maxBytes: 100), now: 0)
        _ = m.receivedBody(10, now: 0)
        _ = m.receivedBody(20, now: 0)
        let a = m.budgetRefused(20, now: 0)
        #expect(
            writes(a) == [
                problemResponse(
                    WireError(.overloaded, status: 503, "the server holds too many request bodies in memory; retry later"))
            ])
        _ = m.complete(a, now: 1)
        #expect(m.receivedEnd(now: 2) == [], "the refused body is never delivered")
        #expect(m.timerFired(now: 2001) == [.releaseBudget(10), .failWriters, .close])
    }

    // MARK: The client leaves

    @Test func aClientLeavingMidRequestFailsTheStreamAndRunsTheGoneHandlers() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(100)), body: .stream, now: 0)
        _ = m.receivedBody(10, now: 1)
        #expect(m.keepsGoneHandler(for: 1))
        #expect(m.peerClosed() == [.failBodyStream(.clientDisconnected), .notifyGone, .failWriters, .close])
        #expect(!m.keepsGoneHandler(for: 1), "a handler added later runs at once")
    }

    @Test func aClientLeavingMidBufferedRequestGivesTheBudgetBack() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(100)), body: .buffer(maxBytes: 100), now: 0)
        _ = m.receivedBody(40, now: 1)
        #expect(m.peerClosed() == [.releaseBudget(40), .notifyGone, .failWriters, .close])
    }

    @Test func aClientLeavingMidResponseRunsTheGoneHandlers() {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        var body: [UInt8] = Array("abc".utf8)
        _ = body.withUnsafeBytes { m.writeBody(1, $0) }
        #expect(m.peerClosed() == [.notifyGone, .failWriters, .close])
        body = []
    }

    @Test func aClientLeavingAfterTheResponseRunsNoGoneHandler() {
        var m = makeMachine()
        _ = m.receivedHead(request(connection: "close"), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        _ = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 0)
        #expect(m.peerClosed() == [.failWriters, .close])
    }

    @Test func aFailedWriteClosesAtOnce() {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        _ = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 0)
        #expect(m.writeCompleted(failed: true, queuedBytes: 0, now: 1) == [.failWriters, .close])
    }

    // MARK: Late and repeated events

    @Test func everyEventAfterTheCloseIsHarmless() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(10)), body: .buffer(maxBytes: 100), now: 0)
        _ = m.receivedBody(4, now: 0)
        #expect(m.abort() == [.releaseBudget(4), .notifyGone, .failWriters, .close])
        var after: [Action] = []
        after += m.abort()
        after += m.peerClosed()
        after += m.timerFired(now: 10_000)
        after += m.writeCompleted(failed: false, queuedBytes: 0, now: 1)
        after += m.writeCompleted(failed: true, queuedBytes: 0, now: 1)
        after += m.bytesReceived(now: 2)
        after += m.receivedBody(3, now: 2)
        after += m.receivedEnd(now: 2)
        after += m.parseFailed(WireError(.malformedRequest, status: 400, "x"), now: 2)
        after += m.budgetRefused(4, now: 2)
        after += m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 2)
        after += m.writeHead(1, status: 200, headers: HTTPHeaders())
        after += m.end(1, now: 2)
        after += m.flushHeldHead()
        after += m.shutdownFailed()
        after += m.start(admitted: true, now: 3)
        #expect(after == [])
        #expect(m.streamFull() == [] && m.streamDrained(now: 4) == [] && m.pendingDrained(0, now: 4) == [])
        #expect(!m.isCurrent(1) && !m.isStreaming(1))
    }

    @Test func aSecondResponseToTheSameRequestIsIgnored() {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        #expect(m.respond(1, status: 500, headers: HTTPHeaders(), body: [], now: 0) == [])
        #expect(m.writeHead(1, status: 500, headers: HTTPHeaders()) == [])
        _ = m.end(1, now: 0)
        #expect(m.end(1, now: 0) == [])
    }
}
