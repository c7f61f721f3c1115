import CLibUV
import Testing

@testable import Runtime

typealias UpstreamMachine = HTTP1Connection.StateMachine

/// The upstream connection's decisions without a socket: every event in every phase, the
/// reuse rule, the retry-once rule, the timers, and paused delivery.
struct HTTP1ConnectionStateMachineTests {
    /// Timeouts: connect 100, idle 1000, total 5000 (loop milliseconds).
    static let timeouts = UpstreamMachine.Timeouts(connect: 100, idle: 1000, total: 5000)
    static let eof = UV_EOF.rawValue
    static let reset = UV_ECONNRESET.rawValue

    enum Start: CaseIterable { case connecting, busy, idle, closed }

    /// A machine in `start`: busy with a request sent at 10, idle after one exchange, closed
    /// after a failed connect.
    static func machine(_ start: Start) -> UpstreamMachine {
        var m = UpstreamMachine(timeouts: timeouts)
        _ = m.connectStarted(now: 0)
        switch start {
        case .connecting: break
        case .busy:
            _ = m.connected(status: 0, exchangeLive: true)
            _ = m.exchangeStarted(streamsBody: false, now: 10)
            m.requestWritten()
        case .idle:
            _ = m.connected(status: 0, exchangeLive: true)
            _ = m.exchangeStarted(streamsBody: false, now: 10)
            m.requestWritten()
            _ = m.responseEnded(keepAlive: true)
        case .closed:
            _ = m.connectFailed(Self.reset)
        }
        return m
    }

    // MARK: Every event in every phase

    /// One event applied to a fresh machine in each phase: the actions, and the phase after.
    struct Case: Sendable, CustomTestStringConvertible {
        let event: String
        let apply: @Sendable (inout UpstreamMachine) -> UpstreamMachine.Actions
        let expected: [Start: ([UpstreamMachine.Action], UpstreamMachine.Phase)]
        var testDescription: String { event }
    }

