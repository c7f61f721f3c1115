import HTTPWire
import Testing

@testable import Runtime

/// The inline list the state machines return their actions in.
@Suite struct ActionListTests {
    typealias List = ActionList
    typealias Action = Connection.StateMachine.Action

    /// A distinct action for each number.
    private func a(_ i: Int) -> Action { .releaseBudget(i) }
    private func list(_ r: Range<Int>) -> [Action] { r.map(a) }

    @Test func appendedElementsReadBackInOrder() {
        var l = List()
        #expect(l.isEmpty && l.count == 0 && l.startIndex == l.endIndex)
        for i in 1...3 { l.append(a(i * 10)) }
        #expect(l.count == 3)
        #expect(l[0] == a(10) && l[1] == a(20) && l[2] == a(30))
        #expect(Array(l) == [a(10), a(20), a(30)])
        var seen: [Action] = []
        for e in l { seen.append(e) }
        #expect(seen == [a(10), a(20), a(30)])
        #expect(l.first == a(10) && l.last == a(30))
        #expect(l == [a(10), a(20), a(30)] && l != [a(10), a(20)] && l != [a(10), a(30), a(20)])
        #expect(List(.close) == [.close])
    }

    @Test func aFullListHoldsEverythingInline() {
        var l = List()
        for i in 0..<List.inlineCapacity { l.append(a(i)) }
        #expect(l.count == List.inlineCapacity)
        #expect(!l.spilled)
        #expect(Array(l) == list(0..<List.inlineCapacity))
    }

    @Test func elementsPastTheCapacitySpillInOrder() {
        let n = List.inlineCapacity + 3
        var l = List()
        for i in 0..<n { l.append(a(i)) }
        #expect(l.spilled)
        #expect(l.count == n)
        #expect(Array(l) == list(0..<n))
        #expect(l[List.inlineCapacity - 1] == a(List.inlineCapacity - 1) && l[List.inlineCapacity] == a(List.inlineCapacity))
        #expect(Array(l.reversed()) == Array(list(0..<n).reversed()))
        // Equality does not depend on where the elements live.
        var m = List()
        m.append(contentsOf: list(0..<n))
        #expect(l == m)
    }

    @Test func listsConcatenateAndReplaceLikeArrays() {
        let x: List = [a(1), a(2)]
        let b = x + [a(3)] + List(a(4))
        #expect(Array(b) == [a(1), a(2), a(3), a(4)])
        var c = b
        c.replaceSubrange(1..<3, with: [a(9), a(9), a(9)])
        #expect(Array(c) == [a(1), a(9), a(9), a(9), a(4)])
        #expect(Array(b) == [a(1), a(2), a(3), a(4)], "a copy is a value")
        c.removeAll()
        #expect(c.isEmpty)
        var d = List()
        d += list(0..<(2 * List.inlineCapacity))
        d.removeFirst(List.inlineCapacity + 1)
        #expect(Array(d) == list((List.inlineCapacity + 1)..<(2 * List.inlineCapacity)))
        #expect(!d.spilled)
    }

    @Test func payloadsAreKeptAndReleased() {
        func w(_ i: Int) -> Action { .write([UInt8](repeating: UInt8(i), count: 100)) }
        var l = List()
        for i in 0..<(List.inlineCapacity + 1) { l.append(w(i)) }
        var copy = l
        copy.append(.write([1]))
        #expect(l.count == List.inlineCapacity + 1)
        #expect(copy.count == l.count + 1)
        #expect(l.allSatisfy { if case .write(let b) = $0 { b.count == 100 } else { false } })
        #expect(l[3] == w(3) && copy[List.inlineCapacity + 1] == .write([1]))
        #expect(l.description == Array(l).description)
    }

    // MARK: The longest lists the machines return fit inline

    @Test func closingWithEverythingToUndoFitsInline() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(100)), body: .buffer(maxBytes: 100), now: 0)
        _ = m.receivedBody(40, now: 1)
        var s = makeMachine()
        _ = s.receivedHead(request("POST", framing: .length(100)), body: .stream, now: 0)
        let closing = [m.peerClosed(), s.peerClosed()]
        #expect(closing[0] == [.releaseBudget(40), .notifyGone, .failWriters, .close])
        #expect(closing[1] == [.failBodyStream(.clientDisconnected), .notifyGone, .failWriters, .close])
        #expect(closing.allSatisfy { !$0.spilled })
    }

    @Test func aResponseThatEndsABudgetedExchangeFitsInline() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .length(4)), body: .buffer(maxBytes: 100), now: 0)
        _ = m.receivedBody(4, now: 1)
        _ = m.receivedEnd(now: 1)
        let a = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 2)
        #expect(a.count == 5)
        #expect(
            Array(a.dropFirst()) == [.releaseBudget(4), .resetExchange, .armTimer(.keepAlive, deadline: 3002), .drainPending])
        #expect(!a.spilled)
    }
}
