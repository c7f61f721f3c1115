import CLibUV
import Testing

@testable import Runtime

/// Every event of the upstream connection's machine applied to every state it can be in,
/// each outcome written from the machine's documented rules: the actions, and what the
/// machine remembers after (its phase and the flags the rules read). The states are reached
/// from a fresh machine through the events the shell sends, so each one is a state a real
/// connection passes through.
struct HTTP1ConnectionStateMachineEventTests {
    /// Timeouts: connect 100, idle 1000, total 5000 (loop milliseconds).
    static let timeouts = UpstreamMachine.Timeouts(connect: 100, idle: 1000, total: 5000)
    static let eof = UV_EOF.rawValue
    static let reset = UV_ECONNRESET.rawValue
    static let pipe = UV_EPIPE.rawValue
    static let refused = UV_ECONNREFUSED.rawValue

    // MARK: The states

    /// Every distinct state: the phase and the flags the machine's rules read. Every busy
    /// state's exchange started at 10 and nothing moved since, so that its idle deadline is
    /// 1010 and its total deadline 5010.
    enum State: CaseIterable, Sendable {
        /// Resolving or connecting (also after the connect completed and before the exchange
        /// starts: `connected` changes nothing the machine remembers).
        case connecting
        /// A new connection's exchange started; the request is not yet all handed over.
        case requestPending
        /// The same on a connection that served an exchange before.
        case reusedRequestPending
        /// A new connection's request is all sent; the answer is awaited or being read.
        case awaitingAnswer
        /// The same on a reused connection.
        case reusedAwaitingAnswer
        /// A new connection's request head is sent and its body still streams.
        case streamingBody
        /// The same on a reused connection.
        case reusedStreamingBody
        /// The handler refused a body chunk; nothing was read after it.
        case paused
        /// The handler refused a body chunk; bytes read after it are held.
        case pausedHoldingInput
        /// As ``pausedHoldingInput``, and the peer closed meanwhile.
        case pausedAfterThePeerClosed
        /// The handler refused a body chunk while the request body still streams.
        case pausedWhileStreaming
        /// The refused chunk was taken again; the held bytes are being parsed, reading is
        /// still stopped.
        case draining
        /// As ``draining``, with the peer's close kept for after.
        case drainingAfterThePeerClosed
        /// Back in the pool after one exchange.
        case idle
        /// Closed by a failed connect.
        case closed
        /// Closed after serving an exchange.
        case closedAfterAnExchange

        /// What the machine remembers in this state, written out (not read from a machine).
        var facts: Facts {
            let eof = HTTP1ConnectionStateMachineEventTests.eof
            switch self {
            case .connecting: return Facts(phase: .connecting)
            case .requestPending: return Facts(phase: .busy)
            case .reusedRequestPending: return Facts(phase: .busy, reused: true)
            case .awaitingAnswer: return Facts(phase: .busy, requestSent: true)
            case .reusedAwaitingAnswer: return Facts(phase: .busy, reused: true, requestSent: true)
            case .streamingBody: return Facts(phase: .busy, sendingBody: true)
            case .reusedStreamingBody: return Facts(phase: .busy, reused: true, sendingBody: true)
            case .paused: return Facts(phase: .busy, requestSent: true, paused: true, readingStopped: true)
            case .pausedHoldingInput:
                return Facts(phase: .busy, requestSent: true, paused: true, holdsInput: true, readingStopped: true)
            case .pausedAfterThePeerClosed:
                return Facts(
                    phase: .busy, requestSent: true, paused: true, holdsInput: true, readingStopped: true, endOfInput: eof)
            case .pausedWhileStreaming:
                return Facts(phase: .busy, sendingBody: true, paused: true, readingStopped: true)
            case .draining: return Facts(phase: .busy, requestSent: true, readingStopped: true)
            case .drainingAfterThePeerClosed:
                return Facts(phase: .busy, requestSent: true, readingStopped: true, endOfInput: eof)
            case .idle: return Facts(phase: .idle, reused: true, requestSent: true)
            case .closed: return Facts(phase: .closed)
            case .closedAfterAnExchange: return Facts(phase: .closed, reused: true, requestSent: true)
            }
        }
    }

