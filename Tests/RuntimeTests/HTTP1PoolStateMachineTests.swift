import Testing

@testable import Runtime

/// The pool's decisions without a socket: reuse of the most recently idle connection, the
/// limit, the waiting order, what a freed or closed connection does next, the pace of new
/// connections (counted until their first answer, for at most a window), and shutdown.
struct HTTP1PoolStateMachineTests {
    final class Conn: CustomStringConvertible {
        let n: Int
        init(_ n: Int) { self.n = n }
        var description: String { "c\(n)" }
    }
    final class Ex: CustomStringConvertible {
        let n: Int
        init(_ n: Int) { self.n = n }
        var description: String { "e\(n)" }
    }
    typealias Machine = HTTP1Pool.StateMachine<Conn, Ex>

    /// Actions as text, so that references compare by name.
    static func text(_ action: Machine.Action?) -> String {
        guard let action else { return "wait" }
        switch action {
        case .run(let e, let c): return "run \(e) on \(c)"
        case .open(let e): return "open for \(e)"
        case .park(let c): return "park \(c)"
        case .exchangeEnded: return "ended"
        case .failWaiting(let es): return "fail \(es)"
        case .shutDown(let cs): return "shut down \(cs)"
        case .armPaceTimer(let deadline): return "arm pace timer \(deadline)"
        }
    }
    static func text(_ actions: [Machine.Action]) -> [String] { actions.map { text($0) } }
    static func text(_ actions: (Machine.Action, Machine.Action?)) -> [String] {
        [text(actions.0)] + (actions.1.map { [text($0)] } ?? [])
    }
    static func text(_ actions: (Machine.Action?, Machine.Action)) -> [String] {
        (actions.0.map { [text($0)] } ?? []) + [text(actions.1)]
    }
    static func text(_ actions: (Machine.Action, Machine.Action)) -> [String] { [text(actions.0), text(actions.1)] }

    @Test func exchangesOpenConnectionsUpToTheLimitThenWaitInOrder() {
        var m = Machine(maxConnections: 2)
        let e = (0..<4).map(Ex.init)
        #expect(Self.text(m.start(e[0])) == "open for e0")
        #expect(Self.text(m.start(e[1])) == "open for e1")
        #expect(Self.text(m.start(e[2])) == "wait")
        #expect(Self.text(m.start(e[3])) == "wait")
        #expect(m.openCount == 2 && m.waitingCount == 2 && !m.isQuiet)
        let c0 = Conn(0)
        #expect(Self.text(m.released(c0)) == ["run e2 on c0"], "a freed connection takes the first waiting")
        #expect(Self.text(m.closed(Conn(1))) == ["open for e3", "ended"], "a closed one makes room for the next")
        #expect(m.openCount == 2 && m.waitingCount == 0)
    }

    @Test func theMostRecentlyIdleConnectionServesFirst() {
        var m = Machine(maxConnections: 4)
        let (c0, c1) = (Conn(0), Conn(1))
        _ = m.start(Ex(0))
        _ = m.start(Ex(1))
        #expect(Self.text(m.released(c0)) == ["park c0", "ended"])
        #expect(Self.text(m.released(c1)) == ["park c1", "ended"])
        #expect(m.isQuiet && m.busyCount == 0 && m.idle.count == 2)
        #expect(Self.text(m.start(Ex(2))) == "run e2 on c1")
        #expect(m.busyCount == 1)
    }

    @Test func anIdleConnectionThatClosesLeavesThePool() {
        var m = Machine(maxConnections: 1)
        let c0 = Conn(0)
        _ = m.start(Ex(0))
        _ = m.released(c0)
        #expect(Self.text(m.closed(c0)) == ["ended"])
        #expect(m.openCount == 0 && m.idle.isEmpty)
        #expect(Self.text(m.start(Ex(1))) == "open for e1", "not the closed one")
    }

    @Test func aSocketThatCannotBeMadeFreesItsSlot() {
        var m = Machine(maxConnections: 1)
        _ = m.start(Ex(0))
        m.openFailed()
        #expect(m.openCount == 0)
        #expect(Self.text(m.start(Ex(1))) == "open for e1")
    }

