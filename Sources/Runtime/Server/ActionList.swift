/// The actions one ``Connection/StateMachine`` event returns, in order, held inline: the
/// first ``inlineCapacity`` live in the value itself, so returning and running them touches
/// no heap. Only a list longer than that (no event returns one; tests append their lists
/// together) spills the rest into an array.
///
/// It reads like an array: indexed from 0, iterable, comparable with an array literal.
///
/// It is written for its one element type, not generic: a generic struct this large is
/// copied and destroyed through its runtime metadata (the compiler calls the value witness
/// of `ActionList<Action>`, which walks the fields one by one, and reads each slot's enum
/// tag through `Action`'s own witness). That cost about 1,200 instructions per proxied
/// request; the concrete type's code does the same inline.
struct ActionList: RandomAccessCollection, RangeReplaceableCollection {
    /// What the list holds.
    typealias Element = Connection.StateMachine.Action

    /// How many elements are held without an allocation. The longest list an event returns
    /// is 5 (a response that finishes its exchange: write, release the budget, reset, arm the
    /// timer, drain; a close: release, fail the stream, notify, fail the writers, close; a
    /// failure without a response to write: fail the stream, pause, shut down, resume, arm).
    /// Each slot costs every event its copy and destruction (through the list's value
    /// witness), so there are no more slots than that: 8 cost about 1,000 instructions per
    /// proxied request more than 5. A longer list spills, and stays correct.
    static var inlineCapacity: Int { 5 }

    // The inline slots, as separate properties: reading one copies that one element. (An
    // `InlineArray` of a generic element, or a tuple, was copied whole through the runtime's
    // generic metadata on every read, which cost more than the allocation it saved.)
    private var s0: Element?
    private var s1: Element?
    private var s2: Element?
    private var s3: Element?
    private var s4: Element?
    private var inlineCount = 0
    /// The elements past ``inlineCapacity``, in order.
    private var spill: [Element] = []

    /// An empty list.
    init() {}

    /// A list of one element (an array literal would build an array first).
    init(_ element: Element) {
        append(element)
    }

    /// Whether some elements live outside the value (tests check the capacity with it).
    var spilled: Bool { !spill.isEmpty }

    var startIndex: Int { 0 }
    var endIndex: Int { inlineCount + spill.count }

    subscript(position: Int) -> Element {
        precondition(position >= 0 && position < endIndex, "ActionList index out of range")
        // Invariant: every slot below `inlineCount` holds an element.
        return position < inlineCount ? slot(position)! : spill[position - inlineCount]
    }

    /// Appends `element` after the others.
    mutating func append(_ element: Element) {
        if inlineCount < Self.inlineCapacity {
            setSlot(inlineCount, element)
            inlineCount += 1
        } else {
            spill.append(element)
        }
    }

    private func slot(_ i: Int) -> Element? {
        switch i {
        case 0: s0
        case 1: s1
        case 2: s2
        case 3: s3
        default: s4
        }
    }

    private mutating func setSlot(_ i: Int, _ element: Element) {
        switch i {
        case 0: s0 = element
        case 1: s1 = element
        case 2: s2 = element
        case 3: s3 = element
        default: s4 = element
        }
    }

    /// Replaces the elements in `bounds` by `newElements` (the list is rebuilt: tests and
    /// rare paths only; events only ``append(_:)``).
    mutating func replaceSubrange<C: Collection>(_ bounds: Range<Int>, with newElements: C) where C.Element == Element {
        precondition(bounds.lowerBound >= 0 && bounds.upperBound <= endIndex, "ActionList range out of bounds")
        var rebuilt = ActionList()
        for i in 0..<bounds.lowerBound { rebuilt.append(self[i]) }
        for e in newElements { rebuilt.append(e) }
        for i in bounds.upperBound..<endIndex { rebuilt.append(self[i]) }
        self = rebuilt
    }
}

extension ActionList: ExpressibleByArrayLiteral {
    /// A list of `elements`, in order. The literal is an array first: events return `[]`
    /// (no allocation) or build their lists with ``append(_:)``; tests compare with literals.
    init(arrayLiteral elements: Element...) {
        self.init()
        for e in elements { append(e) }
    }
}

extension ActionList: Equatable {
    /// Whether both lists hold equal elements in the same order.
    static func == (lhs: ActionList, rhs: ActionList) -> Bool {
        lhs.elementsEqual(rhs)
    }
}

extension ActionList: CustomStringConvertible {
    /// The elements as an array prints them (test failures show this).
    var description: String { Array(self).description }
}