    /// What the machine remembers that its rules read (times are checked through the
    /// timers they arm).
    struct Facts: Equatable, Sendable {
        var phase: UpstreamMachine.Phase
        var reused = false
        var requestSent = false
        var sendingBody = false
        var paused = false
        var holdsInput = false
        var readingStopped = false
        var endOfInput: Int32?

        init(
            phase: UpstreamMachine.Phase, reused: Bool = false, requestSent: Bool = false, sendingBody: Bool = false,
            paused: Bool = false, holdsInput: Bool = false, readingStopped: Bool = false, endOfInput: Int32? = nil
        ) {
            self.phase = phase
            self.reused = reused
            self.requestSent = requestSent
            self.sendingBody = sendingBody
            self.paused = paused
            self.holdsInput = holdsInput
            self.readingStopped = readingStopped
            self.endOfInput = endOfInput
        }

        init(_ m: UpstreamMachine) {
            self.init(
                phase: m.phase, reused: m.reused, requestSent: m.requestSent, sendingBody: m.sendingBody, paused: m.paused,
                holdsInput: m.holdsInput, readingStopped: m.readingStopped, endOfInput: m.endOfInput)
        }
    }

    /// A fresh machine driven to `state` by the events the shell sends on the way, every
    /// one at 10 (after a connect started at 0).
    static func reach(_ state: State, timeouts: UpstreamMachine.Timeouts = timeouts) -> UpstreamMachine {
        var m = UpstreamMachine(timeouts: timeouts)
        _ = m.connectStarted(now: 0)
        /// Connected, then an exchange with the request in memory started and was written.
        func sent(_ m: inout UpstreamMachine) {
            _ = m.connected(status: 0, exchangeLive: true)
            _ = m.exchangeStarted(streamsBody: false, now: 10)
            m.requestWritten()
        }
        /// A first exchange served and the connection parked.
        func served(_ m: inout UpstreamMachine) {
            sent(&m)
            _ = m.bytesRead(now: 10)
            _ = m.responseEnded(keepAlive: true)
            _ = m.parked(now: 10)
        }
        switch state {
        case .connecting:
            break
        case .requestPending:
            _ = m.connected(status: 0, exchangeLive: true)
            _ = m.exchangeStarted(streamsBody: false, now: 10)
        case .reusedRequestPending:
            served(&m)
            _ = m.exchangeStarted(streamsBody: false, now: 10)
        case .awaitingAnswer:
            sent(&m)
        case .reusedAwaitingAnswer:
            served(&m)
            _ = m.exchangeStarted(streamsBody: false, now: 10)
            m.requestWritten()
        case .streamingBody:
            _ = m.connected(status: 0, exchangeLive: true)
            _ = m.exchangeStarted(streamsBody: true, now: 10)
        case .reusedStreamingBody:
            served(&m)
            _ = m.exchangeStarted(streamsBody: true, now: 10)
        case .paused, .pausedHoldingInput, .pausedAfterThePeerClosed:
            sent(&m)
            _ = m.bytesRead(now: 10)
            _ = m.deliveryRefused(holdsInput: state != .paused)
            if state == .pausedAfterThePeerClosed {
                _ = m.inputEnded(code: eof, writing: false, parserStarted: true, replayable: false)
            }
        case .pausedWhileStreaming:
            _ = m.connected(status: 0, exchangeLive: true)
            _ = m.exchangeStarted(streamsBody: true, now: 10)
            _ = m.bytesRead(now: 10)
            _ = m.deliveryRefused(holdsInput: false)
        case .draining, .drainingAfterThePeerClosed:
            m = reach(state == .draining ? .pausedHoldingInput : .pausedAfterThePeerClosed, timeouts: timeouts)
            _ = m.resumed(now: 10)
            m.heldChunkTaken()
        case .idle:
            served(&m)
        case .closed:
            _ = m.connectFailed(reset)
        case .closedAfterAnExchange:
            served(&m)
            _ = m.stop()
        }
        return m
    }

    @Test(arguments: State.allCases)
    func everyStateIsReachedFromAFreshMachine(_ state: State) {
        #expect(Facts(Self.reach(state)) == state.facts)
    }