    static let cases: [Case] = [
        Case(
            event: "connected", apply: { $0.connected(status: 0, exchangeLive: true) },
            expected: [
                .connecting: ([.startReading, .sendRequest], .connecting), .busy: ([], .busy), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "connected after the exchange was cancelled", apply: { $0.connected(status: 0, exchangeLive: false) },
            expected: [
                .connecting: ([.startReading, .close], .closed), .busy: ([], .busy), .idle: ([], .idle), .closed: ([], .closed),
            ]),
        Case(
            event: "connection refused", apply: { $0.connected(status: UV_ECONNREFUSED.rawValue, exchangeLive: true) },
            expected: [
                .connecting: ([.fail(.connectFailed(UV_ECONNREFUSED.rawValue))], .closed), .busy: ([], .busy),
                .idle: ([], .idle), .closed: ([], .closed),
            ]),
        Case(
            event: "bytes read", apply: { $0.bytesRead(now: 20) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.parseInput], .busy), .idle: ([.close], .closed),
                .closed: ([], .closed),
            ]),
        Case(
            event: "the response ends, kept alive", apply: { $0.responseEnded(keepAlive: true) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.endExchange(reuse: true)], .idle), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "the response ends, not kept alive", apply: { $0.responseEnded(keepAlive: false) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.endExchange(reuse: false)], .closed), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "an invalid answer", apply: { $0.responseInvalid() },
            expected: [
                .connecting: ([], .connecting), .busy: ([.fail(.invalidResponse)], .closed), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "the peer closes before an answer",
            apply: { $0.inputEnded(code: eof, writing: false, parserStarted: false, replayable: true) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.finishInput], .busy), .idle: ([], .idle), .closed: ([], .closed),
            ]),
        Case(
            event: "a reset while reading",
            apply: { $0.inputEnded(code: reset, writing: false, parserStarted: true, replayable: true) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.fail(.connectionFailed(reset))], .closed), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "a write completes", apply: { $0.writeCompleted(status: 0, parserStarted: false, replayable: true, now: 30) },
            expected: [.connecting: ([], .connecting), .busy: ([], .busy), .idle: ([], .idle), .closed: ([], .closed)]),
        Case(
            event: "a write fails",
            apply: { $0.writeCompleted(status: reset, parserStarted: false, replayable: false, now: 30) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.fail(.connectionFailed(reset))], .closed), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "a cancelled write",
            apply: { $0.writeCompleted(status: UV_ECANCELED.rawValue, parserStarted: false, replayable: true, now: 30) },
            expected: [.connecting: ([], .connecting), .busy: ([], .busy), .idle: ([], .idle), .closed: ([], .closed)]),
        Case(
            event: "the body stream fails", apply: { $0.bodyFailed() },
            expected: [
                .connecting: ([], .connecting), .busy: ([.fail(.requestBodyFailed)], .closed), .idle: ([], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "delivery refused", apply: { $0.deliveryRefused(holdsInput: false) },
            expected: [
                .connecting: ([], .connecting), .busy: ([.stopReading], .busy), .idle: ([], .idle), .closed: ([], .closed),
            ]),
        Case(
            event: "resumed without a refusal", apply: { $0.resumed(now: 40) },
            expected: [.connecting: ([], .connecting), .busy: ([], .busy), .idle: ([], .idle), .closed: ([], .closed)]),
        Case(
            event: "switched protocols", apply: { $0.switched() },
            expected: [
                .connecting: ([], .connecting), .busy: ([.handOver], .closed), .idle: ([], .idle), .closed: ([], .closed),
            ]),
        Case(
            event: "reading cannot start", apply: { $0.readingFailed() },
            expected: [
                .connecting: ([.fail(.cannotRead)], .closed), .busy: ([.fail(.cannotRead)], .closed),
                .idle: ([.fail(.cannotRead)], .closed), .closed: ([], .closed),
            ]),
        Case(
            event: "parked in the pool", apply: { $0.parked(now: 50) },
            expected: [
                .connecting: ([], .connecting), .busy: ([], .busy), .idle: ([.armTimer(deadline: 1050)], .idle),
                .closed: ([], .closed),
            ]),
        Case(
            event: "the timer fires early", apply: { $0.timerFired(now: 60) },
            expected: [
                .connecting: ([.fail(.connectTimedOut)], .closed), .busy: ([.armTimer(deadline: 1010)], .busy),
                .idle: ([.close], .closed), .closed: ([], .closed),
            ]),
        Case(
            event: "cancelled", apply: { $0.stop() },
            expected: [
                .connecting: ([.close], .closed), .busy: ([.close], .closed), .idle: ([.close], .closed), .closed: ([], .closed),
            ]),
        Case(
            event: "the client shuts down", apply: { $0.stop(failing: .shutDown) },
            expected: [
                .connecting: ([.fail(.shutDown)], .closed), .busy: ([.fail(.shutDown)], .closed),
                .idle: ([.fail(.shutDown)], .closed), .closed: ([], .closed),
            ]),
    ]

    @Test(arguments: cases)
    func everyEventInEveryPhase(_ c: Case) {
        for start in Start.allCases {
            var m = Self.machine(start)
            let actions = Array(c.apply(&m))
            guard let (expected, phase) = c.expected[start] else {
                Issue.record("\(c.event): no expectation in \(start)")
                continue
            }
            #expect(actions == expected, "\(c.event) in \(start)")
            #expect(m.phase == phase, "\(c.event) in \(start)")
        }
    }

    // MARK: Rules

    @Test func aResponseEndingWhileTheBodyIsStillGoingOutClosesTheConnection() {
        var m = Self.machine(.connecting)
        _ = m.connected(status: 0, exchangeLive: true)
        #expect(m.exchangeStarted(streamsBody: true, now: 10) == [.armTimer(deadline: 1010)])
        #expect(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 20) == [.pumpBody])
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: false)])
        #expect(m.phase == .closed)
    }

    @Test func aReusedConnectionThePeerClosedBeforeAnAnswerSendsTheRequestAgainOnce() {
        var m = Self.machine(.idle)
        _ = m.exchangeStarted(streamsBody: false, now: 100)
        m.requestWritten()
        #expect(m.inputEnded(code: Self.eof, writing: false, parserStarted: false, replayable: true) == [.retry])
        var fresh = Self.machine(.busy)
        #expect(
            fresh.inputEnded(code: Self.eof, writing: false, parserStarted: false, replayable: true) == [.finishInput],
            "a new connection's close is the answer's end, not a reason to send again")
        var sentAgain = Self.machine(.idle)
        _ = sentAgain.exchangeStarted(streamsBody: false, now: 100)
        #expect(
            sentAgain.inputEnded(code: Self.reset, writing: true, parserStarted: false, replayable: false)
                == [.fail(.connectionFailed(Self.reset))], "a request sent again, or streamed, is not sent a third time")
    }

    @Test func theEndOfTheInputCompletesAnAnswerReadToTheCloseOrFailsIt() {
        var m = Self.machine(.busy)
        #expect(m.inputFinished(ended: true) == [.endExchange(reuse: false)])
        var cut = Self.machine(.busy)
        #expect(cut.inputFinished(ended: false) == [.fail(.closedEarly)])
    }

    @Test func theExchangeTimesOutIdleOrInTotalButNotWhileDeliveryWaitsOnTheClient() {
        var idle = Self.machine(.busy)
        #expect(idle.timerFired(now: 1010) == [.fail(.answerTimedOut)])
        var active = Self.machine(.busy)
        _ = active.bytesRead(now: 900)
        #expect(active.timerFired(now: 1010) == [.armTimer(deadline: 1900)], "a byte moved: the idle deadline moved on")
        var paused = Self.machine(.busy)
        _ = paused.deliveryRefused(holdsInput: false)
        #expect(paused.timerFired(now: 4000) == [.armTimer(deadline: 5000)], "waiting on the client is not idleness")
        #expect(paused.timerFired(now: 5010) == [.fail(.answerTimedOut)], "the total deadline holds")
        var connecting = Self.machine(.connecting)
        #expect(connecting.connectStarted(now: 0) == [.armTimer(deadline: 100)])
    }

    @Test func aPausedDeliveryKeepsTheEndOfTheInputUntilTheHeldBytesAreDelivered() {
        var m = Self.machine(.busy)
        #expect(m.deliveryRefused(holdsInput: true) == [.stopReading])
        #expect(m.inputEnded(code: Self.eof, writing: false, parserStarted: true, replayable: false) == [])
        #expect(m.resumed(now: 50) == [.deliverHeld])
        m.heldChunkTaken()
        #expect(m.heldInputParsed(parserStarted: true, replayable: false) == [.finishInput])
        var reading = Self.machine(.busy)
        _ = reading.deliveryRefused(holdsInput: false)
        _ = reading.resumed(now: 50)
        reading.heldChunkTaken()
        #expect(reading.heldInputParsed(parserStarted: true, replayable: false) == [.startReading])
    }

    /// The defect this machine fixed: a response whose end was held while delivery paused
    /// put the connection back in the pool with reading stopped, so the next exchange on it
    /// was never answered.
    @Test func aConnectionReusedAfterAPausedDeliveryReadsAgain() {
        var m = Self.machine(.busy)
        _ = m.deliveryRefused(holdsInput: true)
        _ = m.resumed(now: 50)
        m.heldChunkTaken()
        #expect(m.responseEnded(keepAlive: true) == [.startReading, .endExchange(reuse: true)])
        #expect(m.phase == .idle)
    }

    @Test func aPeerThatClosedWhileDeliveryPausedIsNotReused() {
        var m = Self.machine(.busy)
        _ = m.deliveryRefused(holdsInput: true)
        _ = m.inputEnded(code: Self.eof, writing: false, parserStarted: true, replayable: false)
        _ = m.resumed(now: 50)
        m.heldChunkTaken()
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: false)])
    }

    @Test func heldInputAfterTheAnswerKeepsTheConnectionOutOfThePool() {
        var m = Self.machine(.busy)
        _ = m.deliveryRefused(holdsInput: true)
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: false)])
    }
}