    @Test func aCancelledWaitingExchangeIsNeverRun() {
        var m = Machine(maxConnections: 1)
        let (e1, e2) = (Ex(1), Ex(2))
        _ = m.start(Ex(0))
        _ = m.start(e1)
        _ = m.start(e2)
        m.dequeue(e1)
        #expect(Self.text(m.released(Conn(0))) == ["run e2 on c0"])
    }

    @Test func shutdownFailsTheWaitingAndOpensNothingMore() {
        var m = Machine(maxConnections: 1)
        let c0 = Conn(0)
        _ = m.start(Ex(0))
        _ = m.start(Ex(1))
        _ = m.start(Ex(2))
        #expect(Self.text(m.shutDown(open: [c0])) == ["fail [e1, e2]", "shut down [c0]"])
        #expect(Self.text(m.closed(c0)) == ["ended"], "no connection opened for anyone")
        #expect(m.isQuiet)
    }

    /// Many exchanges through one connection: the queue's consumed front is dropped as it
    /// grows, and the order holds throughout.
    @Test func aLongQueueIsServedInOrder() {
        var m = Machine(maxConnections: 1)
        let c = Conn(0)
        _ = m.start(Ex(0))
        for i in 1...500 { _ = m.start(Ex(i)) }
        for i in 1...500 { #expect(Self.text(m.released(c)) == ["run e\(i) on c0"]) }
        #expect(Self.text(m.released(c)) == ["park c0", "ended"])
        #expect(m.waitingCount == 0)
    }

    /// A burst opens `maxConnecting` connections; each first answer lets one more open, for
    /// the first waiting exchange; a completed connect does not.
    @Test func aBurstOpensConnectionsAtThePaceTheyAnswer() {
        var m = Machine(maxConnections: 8, maxConnecting: 2, firstAnswerWindow: 250)
        let e = (0..<5).map(Ex.init)
        let c = (0..<4).map(Conn.init)
        #expect(Self.text(m.start(e[0])) == "open for e0")
        m.opened(c[0])
        #expect(Self.text(m.start(e[1])) == "open for e1")
        m.opened(c[1])
        for i in 2..<5 { #expect(Self.text(m.start(e[i])) == "wait") }
        #expect(m.unprovenCount == 2 && m.openCount == 2 && m.waitingCount == 3)
        #expect(Self.text(m.connected(c[0], now: 10)) == "arm pace timer 260", "connected is not answered")
        #expect(Self.text(m.connected(c[1], now: 12)) == "wait", "one timer, armed for the earliest")
        #expect(m.unprovenCount == 2 && m.waitingCount == 3)
        #expect(Self.text(m.answered(c[0])) == "open for e2")
        m.opened(c[2])
        #expect(Self.text(m.answered(c[1])) == "open for e3")
        m.opened(c[3])
        #expect(m.unprovenCount == 2 && m.openCount == 4 && m.waitingCount == 1)
        // A connection that frees up serves the next waiting exchange: nothing more opens.
        #expect(Self.text(m.released(c[0])) == ["run e4 on c0"])
        #expect(Self.text(m.answered(c[0])) == "wait", "a reused connection's answers count for nothing")
        #expect(Self.text(m.answered(c[2])) == "wait")
        #expect(Self.text(m.answered(c[3])) == "wait")
        #expect(m.unprovenCount == 0 && m.peakUnprovenCount == 2 && m.openCount == 4 && m.waitingCount == 0)
    }

    /// A connection slow to answer stops counting when its window ends, so that a long poll
    /// does not stall the origin; one timer serves every window, armed for the earliest end.
    @Test func aSlowFirstAnswerStopsCountingWhenItsWindowEnds() {
        var m = Machine(maxConnections: 8, maxConnecting: 2, firstAnswerWindow: 250)
        let c = (0..<4).map(Conn.init)
        _ = m.start(Ex(0))
        m.opened(c[0])
        _ = m.start(Ex(1))
        m.opened(c[1])
        for i in 2..<5 { _ = m.start(Ex(i)) }
        #expect(Self.text(m.connected(c[0], now: 0)) == "arm pace timer 250")
        #expect(Self.text(m.connected(c[1], now: 100)) == "wait")
        #expect(Self.text(m.paceTimerFired(now: 250)) == ["open for e2", "arm pace timer 350"])
        m.opened(c[2])
        #expect(Self.text(m.paceTimerFired(now: 349)) == ["arm pace timer 350"], "early: nothing ends")
        #expect(Self.text(m.paceTimerFired(now: 350)) == ["open for e3"], "c2 connects yet: no window to time")
        m.opened(c[3])
        #expect(m.unprovenCount == 2 && m.openCount == 4 && m.waitingCount == 1)
        #expect(Self.text(m.answered(c[0])) == "wait", "a late first answer frees nothing twice")
        #expect(m.unprovenCount == 2)
        #expect(Self.text(m.connected(c[2], now: 400)) == "arm pace timer 650")
    }

    /// The window starts at the connect's end: a connect that waits on a dropped SYN keeps
    /// counting however long it takes, as another attempt would meet the same full queue.
    @Test func aConnectStillUnderWayCountsWithoutAWindow() {
        var m = Machine(maxConnections: 8, maxConnecting: 1, firstAnswerWindow: 250)
        let c0 = Conn(0)
        _ = m.start(Ex(0))
        m.opened(c0)
        _ = m.start(Ex(1))
        #expect(Self.text(m.paceTimerFired(now: 5_000)) == [])
        #expect(m.unprovenCount == 1 && m.waitingCount == 1)
    }

    /// A new connection that fails before answering (refused, reset, timed out, or closed
    /// with its cancelled exchange) frees its place once: one connection opens for the next
    /// waiting exchange, not two, and its window's end later finds nothing.
    @Test(arguments: [false, true])
    func anUnansweredConnectionThatClosesOpensOneForTheNextExchange(afterConnecting: Bool) {
        var m = Machine(maxConnections: 4, maxConnecting: 1, firstAnswerWindow: 250)
        let (c0, c1) = (Conn(0), Conn(1))
        #expect(Self.text(m.start(Ex(0))) == "open for e0")
        m.opened(c0)
        #expect(Self.text(m.start(Ex(1))) == "wait")
        #expect(Self.text(m.start(Ex(2))) == "wait")
        if afterConnecting { #expect(Self.text(m.connected(c0, now: 0)) == "arm pace timer 250") }
        #expect(Self.text(m.closed(c0)) == ["open for e1", "ended"])
        m.opened(c1)
        #expect(m.openCount == 1 && m.unprovenCount == 1 && m.waitingCount == 1)
        #expect(Self.text(m.answered(c0)) == "wait")
        #expect(Self.text(m.paceTimerFired(now: 250)) == [], "the closed one's window counts for nothing")
        #expect(Self.text(m.answered(c1)) == "open for e2")
    }

    /// A request served on an idle connection touches nothing of the pace: it does not count,
    /// and new connections may still open beside it.
    @Test func aReusedConnectionNeverCounts() {
        var m = Machine(maxConnections: 4, maxConnecting: 1, firstAnswerWindow: 250)
        let c0 = Conn(0)
        _ = m.start(Ex(0))
        m.opened(c0)
        _ = m.connected(c0, now: 0)
        _ = m.answered(c0)
        _ = m.released(c0)
        #expect(Self.text(m.start(Ex(1))) == "run e1 on c0")
        #expect(Self.text(m.answered(c0)) == "wait")
        #expect(m.unprovenCount == 0)
        #expect(Self.text(m.start(Ex(2))) == "open for e2")
        #expect(Self.text(m.paceTimerFired(now: 250)) == [])
    }

    /// Without a timer (it could not be made or armed) nothing would end a window: every
    /// connected connection stops counting at once, and the connecting ones count on.
    @Test func withoutATimerConnectedConnectionsStopCounting() {
        var m = Machine(maxConnections: 8, maxConnecting: 2, firstAnswerWindow: 250)
        let (c0, c1) = (Conn(0), Conn(1))
        _ = m.start(Ex(0))
        m.opened(c0)
        _ = m.start(Ex(1))
        m.opened(c1)
        for i in 2..<5 { _ = m.start(Ex(i)) }
        _ = m.connected(c0, now: 0)
        #expect(Self.text(m.paceTimerFailed()) == ["open for e2"])
        m.opened(Conn(2))
        #expect(m.unprovenCount == 2 && m.waitingCount == 2)
        #expect(Self.text(m.connected(c1, now: 5)) == "arm pace timer 255", "the next window tries a timer again")
    }

    /// A window of zero counts a connection only while it connects.
    @Test func aZeroWindowPacesByConnects() {
        var m = Machine(maxConnections: 8, maxConnecting: 1)
        let c0 = Conn(0)
        _ = m.start(Ex(0))
        m.opened(c0)
        _ = m.start(Ex(1))
        #expect(Self.text(m.connected(c0, now: 0)) == "open for e1")
        #expect(Self.text(m.answered(c0)) == "wait")
    }

    /// The limit of open connections holds whatever the pace allows.
    @Test func thePaceNeverOpensBeyondTheLimit() {
        var m = Machine(maxConnections: 2, maxConnecting: 8, firstAnswerWindow: 250)
        let (c0, c1) = (Conn(0), Conn(1))
        #expect(Self.text(m.start(Ex(0))) == "open for e0")
        m.opened(c0)
        #expect(Self.text(m.start(Ex(1))) == "open for e1")
        m.opened(c1)
        #expect(Self.text(m.start(Ex(2))) == "wait")
        #expect(Self.text(m.answered(c0)) == "wait")
        _ = m.connected(c1, now: 0)
        #expect(Self.text(m.paceTimerFired(now: 250)) == [])
        #expect(m.openCount == 2 && m.waitingCount == 1)
    }

    /// Shutdown forgets the unanswered connections: no connect, answer, close or timer
    /// opens anything after it, and no timer is asked for.
    @Test func nothingOpensOrArmsAfterShutdown() {
        var m = Machine(maxConnections: 4, maxConnecting: 1, firstAnswerWindow: 250)
        let c0 = Conn(0)
        _ = m.start(Ex(0))
        m.opened(c0)
        _ = m.start(Ex(1))
        _ = m.shutDown(open: [c0])
        #expect(m.unprovenCount == 0)
        #expect(Self.text(m.connected(c0, now: 0)) == "wait")
        #expect(Self.text(m.answered(c0)) == "wait")
        #expect(Self.text(m.paceTimerFired(now: 250)) == [])
        #expect(Self.text(m.closed(c0)) == ["ended"])
        #expect(m.isQuiet && m.openCount == 0)
    }
}

// MARK: Every event in every state

extension HTTP1PoolStateMachineTests {
    /// The pool states one connection, c0, passes through, with a second exchange e1
    /// waiting where it can: at most 2 connections, 1 unanswered, a 100 ms window.
    enum State: CaseIterable, Sendable {
        /// Nothing opened yet.
        case empty
        /// e0 opened c0, which still connects; e1 waits for the pace.
        case connecting
        /// c0 connected at 0 (its window ends at 100) and has not answered; e1 waits.
        case unanswered
        /// c0 answered e0 and serves it; nothing waits.
        case serving
        /// c0 is parked after serving e0.
        case idle
        /// c0 and c1 serve answered exchanges; e1 waits for the limit.
        case full
        /// Shut down while `connecting`.
        case shutDown

        /// The counts in this state, written out: open, unanswered, waiting, idle.
        var counts: Counts {
            switch self {
            case .empty: return Counts(0, 0, 0, 0)
            case .connecting, .unanswered: return Counts(1, 1, 1, 0)
            case .serving: return Counts(1, 0, 0, 0)
            case .idle: return Counts(1, 0, 0, 1)
            case .full: return Counts(2, 0, 1, 0)
            case .shutDown: return Counts(1, 0, 0, 0)
            }
        }
    }

    /// The pool's counts: open, unanswered, waiting and idle connections.
    struct Counts: Equatable, Sendable, CustomStringConvertible {
        let open: Int
        let unproven: Int
        let waiting: Int
        let idle: Int
        init(_ open: Int, _ unproven: Int, _ waiting: Int, _ idle: Int) {
            self.open = open
            self.unproven = unproven
            self.waiting = waiting
            self.idle = idle
        }
        init(_ m: Machine) { self.init(m.openCount, m.unprovenCount, m.waitingCount, m.idle.count) }
        var description: String { "open \(open), unanswered \(unproven), waiting \(waiting), idle \(idle)" }
    }

    /// A pool, its connections c0 and c1 and its exchanges e0 and e1, in `state`.
    final class Fixture {
        var m = Machine(maxConnections: 2, maxConnecting: 1, firstAnswerWindow: 100)
        let c0 = Conn(0)
        let c1 = Conn(1)
        let e0 = Ex(0)
        let e1 = Ex(1)

        init(_ state: State) {
            switch state {
            case .empty:
                break
            case .connecting, .unanswered, .shutDown:
                _ = m.start(e0)
                m.opened(c0)
                _ = m.start(e1)
                if state == .unanswered { _ = m.connected(c0, now: 0) }
                if state == .shutDown { _ = m.shutDown(open: [c0]) }
            case .serving, .idle, .full:
                _ = m.start(e0)
                m.opened(c0)
                _ = m.connected(c0, now: 0)
                _ = m.answered(c0)
                if state == .idle { _ = m.released(c0) }
                if state == .full {
                    _ = m.start(Ex(3))
                    m.opened(c1)
                    _ = m.connected(c1, now: 0)
                    _ = m.answered(c1)
                    _ = m.start(e1)
                }
            }
        }
    }

    @Test(arguments: State.allCases)
    func everyPoolStateIsReachedThroughItsEvents(_ state: State) {
        #expect(Counts(Fixture(state).m) == state.counts)
    }

    /// One event's outcome in one state: the actions as text and the counts after, or why
    /// the shell never sends it there.
    enum Outcome: Sendable {
        case gives([String], Counts)
        /// The actions; the counts stay.
        case stays([String])
        case notSent(String)
    }

    struct Event: Sendable, CustomTestStringConvertible {
        let name: String
        let apply: @Sendable (Fixture) -> [String]
        let outcomes: [State: Outcome]
        var testDescription: String { name }
    }

    static let notConnected = "only a connection that is open and has answered is released or closed after serving"

    static let events: [Event] = [
        Event(
            name: "an exchange starts", apply: { f in [text(f.m.start(Ex(9)))] },
            outcomes: [
                .empty: .gives(["open for e9"], Counts(1, 1, 0, 0)),
                // One connection unanswered: the pace holds the new exchange.
                .connecting: .gives(["wait"], Counts(1, 1, 2, 0)),
                .unanswered: .gives(["wait"], Counts(1, 1, 2, 0)),
                .serving: .gives(["open for e9"], Counts(2, 1, 0, 0)),
                .idle: .gives(["run e9 on c0"], Counts(1, 0, 0, 0)),
                // The limit holds it.
                .full: .gives(["wait"], Counts(2, 0, 2, 0)),
                .shutDown: .notSent("a closed client starts no exchange (UpstreamClient.start checks `closed`)"),
            ]),
        Event(
            name: "c0 connects at 10", apply: { f in [text(f.m.connected(f.c0, now: 10))] },
            outcomes: [
                .connecting: .stays(["arm pace timer 110"]),
                // Connected already, or not counted (answered, reused, or forgotten by shutdown).
                .unanswered: .stays(["wait"]),
                .serving: .stays(["wait"]),
                .idle: .stays(["wait"]),
                .full: .stays(["wait"]),
                .shutDown: .stays(["wait"]),
                .empty: .stays(["wait"]),
            ]),
        Event(
            name: "c0's answer arrives", apply: { f in [text(f.m.answered(f.c0))] },
            outcomes: [
                // The first answer frees the pace for the waiting exchange.
                .connecting: .gives(["open for e1"], Counts(2, 1, 0, 0)),
                .unanswered: .gives(["open for e1"], Counts(2, 1, 0, 0)),
                // Any later one changes nothing.
                .serving: .stays(["wait"]),
                .idle: .stays(["wait"]),
                .full: .stays(["wait"]),
                .shutDown: .stays(["wait"]),
                .empty: .stays(["wait"]),
            ]),
        Event(
            name: "the pace timer fires at 100", apply: { f in text(f.m.paceTimerFired(now: 100)) },
            outcomes: [
                // c0's window ended: it stops counting and e1 gets a connection.
                .unanswered: .gives(["open for e1"], Counts(2, 1, 0, 0)),
                // A connect under way has no window.
                .connecting: .stays([]),
                .serving: .stays([]),
                .idle: .stays([]),
                // The limit holds whatever the pace allows.
                .full: .stays([]),
                .shutDown: .stays([]),
                .empty: .stays([]),
            ]),
        Event(
            name: "the pace timer cannot be armed", apply: { f in text(f.m.paceTimerFailed()) },
            outcomes: [
                .unanswered: .gives(["open for e1"], Counts(2, 1, 0, 0)),
                .connecting: .stays([]),
                .serving: .stays([]),
                .idle: .stays([]),
                .full: .stays([]),
                .shutDown: .stays([]),
                .empty: .stays([]),
            ]),
        Event(
            name: "c0 is released", apply: { f in text(f.m.released(f.c0)) },
            outcomes: [
                .serving: .gives(["park c0", "ended"], Counts(1, 0, 0, 1)),
                // The first waiting exchange runs on it at once.
                .full: .gives(["run e1 on c0"], Counts(2, 0, 0, 0)),
                .empty: .notSent(notConnected),
                .connecting: .notSent(notConnected),
                .unanswered: .notSent(notConnected),
                .idle: .notSent("an idle connection serves nothing to release"),
                .shutDown: .notSent("a shut-down connection fails its exchange, it is not released"),
            ]),
        Event(
            name: "c0 closes", apply: { f in text(f.m.closed(f.c0)) },
            outcomes: [
                // An unanswered connection frees its place in the pace too: one opens for e1.
                .connecting: .gives(["open for e1", "ended"], Counts(1, 1, 0, 0)),
                .unanswered: .gives(["open for e1", "ended"], Counts(1, 1, 0, 0)),
                .serving: .gives(["ended"], Counts(0, 0, 0, 0)),
                .idle: .gives(["ended"], Counts(0, 0, 0, 0)),
                .full: .gives(["open for e1", "ended"], Counts(2, 1, 0, 0)),
                // Nothing opens after shutdown.
                .shutDown: .gives(["ended"], Counts(0, 0, 0, 0)),
                .empty: .notSent("only an open connection closes"),
            ]),
        Event(
            name: "e1 is cancelled while it waits",
            apply: { f in
                f.m.dequeue(f.e1)
                return []
            },
            outcomes: [
                .connecting: .gives([], Counts(1, 1, 0, 0)),
                .unanswered: .gives([], Counts(1, 1, 0, 0)),
                .full: .gives([], Counts(2, 0, 0, 0)),
                // Not waiting: nothing to take out.
                .serving: .stays([]),
                .idle: .stays([]),
                .shutDown: .stays([]),
                .empty: .stays([]),
            ]),
        Event(
            name: "the pool shuts down", apply: { f in text(f.m.shutDown(open: [])) },
            outcomes: [
                .connecting: .gives(["fail [e1]", "shut down []"], Counts(1, 0, 0, 0)),
                .unanswered: .gives(["fail [e1]", "shut down []"], Counts(1, 0, 0, 0)),
                .serving: .gives(["fail []", "shut down []"], Counts(1, 0, 0, 0)),
                .idle: .gives(["fail []", "shut down []"], Counts(1, 0, 0, 0)),
                .full: .gives(["fail [e1]", "shut down []"], Counts(2, 0, 0, 0)),
                .shutDown: .stays(["fail []", "shut down []"]),
                .empty: .stays(["fail []", "shut down []"]),
            ]),
    ]

    @Test(arguments: events)
    func everyPoolEventInEveryState(_ event: Event) {
        for state in State.allCases {
            guard let outcome = event.outcomes[state] else {
                Issue.record("\(event.name): no outcome in \(state)")
                continue
            }
            let f = Fixture(state)
            switch outcome {
            case .gives(let actions, let counts):
                #expect(event.apply(f) == actions, "\(event.name) in \(state)")
                #expect(Counts(f.m) == counts, "\(event.name) in \(state)")
            case .stays(let actions):
                #expect(event.apply(f) == actions, "\(event.name) in \(state)")
                #expect(Counts(f.m) == state.counts, "\(event.name) in \(state)")
            case .notSent:
                continue
            }
        }
    }
}