    // MARK: The outcomes

    typealias Action = UpstreamMachine.Action

    /// What one event does in one state.
    enum Outcome: Sendable {
        /// These actions; the machine remembers what it did before (a refused or ignored
        /// event, or a fact it already knew).
        case stays([Action])
        /// These actions, then the state's facts.
        case becomes(State, [Action])
        /// These actions, then the facts before with `change` made (a state with no name).
        case changes([Action], @Sendable (inout Facts) -> Void)
        /// These actions, and the machine is closed: nothing it remembers acts any more.
        case closes([Action])
        /// These actions, then `phase`; the flags are not checked (the event says why).
        case ends(in: UpstreamMachine.Phase, [Action])
        /// The shell never sends the event in this state (the reason), and the machine
        /// documents no answer for it: not applied.
        case notSent(String)
    }

    /// One event, with its outcome in every state. Rows name states in groups; every state
    /// is in exactly one row (``everyEventHasOneOutcomeInEveryState(_:)``).
    struct Event: Sendable, CustomTestStringConvertible {
        let name: String
        let apply: @Sendable (inout UpstreamMachine) -> UpstreamMachine.Actions
        let rows: [([State], Outcome)]
        var testDescription: String { name }

        init(
            _ name: String, _ apply: @escaping @Sendable (inout UpstreamMachine) -> UpstreamMachine.Actions,
            _ rows: [([State], Outcome)]
        ) {
            self.name = name
            self.apply = apply
            self.rows = rows
        }

        /// An event that returns no actions (it records a fact).
        init(_ name: String, recording: @escaping @Sendable (inout UpstreamMachine) -> Void, _ rows: [([State], Outcome)]) {
            self.init(
                name,
                { m in
                    recording(&m)
                    return UpstreamMachine.Actions()
                }, rows)
        }

        func outcome(in state: State) -> Outcome? {
            rows.first { $0.0.contains(state) }?.1
        }
    }

    // State groups, each named once here so that a row reads as a rule.

    static let pausedStates: [State] = [.paused, .pausedHoldingInput, .pausedAfterThePeerClosed, .pausedWhileStreaming]
    static let drainingStates: [State] = [.draining, .drainingAfterThePeerClosed]
    /// Busy and delivering: every busy state but the paused ones.
    static let runningStates: [State] =
        [
            .requestPending, .reusedRequestPending, .awaitingAnswer, .reusedAwaitingAnswer, .streamingBody,
            .reusedStreamingBody,
        ] + drainingStates
    static let busyStates: [State] = runningStates + pausedStates
    static let closedStates: [State] = [.closed, .closedAfterAnExchange]
    /// Every state that is not busy.
    static let notBusy: [State] = [.connecting, .idle] + closedStates
    /// Every state that is not closed.
    static let openStates: [State] = [.connecting, .idle] + busyStates
    /// Busy and reading (reading is stopped from a refusal until the held bytes are parsed).
    static let readingStates: [State] = [
        .requestPending, .reusedRequestPending, .awaitingAnswer, .reusedAwaitingAnswer, .streamingBody,
        .reusedStreamingBody,
    ]
    /// Busy with a reused connection and no byte of an answer yet.
    static let reusedBeforeAnAnswer: [State] = [.reusedRequestPending, .reusedAwaitingAnswer, .reusedStreamingBody]

    /// Why an event of the parser or of a read is never sent while reading is stopped.
    static let readingIsStopped = "reading is stopped (in the refused read itself); libuv calls no read callback after"
    /// Why a second refusal is never sent while one is held: the parser stops at a refused
    /// chunk and runs again only after heldChunkTaken, and a chunk refused again on
    /// redelivery sends nothing.
    static let oneRefusalAtATime = "the parser stops at a refused chunk until it is taken"

