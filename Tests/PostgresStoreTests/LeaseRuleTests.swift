import Testing

@testable import PostgresStore

/// The lease decision, on rows as the table can hold them.
struct LeaseRuleTests {
    typealias Row = LeaseRule.Row

    @Test func aFreeRowOnTheCallersPairIsTakenAtItsFence() {
        #expect(LeaseRule.decide(Row(storedAccessToken: "a1", fence: 7), replacing: "a1", me: "r1") == .take(fence: 7))
    }

    @Test func anotherReplicasLiveLeaseIsWaitedForAtMostItsRemainingTerm() {
        let row = Row(storedAccessToken: "a1", fence: 7, owner: "r2", remaining: .milliseconds(2500))
        #expect(LeaseRule.decide(row, replacing: "a1", me: "r1") == .wait(atMost: .milliseconds(2500)))
    }

    @Test func anExpiredLeaseOfADeadReplicaIsTakenOver() {
        for remaining in [Duration.zero, .milliseconds(-1), .seconds(-3600)] {
            let row = Row(storedAccessToken: "a1", fence: 7, owner: "r2", remaining: remaining)
            #expect(LeaseRule.decide(row, replacing: "a1", me: "r1") == .take(fence: 7))
        }
    }

    @Test func aReplicaKeepsItsOwnLease() {
        let row = Row(storedAccessToken: "a1", fence: 7, owner: "r1", remaining: .seconds(5))
        #expect(LeaseRule.decide(row, replacing: "a1", me: "r1") == .take(fence: 7))
    }

    @Test func aPairOtherThanTheCallersIsSupersededWhoeverHoldsTheLease() {
        for owner in [nil, "r1", "r2"] as [String?] {
            let row = Row(storedAccessToken: "a2", fence: 8, owner: owner, remaining: .seconds(5))
            #expect(LeaseRule.decide(row, replacing: "a1", me: "r1") == .superseded)
        }
    }

    @Test func noRowOrNoStoredSessionIsSuperseded() {
        #expect(LeaseRule.decide(nil, replacing: "a1", me: "r1") == .superseded)
        #expect(LeaseRule.decide(Row(storedAccessToken: nil, fence: 9), replacing: "a1", me: "r1") == .superseded)
    }

    @Test func renewalComesWellBeforeTheTermEnds() {
        for seconds in [1, 2, 10, 60] {
            let terms = LeaseRule.Terms(term: .seconds(seconds))
            #expect(terms.renewalInterval * 3 <= terms.term)
            #expect(terms.renewalInterval > .zero)
        }
        #expect(LeaseRule.Terms(term: .milliseconds(10)).term == .seconds(1))
    }
}
