import Testing

@testable import Runtime

/// The pool's decisions without a socket: reuse of the most recently idle connection, the
/// limit, the waiting order, what a freed or closed connection does next, and shutdown.
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
        }
    }
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

    /// A burst opens `maxConnecting` connections; each connect that completes lets one more
    /// open, for the first waiting exchange.
    @Test func aBurstOpensConnectionsAtThePaceTheyConnect() {
        var m = Machine(maxConnections: 8, maxConnecting: 2)
        let e = (0..<5).map(Ex.init)
        #expect(Self.text(m.start(e[0])) == "open for e0")
        #expect(Self.text(m.start(e[1])) == "open for e1")
        for i in 2..<5 { #expect(Self.text(m.start(e[i])) == "wait") }
        #expect(m.connectingCount == 2 && m.openCount == 2 && m.waitingCount == 3)
        #expect(Self.text(m.connectFinished()) == "open for e2")
        #expect(Self.text(m.connectFinished()) == "open for e3")
        #expect(m.connectingCount == 2 && m.openCount == 4 && m.waitingCount == 1)
        // A connection that frees up serves the next waiting exchange: nothing more opens.
        #expect(Self.text(m.released(Conn(0))) == ["run e4 on c0"])
        #expect(Self.text(m.connectFinished()) == "wait")
        #expect(Self.text(m.connectFinished()) == "wait")
        #expect(m.connectingCount == 0 && m.openCount == 4 && m.waitingCount == 0)
    }

    /// A failed connect frees its connecting slot once: the close that follows opens nothing
    /// more while the connect opened for the next exchange is still under way.
    @Test func aFailedConnectOpensOneConnectionForTheNextExchangeNotTwo() {
        var m = Machine(maxConnections: 4, maxConnecting: 1)
        let c0 = Conn(0)
        #expect(Self.text(m.start(Ex(0))) == "open for e0")
        #expect(Self.text(m.start(Ex(1))) == "wait")
        #expect(Self.text(m.start(Ex(2))) == "wait")
        #expect(Self.text(m.connectFinished()) == "open for e1", "c0 failed to connect")
        #expect(Self.text(m.closed(c0)) == ["ended"], "e2 waits for e1's connect")
        #expect(m.openCount == 1 && m.connectingCount == 1 && m.waitingCount == 1)
        #expect(Self.text(m.connectFinished()) == "open for e2")
    }

    /// The limit of open connections holds whatever the pace allows.
    @Test func thePaceNeverOpensBeyondTheLimit() {
        var m = Machine(maxConnections: 2, maxConnecting: 8)
        #expect(Self.text(m.start(Ex(0))) == "open for e0")
        #expect(Self.text(m.start(Ex(1))) == "open for e1")
        #expect(Self.text(m.start(Ex(2))) == "wait")
        #expect(Self.text(m.connectFinished()) == "wait")
        #expect(m.openCount == 2 && m.waitingCount == 1)
    }

    @Test func noConnectOpensAnythingAfterShutdown() {
        var m = Machine(maxConnections: 4, maxConnecting: 1)
        _ = m.start(Ex(0))
        _ = m.start(Ex(1))
        _ = m.shutDown(open: [])
        #expect(Self.text(m.connectFinished()) == "wait")
    }
}