    static let events: [Event] = [
        // Connecting.
        Event(
            "connecting starts", { $0.connectStarted(now: 0) },
            [
                ([.connecting], .stays([.armTimer(deadline: 100)])),
                (
                    busyStates + [.idle] + closedStates,
                    .notSent("the shell sends it once, first, on a new connection; the machine does not read the phase")
                ),
            ]),
        Event(
            "resolving fails", { $0.connectFailed(reset) },
            [
                ([.connecting], .closes([.fail(.connectFailed(reset))])),
                (busyStates + [.idle] + closedStates, .stays([])),
            ]),
        Event(
            "connected", { $0.connected(status: 0, exchangeLive: true) },
            [
                // The phase moves on when the exchange starts (`sendRequest` runs it).
                ([.connecting], .stays([.startReading, .sendRequest])),
                (busyStates + [.idle] + closedStates, .stays([])),
            ]),
        Event(
            "connected after the exchange was cancelled", { $0.connected(status: 0, exchangeLive: false) },
            [
                ([.connecting], .closes([.startReading, .close])),
                (busyStates + [.idle] + closedStates, .stays([])),
            ]),
        Event(
            "the connection is refused", { $0.connected(status: refused, exchangeLive: true) },
            [
                ([.connecting], .closes([.fail(.connectFailed(refused))])),
                (busyStates + [.idle] + closedStates, .stays([])),
            ]),

        // An exchange.
        Event(
            "an exchange with the body in memory starts", { $0.exchangeStarted(streamsBody: false, now: 10) },
            [
                ([.connecting], .becomes(.requestPending, [.armTimer(deadline: 1010)])),
                ([.idle], .becomes(.reusedRequestPending, [.armTimer(deadline: 1010)])),
                // Once closed no I/O starts, and a busy connection runs one exchange at a time.
                (busyStates + closedStates, .stays([])),
            ]),
        Event(
            "an exchange with a streamed body starts", { $0.exchangeStarted(streamsBody: true, now: 10) },
            [
                ([.connecting], .becomes(.streamingBody, [.armTimer(deadline: 1010)])),
                ([.idle], .becomes(.reusedStreamingBody, [.armTimer(deadline: 1010)])),
                // Once closed no I/O starts, and a busy connection runs one exchange at a time.
                (busyStates + closedStates, .stays([])),
            ]),
        Event(
            "the request is all written", recording: { $0.requestWritten() },
            [
                ([.requestPending, .streamingBody], .becomes(.awaitingAnswer, [])),
                ([.reusedRequestPending, .reusedStreamingBody], .becomes(.reusedAwaitingAnswer, [])),
                ([.pausedWhileStreaming], .becomes(.paused, [])),
                (
                    [.awaitingAnswer, .reusedAwaitingAnswer, .paused, .pausedHoldingInput, .pausedAfterThePeerClosed]
                        + drainingStates + [.idle],
                    .stays([])
                ),
                (closedStates, .closes([])),
                ([.connecting], .notSent("a request is written only after its exchange started")),
            ]),
        Event(
            "body bytes move", recording: { $0.bodyProgressed(now: 500) },
            [
                // Only the time moves (`bodyProgressKeepsTheExchangeFromIdling` checks it).
                (openStates + closedStates, .stays([]))
            ]),
        Event(
            "the body stream fails", { $0.bodyFailed() },
            [
                (busyStates, .closes([.fail(.requestBodyFailed)])),
                (notBusy, .stays([])),
            ]),
        Event(
            "a write completes", { $0.writeCompleted(status: 0, parserStarted: false, replayable: true, now: 500) },
            [
                ([.streamingBody, .reusedStreamingBody, .pausedWhileStreaming], .stays([.pumpBody])),
                (
                    [
                        .requestPending, .reusedRequestPending, .awaitingAnswer, .reusedAwaitingAnswer, .paused,
                        .pausedHoldingInput,
                    ]
                        + [.pausedAfterThePeerClosed] + drainingStates,
                    .stays([])
                ),
                (notBusy, .stays([])),
            ]),
        Event(
            "a write is cancelled",
            { $0.writeCompleted(status: UV_ECANCELED.rawValue, parserStarted: false, replayable: true, now: 500) },
            [
                (busyStates, .stays([])),
                (notBusy, .stays([])),
            ]),
        Event(
            "a write fails before an answer, the request replayable",
            { $0.writeCompleted(status: reset, parserStarted: false, replayable: true, now: 500) },
            [
                // A kept-alive connection the peer closed before the request: sent again.
                (reusedBeforeAnAnswer, .closes([.retry])),
                (
                    [.requestPending, .awaitingAnswer, .streamingBody] + drainingStates,
                    .closes([.fail(.connectionFailed(reset))])
                ),
                // Paused: kept until the held bytes are delivered.
                (pausedStates, .changes([], { $0.endOfInput = reset })),
                (notBusy, .stays([])),
            ]),
        Event(
            "a write fails after the answer began",
            { $0.writeCompleted(status: pipe, parserStarted: true, replayable: false, now: 500) },
            [
                (runningStates, .closes([.fail(.connectionFailed(pipe))])),
                (pausedStates, .changes([], { $0.endOfInput = pipe })),
                (notBusy, .stays([])),
            ]),

        // Reading.
        Event(
            "bytes arrive", { $0.bytesRead(now: 500) },
            [
                (readingStates, .stays([.parseInput])),
                // The peer closed a kept-alive connection or sent something unasked.
                ([.idle], .closes([.close])),
                ([.connecting] + closedStates, .stays([])),
                (pausedStates + drainingStates, .notSent(readingIsStopped)),
            ]),
        Event(
            "the response ends, kept alive", { $0.responseEnded(keepAlive: true) },
            [
                ([.awaitingAnswer, .reusedAwaitingAnswer], .becomes(.idle, [.endExchange(reuse: true)])),
                // Reused after a paused delivery: reads again first.
                ([.draining], .becomes(.idle, [.endExchange(reuse: true), .startReading])),
                // The request is not all out: an upstream that answered early may never read the rest.
                (
                    [.requestPending, .reusedRequestPending, .streamingBody, .reusedStreamingBody, .pausedWhileStreaming],
                    .closes([.endExchange(reuse: false)])
                ),
                // Bytes held after the answer, or a peer that closed while delivery paused.
                (
                    [.pausedHoldingInput, .pausedAfterThePeerClosed, .drainingAfterThePeerClosed],
                    .closes([.endExchange(reuse: false)])
                ),
                // The parser stops at a refused chunk, so no response ends while one is held;
                // the reuse rule does not read `paused`, which the next exchange clears.
                ([.paused], .ends(in: .idle, [.endExchange(reuse: true), .startReading])),
                (notBusy, .stays([])),
            ]),
        Event(
            "the response ends, not kept alive", { $0.responseEnded(keepAlive: false) },
            [
                (busyStates, .closes([.endExchange(reuse: false)])),
                (notBusy, .stays([])),
            ]),
        Event(
            "the answer is invalid", { $0.responseInvalid() },
            [
                (busyStates, .closes([.fail(.invalidResponse)])),
                (notBusy, .stays([])),
            ]),
        Event(
            "the upstream switches protocols", { $0.switched() },
            [
                (busyStates, .closes([.handOver])),
                (notBusy, .stays([])),
            ]),
        Event(
            "the handler refuses a chunk", { $0.deliveryRefused(holdsInput: false) },
            [
                ([.awaitingAnswer], .becomes(.paused, [.stopReading])),
                ([.streamingBody], .becomes(.pausedWhileStreaming, [.stopReading])),
                (
                    [.requestPending, .reusedRequestPending, .reusedAwaitingAnswer, .reusedStreamingBody],
                    .changes(
                        [.stopReading],
                        {
                            $0.paused = true
                            $0.readingStopped = true
                        })
                ),
                // Refused again while the held bytes are parsed: reading is stopped already.
                ([.draining], .becomes(.paused, [])),
                ([.drainingAfterThePeerClosed], .changes([], { $0.paused = true })),
                (pausedStates, .notSent(oneRefusalAtATime)),
                (notBusy, .stays([])),
            ]),
        Event(
            "the handler refuses a chunk with bytes after it", { $0.deliveryRefused(holdsInput: true) },
            [
                ([.awaitingAnswer], .becomes(.pausedHoldingInput, [.stopReading])),
                (
                    [.requestPending, .reusedRequestPending, .reusedAwaitingAnswer, .streamingBody, .reusedStreamingBody],
                    .changes(
                        [.stopReading],
                        {
                            $0.paused = true
                            $0.holdsInput = true
                            $0.readingStopped = true
                        })
                ),
                ([.draining], .becomes(.pausedHoldingInput, [])),
                ([.drainingAfterThePeerClosed], .becomes(.pausedAfterThePeerClosed, [])),
                (pausedStates, .notSent(oneRefusalAtATime)),
                (notBusy, .stays([])),
            ]),
        Event(
            "the handler takes bytes again", { $0.resumed(now: 500) },
            [
                (pausedStates, .stays([.deliverHeld])),
                // Nothing was refused: nothing to deliver.
                (runningStates, .stays([])),
                (notBusy, .stays([])),
            ]),
        Event(
            "the refused chunk is taken", recording: { $0.heldChunkTaken() },
            [
                ([.paused, .pausedHoldingInput], .becomes(.draining, [])),
                ([.pausedAfterThePeerClosed], .becomes(.drainingAfterThePeerClosed, [])),
                ([.pausedWhileStreaming], .changes([], { $0.paused = false })),
                (runningStates + notBusy, .stays([])),
            ]),
        Event(
            "the held bytes are parsed", { $0.heldInputParsed(parserStarted: true, replayable: false) },
            [
                ([.draining], .becomes(.awaitingAnswer, [.startReading])),
                // The peer's close, kept while paused, is acted on now: the parser judges it.
                ([.drainingAfterThePeerClosed], .becomes(.draining, [.finishInput])),
                // Refused again while parsing them: nothing until resumed.
                (pausedStates, .stays([])),
                (notBusy, .stays([])),
                (
                    readingStates,
                    .notSent("held bytes exist only after a refusal (the shell's deliverHeld needs a refused chunk)")
                ),
            ]),
        Event(
            "the peer closes before an answer",
            { $0.inputEnded(code: eof, writing: false, parserStarted: false, replayable: true) },
            [
                // A kept-alive connection the peer closed just before the request: sent again.
                (reusedBeforeAnAnswer, .closes([.retry])),
                // A new connection's close is the answer's end: the parser judges it.
                ([.requestPending, .awaitingAnswer, .streamingBody] + drainingStates, .stays([.finishInput])),
                (pausedStates, .changes([], { $0.endOfInput = eof })),
                (notBusy, .stays([])),
            ]),
        Event(
            "the peer closes after the answer began",
            { $0.inputEnded(code: eof, writing: false, parserStarted: true, replayable: true) },
            [
                (runningStates, .stays([.finishInput])),
                (pausedStates, .changes([], { $0.endOfInput = eof })),
                (notBusy, .stays([])),
            ]),
        Event(
            "the connection is reset while reading",
            { $0.inputEnded(code: reset, writing: false, parserStarted: true, replayable: false) },
            [
                (runningStates, .closes([.fail(.connectionFailed(reset))])),
                (pausedStates, .changes([], { $0.endOfInput = reset })),
                (notBusy, .stays([])),
            ]),
        Event(
            "a write is refused at once, the request not replayable",
            { $0.inputEnded(code: pipe, writing: true, parserStarted: false, replayable: false) },
            [
                (runningStates, .closes([.fail(.connectionFailed(pipe))])),
                (pausedStates, .changes([], { $0.endOfInput = pipe })),
                (notBusy, .stays([])),
            ]),
        Event(
            "the end of the input completes the answer", { $0.inputFinished(ended: true) },
            [
                // Read to the close: never reused.
                (busyStates, .closes([.endExchange(reuse: false)])),
                (notBusy, .stays([])),
            ]),
        Event(
            "the end of the input cuts the answer", { $0.inputFinished(ended: false) },
            [
                (busyStates, .closes([.fail(.closedEarly)])),
                (notBusy, .stays([])),
            ]),
        Event(
            "reading cannot start", { $0.readingFailed() },
            [
                (openStates, .closes([.fail(.cannotRead)])),
                (closedStates, .stays([])),
            ]),

        // Pool and timer.
        Event(
            "parked in the pool", { $0.parked(now: 500) },
            [
                ([.idle], .stays([.armTimer(deadline: 1500)])),
                ([.connecting] + busyStates + closedStates, .stays([])),
            ]),
        Event(
            "the timer fires before any deadline", { $0.timerFired(now: 500) },
            [
                // The connect timer is the only one armed while connecting.
                ([.connecting], .closes([.fail(.connectTimedOut)])),
                // Re-armed for the idle deadline (1010), nearer than the total one (5010).
                (runningStates, .stays([.armTimer(deadline: 1010)])),
                // Waiting on the client is not idleness: the idle deadline moves on from now.
                (pausedStates, .stays([.armTimer(deadline: 1500)])),
                ([.idle], .closes([.close])),
                (closedStates, .stays([])),
            ]),
        Event(
            "the timer fires at the idle deadline", { $0.timerFired(now: 1010) },
            [
                ([.connecting], .closes([.fail(.connectTimedOut)])),
                (runningStates, .closes([.fail(.answerTimedOut)])),
                (pausedStates, .stays([.armTimer(deadline: 2010)])),
                ([.idle], .closes([.close])),
                (closedStates, .stays([])),
            ]),
        Event(
            "the timer fires at the total deadline", { $0.timerFired(now: 5010) },
            [
                ([.connecting], .closes([.fail(.connectTimedOut)])),
                // Paused or not.
                (busyStates, .closes([.fail(.answerTimedOut)])),
                ([.idle], .closes([.close])),
                (closedStates, .stays([])),
            ]),
        Event(
            "the exchange is cancelled", { $0.stop() },
            [
                (openStates, .closes([.close])),
                (closedStates, .stays([])),
            ]),
        Event(
            "the client shuts down", { $0.stop(failing: .shutDown) },
            [
                (openStates, .closes([.fail(.shutDown)])),
                (closedStates, .stays([])),
            ]),
    ]

