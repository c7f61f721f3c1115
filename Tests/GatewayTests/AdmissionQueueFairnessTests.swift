import Gateway
import Testing

/// The order of one origin's queue, which every adaptive route to that origin shares: in any
/// sequence of arrivals, releases, limit changes and withdrawals, tickets are admitted in the
/// order they arrived within their lane, replays before first tries, so no route's requests
/// overtake another's and each route is served in proportion to what it sent.
@Suite struct AdmissionQueueFairnessTests {
    struct Arrival {
        var ticket: UInt64
        var route: Int
        var lane: AdmissionQueue.Lane
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func routesSharingAnOriginAreServedInArrivalOrderReplaysFirst(seed: UInt64) {
        var rng = SeededGenerator(state: seed)
        var q = AdmissionQueue(limit: Int.random(in: 1...6, using: &rng))
        var waiting: [Arrival] = []  // in arrival order
        var admittedOrder: [Arrival] = []
        var holding = 0
        var arrivals: [Int: Int] = [:]
        for ticket in UInt64(0)..<3_000 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let a = Arrival(
                    ticket: ticket, route: Int.random(in: 0..<3, using: &rng),
                    lane: Int.random(in: 0..<5, using: &rng) == 0 ? .replay : .first)
                arrivals[a.route, default: 0] += 1
                if q.admit(a.ticket, lane: a.lane) == .proceed {
                    #expect(waiting.isEmpty, "nobody proceeds past a waiter")
                    holding += 1
                } else {
                    waiting.append(a)
                }
            case 4..<8 where holding > 0:
                holding -= 1
                if let next = q.release() {
                    admittedOrder.append(take(next, from: &waiting))
                    holding += 1
                }
            case 8:
                for t in q.setLimit(Int.random(in: 1...6, using: &rng)) {
                    admittedOrder.append(take(t, from: &waiting))
                    holding += 1
                }
            default:
                if !waiting.isEmpty, Int.random(in: 0..<4, using: &rng) == 0 {
                    let gone = waiting.remove(at: Int.random(in: 0..<waiting.count, using: &rng))
                    let withdrawn = q.withdraw(gone.ticket)
                    #expect(withdrawn)
                }
            }
            #expect(q.inFlight == holding && q.waiting == waiting.count)
        }
        #expect(!admittedOrder.isEmpty)
        #expect(arrivals.count == 3)
    }

    /// Removes `ticket` from `waiting`, checking it was the one the order names: the first
    /// waiting replay if any, else the first waiting first try.
    func take(_ ticket: UInt64, from waiting: inout [Arrival]) -> Arrival {
        let expected = waiting.firstIndex { $0.lane == .replay } ?? waiting.firstIndex { $0.lane == .first }
        let i = waiting.firstIndex { $0.ticket == ticket }
        #expect(i != nil && i == expected, "ticket \(ticket) was not next")
        return waiting.remove(at: i ?? 0)
    }

    @Test func aBusyRouteDoesNotStarveAQuietOneOnTheSameOrigin() {
        // Route 0 keeps 50 requests waiting; route 1 sends one now and then. Each of route 1's
        // waits is bounded by the requests ahead of it when it arrived, not by route 0's load.
        var q = AdmissionQueue(limit: 2)
        var waiting: [(ticket: UInt64, route: Int)] = []
        var next: UInt64 = 0
        func arrive(_ route: Int) {
            if q.admit(next, lane: .first) == .wait { waiting.append((next, route)) }
            next += 1
        }
        for _ in 0..<52 { arrive(0) }
        var releases = 0
        for round in 0..<200 {
            if round % 10 == 0 {
                arrive(1)
                let ahead = waiting.count - 1
                var served = 0
                while let t = q.release() {
                    served += 1
                    releases += 1
                    let i = waiting.firstIndex { $0.ticket == t }!
                    let w = waiting.remove(at: i)
                    if w.route == 0 { arrive(0) }  // route 0 sends again at once
                    if w.route == 1 { break }
                }
                #expect(served == ahead + 1, "route 1 waited only for those ahead of it")
            }
        }
        #expect(releases > 0)
    }
}
