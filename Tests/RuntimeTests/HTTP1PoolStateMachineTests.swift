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