    // MARK: Every event in every state

    @Test(arguments: events)
    func everyEventHasOneOutcomeInEveryState(_ event: Event) {
        for state in State.allCases {
            let rows = event.rows.filter { $0.0.contains(state) }.count
            #expect(rows == 1, "\(event.name) in \(state): \(rows) outcomes")
        }
    }

    /// One event in one state.
    struct Pair: Sendable, CustomTestStringConvertible {
        let event: Event
        let state: State
        let outcome: Outcome
        var testDescription: String { "\(event.name), \(state)" }
    }

    /// Every pair the shell can send, with its outcome.
    static let pairs: [Pair] = events.flatMap { event in
        State.allCases.compactMap { state -> Pair? in
            guard let outcome = event.outcome(in: state) else { return nil }
            if case .notSent = outcome { return nil }
            return Pair(event: event, state: state, outcome: outcome)
        }
    }

    @Test(arguments: pairs)
    func everyEventInEveryState(_ pair: Pair) {
        var m = Self.reach(pair.state)
        let before = Facts(m)
        let actions = Array(pair.event.apply(&m))
        let after = Facts(m)
        switch pair.outcome {
        case .stays(let expected):
            #expect(actions == expected)
            #expect(after == before)
        case .becomes(let state, let expected):
            #expect(actions == expected)
            #expect(after == state.facts)
        case .changes(let expected, let change):
            var facts = before
            change(&facts)
            #expect(actions == expected)
            #expect(after == facts)
        case .closes(let expected):
            #expect(actions == expected)
            #expect(after.phase == .closed)
        case .ends(let phase, let expected):
            #expect(actions == expected)
            #expect(after.phase == phase)
        case .notSent:
            Issue.record("a pair the shell never sends was applied")
        }
    }

    /// Once closed, no event starts anything again: the machine's own promise ("once the
    /// connection is closed, no I/O starts"), checked for every event that answers there.
    @Test(arguments: closedStates)
    func aClosedMachineStartsNothing(_ state: State) {
        for event in Self.events {
            if case .notSent = event.outcome(in: state) { continue }
            var m = Self.reach(state)
            #expect(Array(event.apply(&m)) == [], "\(event.name)")
            #expect(m.phase == .closed, "\(event.name)")
        }
    }
}
