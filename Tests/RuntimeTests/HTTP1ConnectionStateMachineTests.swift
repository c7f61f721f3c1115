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
    static let pipe = UV_EPIPE.rawValue

    typealias State = HTTP1ConnectionStateMachineEventTests.State
    typealias Action = UpstreamMachine.Action

    /// A fresh machine driven to `state` (``HTTP1ConnectionStateMachineEventTests/reach(_:timeouts:)``).
    static func reach(_ state: State, timeouts: UpstreamMachine.Timeouts = timeouts) -> UpstreamMachine {
        HTTP1ConnectionStateMachineEventTests.reach(state, timeouts: timeouts)
    }

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
        // The body is left where it is: a write that completes later pumps nothing more.
        #expect(m.writeCompleted(status: 0, parserStarted: true, replayable: false, now: 30) == [])
        #expect(m.bodyFailed() == [])
    }

    /// A reused connection gets no exception: the upstream that answered early may never
    /// read the rest of the body on it either.
    @Test func aResponseEndingWhileTheBodyIsStillGoingOutClosesAReusedConnectionToo() {
        var m = Self.reach(.reusedStreamingBody)
        #expect(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 20) == [.pumpBody])
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: false)])
        #expect(m.phase == .closed)
        #expect(m.writeCompleted(status: 0, parserStarted: true, replayable: false, now: 30) == [])
    }

    /// An answer read to the close while the body streams ends the exchange, and the
    /// connection with it.
    @Test func aResponseReadToTheCloseWhileTheBodyIsStillGoingOutEndsTheExchange() {
        var m = Self.reach(.streamingBody)
        #expect(m.bytesRead(now: 20) == [.parseInput])
        #expect(m.inputEnded(code: Self.eof, writing: false, parserStarted: true, replayable: false) == [.finishInput])
        #expect(m.inputFinished(ended: true) == [.endExchange(reuse: false)])
        #expect(m.phase == .closed)
    }

    /// The contrast: once the body's end is handed over, the same answer keeps the connection.
    @Test func aResponseEndingAfterTheBodyIsAllOutKeepsTheConnection() {
        var m = Self.reach(.streamingBody)
        #expect(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 20) == [.pumpBody])
        m.requestWritten()
        #expect(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 30) == [], "no body left to pump")
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: true)])
        #expect(m.phase == .idle)
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
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: true), .startReading])
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

    // MARK: The peer closes at each step

    /// Where a new connection's exchange is when the peer closes.
    enum Step: CaseIterable, Sendable {
        case connecting, requestHeadSent, bodyStreaming, requestSent, responseHeadRead, responseBodyStreaming
        case responseBodyPaused, idle
    }

    /// The peer closes (a read ends, or the connect is reset) at each step: the exchange
    /// ends once, as the documented rules say, and nothing starts after.
    @Test(arguments: Step.allCases)
    func thePeerClosingAtEachStepEndsTheExchangeOnce(_ step: Step) {
        let eof = Self.eof
        var m: UpstreamMachine
        var actions: [[Action]] = []
        let expected: [[Action]]
        switch step {
        case .connecting:
            m = Self.reach(.connecting)
            actions.append(Array(m.connected(status: Self.reset, exchangeLive: true)))
            expected = [[.fail(.connectFailed(Self.reset))]]
        case .requestHeadSent:
            // Nothing of an answer on a new connection: the parser judges the end (cut).
            m = Self.reach(.streamingBody)
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: false, replayable: false)))
            actions.append(Array(m.inputFinished(ended: false)))
            expected = [[.finishInput], [.fail(.closedEarly)]]
        case .bodyStreaming:
            m = Self.reach(.streamingBody)
            actions.append(Array(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 20)))
            m.bodyProgressed(now: 20)
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: false, replayable: false)))
            actions.append(Array(m.inputFinished(ended: false)))
            expected = [[.pumpBody], [.finishInput], [.fail(.closedEarly)]]
        case .requestSent:
            m = Self.reach(.awaitingAnswer)
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: false, replayable: true)))
            actions.append(Array(m.inputFinished(ended: false)))
            expected = [[.finishInput], [.fail(.closedEarly)]]
        case .responseHeadRead:
            m = Self.reach(.awaitingAnswer)
            actions.append(Array(m.bytesRead(now: 20)))
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: true, replayable: true)))
            actions.append(Array(m.inputFinished(ended: false)))
            expected = [[.parseInput], [.finishInput], [.fail(.closedEarly)]]
        case .responseBodyStreaming:
            m = Self.reach(.awaitingAnswer)
            actions.append(Array(m.bytesRead(now: 20)))
            actions.append(Array(m.bytesRead(now: 30)))
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: true, replayable: true)))
            actions.append(Array(m.inputFinished(ended: false)))
            expected = [[.parseInput], [.parseInput], [.finishInput], [.fail(.closedEarly)]]
        case .responseBodyPaused:
            // Kept until what was read is delivered, then judged.
            m = Self.reach(.pausedHoldingInput)
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: true, replayable: false)))
            actions.append(Array(m.resumed(now: 40)))
            m.heldChunkTaken()
            actions.append(Array(m.heldInputParsed(parserStarted: true, replayable: false)))
            actions.append(Array(m.inputFinished(ended: false)))
            expected = [[], [.deliverHeld], [.finishInput], [.fail(.closedEarly)]]
        case .idle:
            // The shell hands a read's end on an idle connection to `bytesRead`: it leaves the pool.
            m = Self.reach(.idle)
            actions.append(Array(m.inputEnded(code: eof, writing: false, parserStarted: false, replayable: false)))
            actions.append(Array(m.bytesRead(now: 40)))
            expected = [[], [.close]]
        }
        #expect(actions == expected)
        #expect(m.phase == .closed)
        // Nothing starts after: a late write completion, read, resume or timer.
        #expect(m.writeCompleted(status: 0, parserStarted: true, replayable: false, now: 50) == [])
        #expect(m.bytesRead(now: 50) == [])
        #expect(m.resumed(now: 50) == [])
        #expect(m.timerFired(now: 9000) == [])
    }

    /// The write side of a close while the body streams: the exchange fails (a write
    /// failure is never an answer's end), and a write cancelled by the closing is ignored.
    @Test func aWriteThatFailsWhileTheBodyStreamsFailsTheExchange() {
        var m = Self.reach(.streamingBody)
        #expect(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 20) == [.pumpBody])
        #expect(
            m.writeCompleted(status: Self.pipe, parserStarted: false, replayable: false, now: 30)
                == [.fail(.connectionFailed(Self.pipe))])
        #expect(m.phase == .closed)
        #expect(m.writeCompleted(status: UV_ECANCELED.rawValue, parserStarted: false, replayable: false, now: 40) == [])
        var reused = Self.reach(.reusedStreamingBody)
        #expect(
            reused.writeCompleted(status: Self.pipe, parserStarted: false, replayable: false, now: 30)
                == [.fail(.connectionFailed(Self.pipe))], "a streamed body is not in memory: not sent again")
    }

    // MARK: The end of the input after the request head

    /// The peer closes right after the request head went out (nothing of an answer read, or
    /// the answer's head read), on a new or a reused connection, with a request that can be
    /// sent again or not.
    struct HeadCase: Sendable, CustomTestStringConvertible {
        let name: String
        let start: State
        let parserStarted: Bool
        let replayable: Bool
        let expected: [Action]
        var testDescription: String { name }
    }

    static let headCases: [HeadCase] = [
        // A new connection's close is the answer's end: the parser judges it.
        HeadCase(
            name: "new, body in memory", start: .requestPending, parserStarted: false, replayable: true,
            expected: [.finishInput]),
        HeadCase(
            name: "new, body streamed", start: .streamingBody, parserStarted: false, replayable: false,
            expected: [.finishInput]),
        HeadCase(
            name: "new, request sent", start: .awaitingAnswer, parserStarted: false, replayable: true,
            expected: [.finishInput]),
        // A kept-alive connection the peer closed just before the request: sent again once.
        HeadCase(
            name: "reused, body in memory", start: .reusedRequestPending, parserStarted: false, replayable: true,
            expected: [.retry]),
        HeadCase(
            name: "reused, request sent", start: .reusedAwaitingAnswer, parserStarted: false, replayable: true,
            expected: [.retry]),
        // Not when the body is a stream, nor a second time.
        HeadCase(
            name: "reused, body streamed", start: .reusedStreamingBody, parserStarted: false, replayable: false,
            expected: [.finishInput]),
        HeadCase(
            name: "reused, sent again already", start: .reusedAwaitingAnswer, parserStarted: false, replayable: false,
            expected: [.finishInput]),
        // Nor once an answer began: the close is that answer's end.
        HeadCase(
            name: "new, answer's head read", start: .awaitingAnswer, parserStarted: true, replayable: true,
            expected: [.finishInput]),
        HeadCase(
            name: "reused, answer's head read", start: .reusedAwaitingAnswer, parserStarted: true, replayable: true,
            expected: [.finishInput]),
    ]

    @Test(arguments: headCases)
    func theEndOfTheInputAfterTheHeadIsSentAgainOnlyOnAReusedConnection(_ c: HeadCase) {
        var m = Self.reach(c.start)
        let actions = m.inputEnded(code: Self.eof, writing: false, parserStarted: c.parserStarted, replayable: c.replayable)
        #expect(actions == c.expected)
        #expect(m.phase == (c.expected == [.retry] ? .closed : .busy))
        guard c.expected == [.finishInput] else { return }
        #expect(m.inputFinished(ended: false) == [.fail(.closedEarly)], "nothing complete was read")
    }

    // MARK: The total deadline

    /// With a byte just moved (so the idle deadline is far), the total deadline ends a busy
    /// exchange, paused or not; the connect timer and the pool's idle timer are not it.
    @Test(arguments: State.allCases)
    func theTotalDeadlineEndsTheExchangeInEveryBusyState(_ state: State) {
        var m = Self.reach(state)
        m.bodyProgressed(now: 4900)
        switch state.facts.phase {
        case .busy:
            #expect(m.timerFired(now: 5009) == [.armTimer(deadline: 5010)], "the total deadline is the nearer one")
            #expect(m.timerFired(now: 5010) == [.fail(.answerTimedOut)])
            #expect(m.phase == .closed)
        case .connecting:
            // The total deadline starts with the exchange; only the connect timer is armed.
            #expect(m.timerFired(now: 5010) == [.fail(.connectTimedOut)])
        case .idle:
            #expect(m.timerFired(now: 5010) == [.close])
        case .closed:
            #expect(m.timerFired(now: 5010) == [])
        }
    }

    /// Each exchange on a reused connection gets its own total deadline, from its start.
    @Test func eachExchangeHasItsOwnTotalDeadline() {
        var m = Self.reach(.idle)
        #expect(m.exchangeStarted(streamsBody: false, now: 6000) == [.armTimer(deadline: 7000)])
        m.requestWritten()
        _ = m.bytesRead(now: 10900)
        #expect(m.timerFired(now: 10999) == [.armTimer(deadline: 11000)])
        #expect(m.timerFired(now: 11000) == [.fail(.answerTimedOut)])
    }

    /// Without a total timeout only idleness ends an exchange, and a paused one waits for
    /// its client as long as it takes.
    @Test func withoutATotalTimeoutOnlyIdlenessEndsTheExchange() {
        let unbounded = UpstreamMachine.Timeouts(connect: 100, idle: 1000, total: nil)
        var m = Self.reach(.awaitingAnswer, timeouts: unbounded)
        _ = m.bytesRead(now: 99000)
        #expect(m.timerFired(now: 99500) == [.armTimer(deadline: 100_000)])
        #expect(m.timerFired(now: 100_000) == [.fail(.answerTimedOut)])
        var paused = Self.reach(.paused, timeouts: unbounded)
        #expect(paused.timerFired(now: 1_000_000) == [.armTimer(deadline: 1_001_000)])
        #expect(paused.phase == .busy)
    }

    /// Body bytes moving count as activity: a slow upload is not an idle exchange.
    @Test func bodyProgressKeepsTheExchangeFromIdling() {
        var m = Self.reach(.streamingBody)
        m.bodyProgressed(now: 900)
        #expect(m.timerFired(now: 1010) == [.armTimer(deadline: 1900)])
        #expect(m.writeCompleted(status: 0, parserStarted: false, replayable: false, now: 1800) == [.pumpBody])
        #expect(m.timerFired(now: 1900) == [.armTimer(deadline: 2800)])
        #expect(m.timerFired(now: 2800) == [.fail(.answerTimedOut)])
    }

    // MARK: Resuming after a refusal

    /// A chunk refused again on redelivery sends the machine nothing: the next resume
    /// delivers it again; once taken, reading starts once and the answer's end reuses the
    /// connection without starting it twice.
    @Test func aChunkRefusedAgainOnRedeliveryIsDeliveredOnTheNextResume() {
        var m = Self.reach(.paused)
        #expect(m.resumed(now: 50) == [.deliverHeld])
        #expect(m.resumed(now: 60) == [.deliverHeld])
        m.heldChunkTaken()
        #expect(m.heldInputParsed(parserStarted: true, replayable: false) == [.startReading])
        #expect(m.resumed(now: 70) == [], "nothing is refused any more")
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: true)], "reading started already")
    }

    /// Refused again while the held bytes are parsed: reading stays stopped (no second
    /// stop), nothing reads on until the next resume, and the clock still waits on the client.
    @Test func aRefusalWhileTheHeldBytesAreParsedPausesAgain() {
        var m = Self.reach(.pausedHoldingInput)
        #expect(m.resumed(now: 50) == [.deliverHeld])
        m.heldChunkTaken()
        #expect(m.deliveryRefused(holdsInput: true) == [])
        #expect(m.heldInputParsed(parserStarted: true, replayable: false) == [])
        #expect(m.timerFired(now: 3000) == [.armTimer(deadline: 4000)])
        #expect(m.resumed(now: 3500) == [.deliverHeld])
        m.heldChunkTaken()
        #expect(m.heldInputParsed(parserStarted: true, replayable: false) == [.startReading])
        #expect(m.timerFired(now: 4000) == [.armTimer(deadline: 4500)], "the resume was activity")
    }

    /// A write that failed while delivery paused is kept, like a read's end, and fails the
    /// exchange once the held bytes are delivered.
    @Test func aWriteThatFailedWhileDeliveryPausedFailsTheExchangeAfterTheHeldBytes() {
        var m = Self.reach(.pausedWhileStreaming)
        #expect(m.writeCompleted(status: Self.pipe, parserStarted: true, replayable: false, now: 40) == [])
        #expect(m.phase == .busy)
        #expect(m.resumed(now: 50) == [.deliverHeld])
        m.heldChunkTaken()
        #expect(m.heldInputParsed(parserStarted: true, replayable: false) == [.fail(.connectionFailed(Self.pipe))])
    }

    /// The peer's close kept while paused on a reused connection is the answer's end once
    /// resumed: an answer had begun, so the request is not sent again.
    @Test func aCloseKeptWhilePausedOnAReusedConnectionIsNotSentAgain() {
        var m = Self.reach(.reusedAwaitingAnswer)
        _ = m.bytesRead(now: 20)
        #expect(m.deliveryRefused(holdsInput: true) == [.stopReading])
        #expect(m.inputEnded(code: Self.eof, writing: false, parserStarted: true, replayable: true) == [])
        #expect(m.resumed(now: 50) == [.deliverHeld])
        m.heldChunkTaken()
        #expect(m.heldInputParsed(parserStarted: true, replayable: true) == [.finishInput])
        #expect(m.inputFinished(ended: true) == [.endExchange(reuse: false)])
    }

    /// A resume that comes after the exchange ended, or on an idle connection, does nothing.
    @Test func aResumeAfterTheExchangeEndedDoesNothing() {
        var cancelled = Self.reach(.paused)
        #expect(cancelled.stop() == [.close])
        #expect(cancelled.resumed(now: 50) == [])
        var idle = Self.reach(.idle)
        #expect(idle.resumed(now: 50) == [])
        #expect(idle.phase == .idle)
    }

    /// Once closed, no I/O starts: an exchange started on a closed connection (or a second
    /// one on a busy connection) changes nothing. The pool never does either, so only this
    /// test reaches it; it used to turn a closed machine busy and arm its timer.
    @Test func aClosedOrBusyConnectionStartsNoExchange() {
        var closed = Self.reach(.closedAfterAnExchange)
        #expect(closed.exchangeStarted(streamsBody: false, now: 10) == [])
        #expect(closed.phase == .closed)
        var busy = Self.machine(.busy)
        #expect(busy.exchangeStarted(streamsBody: true, now: 10) == [])
        #expect(busy.phase == .busy)
    }

    /// A response that ends kept alive after a paused delivery leaves an idle connection
    /// that is not paused, and reads again only once the exchange has ended: a connection
    /// that then cannot read fails the next exchange, never the one whose answer was whole.
    @Test func aReusedConnectionEndsItsExchangeBeforeItReadsAgain() {
        var m = Self.machine(.busy)
        _ = m.deliveryRefused(holdsInput: false)
        #expect(m.responseEnded(keepAlive: true) == [.endExchange(reuse: true), .startReading])
        #expect(m.phase == .idle)
        #expect(!m.paused)
    }
}
