import Gateway
import Testing

/// The order in which requests reach an upstream bounded by `maxInFlight`: first come, first
/// served, replays ahead of first tries, and every slot accounted for.
@Suite struct AdmissionQueueTests {
    /// Admits each ticket in turn; the admissions in order.
    func admit(_ q: inout AdmissionQueue, _ tickets: [UInt64], lane: AdmissionQueue.Lane = .first) -> [AdmissionQueue.Admission] {
        tickets.map { q.admit($0, lane: lane) }
    }

    /// Releases `count` slots; the tickets each hand-over named.
    func release(_ q: inout AdmissionQueue, _ count: Int) -> [UInt64?] {
        (0..<count).map { _ in q.release() }
    }

    @Test func requestsProceedUpToTheLimitThenWait() {
        var q = AdmissionQueue(limit: 2)
        let firsts = admit(&q, [1, 2, 3])
        let replay = q.admit(4, lane: .replay)
        #expect(firsts == [.proceed, .proceed, .wait])
        #expect(replay == .wait)
        #expect(q.inFlight == 2)
        #expect(q.waiting == 2)
    }

    @Test func aReleasedSlotGoesToReplaysFirstThenFirstTriesInOrder() {
        var q = AdmissionQueue(limit: 1)
        let firsts = admit(&q, [0, 1, 2, 3])
        let replays = admit(&q, [10, 11], lane: .replay)
        #expect(firsts == [.proceed, .wait, .wait, .wait])
        #expect(replays == [.wait, .wait])
        let handed = release(&q, 5)
        #expect(handed == [10, 11, 1, 2, 3])
        #expect(q.inFlight == 1, "each hand-over keeps the slot taken")
        let last = q.release()
        #expect(last == nil)
        #expect(q.inFlight == 0)
    }

    @Test func nobodyOvertakesWaitersEvenWhenASlotIsFree() {
        var q = AdmissionQueue(limit: 1)
        _ = admit(&q, [1, 2])
        let overtook = q.admitWithoutWaiting()
        #expect(!overtook)
        let handed = release(&q, 2)
        #expect(handed == [2, nil])
        let free = q.admitWithoutWaiting()
        #expect(free)
    }

    @Test func aWithdrawnTicketIsSkippedAndAHandedOverOneMustBeReleased() {
        var q = AdmissionQueue(limit: 1)
        _ = admit(&q, [1, 2])
        _ = q.admit(3, lane: .replay)
        let withdrawn = [q.withdraw(3), q.withdraw(3)]
        #expect(withdrawn == [true, false], "only once")
        let handed = q.release()
        #expect(handed == 2)
        let late = q.withdraw(2)
        #expect(!late, "2 holds the slot now")
        let last = q.release()
        #expect(last == nil)
        #expect(q.inFlight == 0 && q.waiting == 0)
    }

    @Test func aSmallerLimitAdmitsNobodyUntilEnoughHaveLeft() {
        var q = AdmissionQueue(limit: 3)
        #expect(admit(&q, [1, 2, 3, 4, 5]) == [.proceed, .proceed, .proceed, .wait, .wait])
        #expect(q.setLimit(1).isEmpty)
        #expect(q.limit == 1 && q.inFlight == 3)
        #expect(release(&q, 2) == [nil, nil], "the slots of the old limit are not handed on")
        #expect(q.inFlight == 1)
        #expect(q.release() == 4, "within the new limit again: the next waiter proceeds")
        #expect(q.inFlight == 1 && q.waiting == 1)
    }

    @Test func aLargerLimitAdmitsWaitersAtOnceReplaysFirst() {
        var q = AdmissionQueue(limit: 1)
        #expect(admit(&q, [1, 2, 3]) == [.proceed, .wait, .wait])
        #expect(q.admit(9, lane: .replay) == .wait)
        #expect(q.setLimit(3) == [9, 2])
        #expect(q.inFlight == 3 && q.waiting == 1)
        #expect(q.admit(10, lane: .first) == .wait, "nobody overtakes the one still waiting")
    }

    @Test func limitChangesInAnySequenceNeverAdmitBeyondTheLimit() {
        var rng = SystemRandomNumberGenerator()
        var q = AdmissionQueue(limit: 2)
        var holding = 0
        var waiting: Set<UInt64> = []
        for ticket in UInt64(0)..<2_000 {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:
                if q.admit(ticket, lane: Bool.random(using: &rng) ? .first : .replay) == .proceed {
                    holding += 1
                    #expect(q.inFlight <= q.limit)
                } else {
                    waiting.insert(ticket)
                }
            case 1 where holding > 0:
                holding -= 1
                if let next = q.release() {
                    let wasWaiting = waiting.remove(next) != nil
                    #expect(wasWaiting)
                    holding += 1
                    #expect(q.inFlight <= q.limit, "a slot is handed on only within the limit")
                }
            case 2:
                let admitted = q.setLimit(Int.random(in: 1...4, using: &rng))
                for t in admitted {
                    let wasWaiting = waiting.remove(t) != nil
                    #expect(wasWaiting)
                }
                holding += admitted.count
                if !admitted.isEmpty { #expect(q.inFlight <= q.limit) }
            default:
                if let w = waiting.randomElement(using: &rng) {
                    let withdrawn = q.withdraw(w)
                    #expect(withdrawn)
                    waiting.remove(w)
                }
            }
            #expect(q.inFlight == holding && q.waiting == waiting.count)
        }
    }

    @Test func everySequenceKeepsTheSlotsWithinTheLimit() {
        // Random admits, releases and withdrawals: in flight never exceeds the limit, no
        // ticket is handed a slot twice, and draining returns to zero.
        var rng = SystemRandomNumberGenerator()
        for limit in 1...4 {
            var q = AdmissionQueue(limit: limit)
            var holding: [UInt64] = []
            var waiting: Set<UInt64> = []
            var handed: Set<UInt64> = []
            for ticket in UInt64(0)..<500 {
                switch Int.random(in: 0..<3, using: &rng) {
                case 0:
                    let lane: AdmissionQueue.Lane = Bool.random(using: &rng) ? .first : .replay
                    if q.admit(ticket, lane: lane) == .proceed { holding.append(ticket) } else { waiting.insert(ticket) }
                case 1 where !holding.isEmpty:
                    holding.removeFirst()
                    if let next = q.release() {
                        let wasWaiting = waiting.remove(next) != nil
                        let firstTime = handed.insert(next).inserted
                        #expect(wasWaiting && firstTime)
                        holding.append(next)
                    }
                default:
                    if let w = waiting.randomElement(using: &rng) {
                        let left = q.withdraw(w)
                        #expect(left)
                        waiting.remove(w)
                    }
                }
                #expect(q.inFlight <= limit)
                #expect(q.inFlight == holding.count)
                #expect(q.waiting == waiting.count)
            }
            while !holding.isEmpty {
                holding.removeFirst()
                if let next = q.release() {
                    waiting.remove(next)
                    holding.append(next)
                }
            }
            #expect(q.inFlight == 0 && q.waiting == 0)
        }
    }
}
