import HTTPWire
import Testing

@testable import Runtime

/// The inline list the state machines return their actions in.
@Suite struct ActionListTests {
    typealias List = ActionList<Int>

    @Test func appendedElementsReadBackInOrder() {
        var l = List()
        #expect(l.isEmpty && l.count == 0 && l.startIndex == l.endIndex)
        for i in 1...3 { l.append(i * 10) }
        #expect(l.count == 3)
        #expect(l[0] == 10 && l[1] == 20 && l[2] == 30)
        #expect(Array(l) == [10, 20, 30])
        var seen: [Int] = []
        for e in l { seen.append(e) }
        #expect(seen == [10, 20, 30])
        #expect(l.first == 10 && l.last == 30)
        #expect(l == [10, 20, 30] && l != [10, 20] && l != [10, 30, 20])
        #expect(List(7) == [7])
    }

    @Test func aFullListHoldsEverythingInline() {
        var l = List()
        for i in 0..<List.inlineCapacity { l.append(i) }
        #expect(l.count == List.inlineCapacity)
        #expect(!l.spilled)
        #expect(Array(l) == Array(0..<List.inlineCapacity))
    }

    @Test func elementsPastTheCapacitySpillInOrder() {
        let n = List.inlineCapacity + 3
        var l = List()
        for i in 0..<n { l.append(i) }
        #expect(l.spilled)
        #expect(l.count == n)
        #expect(Array(l) == Array(0..<n))
        #expect(l[List.inlineCapacity - 1] == List.inlineCapacity - 1 && l[List.inlineCapacity] == List.inlineCapacity)
        #expect(Array(l.reversed()) == Array((0..<n).reversed()))
        // Equality does not depend on where the elements live.
        var m = List()
        m.append(contentsOf: 0..<n)
        #expect(l == m)
    }

    @Test func listsConcatenateAndReplaceLikeArrays() {
        let a: List = [1, 2]
        let b = a + [3] + List(4)
        #expect(Array(b) == [1, 2, 3, 4])
        var c = b
        c.replaceSubrange(1..<3, with: [9, 9, 9])
        #expect(Array(c) == [1, 9, 9, 9, 4])
        #expect(Array(b) == [1, 2, 3, 4], "a copy is a value")
        c.removeAll()
        #expect(c.isEmpty)
        var d = List()
        d += Array(0..<(2 * List.inlineCapacity))
        d.removeFirst(List.inlineCapacity + 1)
        #expect(Array(d) == Array((List.inlineCapacity + 1)..<(2 * List.inlineCapacity)))
        #expect(!d.spilled)
    }

    @Test func payloadsAreKeptAndReleased() {
        var l = ActionList<[UInt8]>()
        for i in 0..<(ActionList<[UInt8]>.inlineCapacity + 1) { l.append([UInt8](repeating: UInt8(i), count: 100)) }
        var copy = l
        copy.append([1])
        #expect(l.count == ActionList<[UInt8]>.inlineCapacity + 1)
        #expect(copy.count == l.count + 1)
        #expect(l.allSatisfy { $0.count == 100 })
        #expect(l[3] == [UInt8](repeating: 3, count: 100))
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
        #expect(Array(a.dropFirst()) == [.releaseBudget(4), .resetExchange, .armTimer(.keepAlive, deadline: 3002), .drainPending])
        #expect(!a.spilled)
    }
}
