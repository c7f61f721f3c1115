import Testing

@testable import PostgresStore

/// Who polls a shared device login's code, on rows as the table can hold them.
struct DevicePollRuleTests {
    typealias Row = DevicePollRule.Row

    @Test func aWaitingLoginWithNoPollerIsTaken() {
        #expect(DevicePollRule.decide(Row(id: "d1"), login: "d1", me: "r1") == .take)
    }

    @Test func thePollersOwnLeaseIsKept() {
        let row = Row(id: "d1", owner: "r1", remaining: .seconds(8))
        #expect(DevicePollRule.decide(row, login: "d1", me: "r1") == .take)
    }

    @Test func anotherReplicasLivePollingLeaseIsWaitedForAtMostItsRemainingTerm() {
        let row = Row(id: "d1", owner: "r2", remaining: .milliseconds(2500))
        #expect(DevicePollRule.decide(row, login: "d1", me: "r1") == .wait(atMost: .milliseconds(2500)))
    }

    @Test func aLapsedPollingLeaseOfADeadReplicaIsTakenOver() {
        for remaining in [Duration.zero, .milliseconds(-1), .seconds(-3600)] {
            let row = Row(id: "d1", owner: "r2", remaining: remaining)
            #expect(DevicePollRule.decide(row, login: "d1", me: "r1") == .take)
        }
        #expect(DevicePollRule.decide(Row(id: "d1", owner: "r2", remaining: nil), login: "d1", me: "r1") == .take)
    }

    @Test func anEndedLoginIsNotPolledWhoeverHeldTheLease() {
        for outcome in ["approved", "access_denied", "expired_token", "cancelled"] {
            for row in [Row(id: "d1", outcome: outcome), Row(id: "d1", outcome: outcome, owner: "r2", remaining: .seconds(9))] {
                #expect(DevicePollRule.decide(row, login: "d1", me: "r1") == .ended(outcome))
            }
        }
    }

    @Test func aLoginReplacedByAnotherOrGoneIsNotPolled() {
        #expect(DevicePollRule.decide(Row(id: "d2"), login: "d1", me: "r1") == .ended(nil))
        #expect(DevicePollRule.decide(Row(id: nil), login: "d1", me: "r1") == .ended(nil))
        #expect(DevicePollRule.decide(nil, login: "d1", me: "r1") == .ended(nil))
    }
}
