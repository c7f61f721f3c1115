import TestSupport
import Testing

/// The tests' polls count only the time they were watching: a poller that waited for a
/// thread has not seen its condition fail, and one that watched for its whole timeout gives
/// up however the machine was loaded.
struct PollDeadlineTests {
    let start = ContinuousClock.now
    let interval = Duration.milliseconds(10)

    @Test func aPollerRunOnTimeGivesUpAtItsTimeout() {
        var deadline = PollDeadline(timeout: .seconds(1), start: start)
        var now = start
        while !deadline.expired(at: now) {
            let next = now + interval + .milliseconds(5)
            deadline.looked(from: now, to: next, expected: interval)
            now = next
        }
        #expect(now - start >= .seconds(1))
        #expect(now - start < .seconds(1) + interval * 2)
    }

    @Test func timeSpentWaitingForAThreadDoesNotCount() {
        var deadline = PollDeadline(timeout: .seconds(60), start: start)
        // The pool was held for 70 s during the first look: the poll has watched for no
        // more than the slack then, so it goes on.
        let back = start + .seconds(70)
        deadline.looked(from: start, to: back, expected: interval)
        #expect(!deadline.expired(at: back))
        #expect(deadline.end == start + .seconds(130) - interval - PollDeadline.slack)
    }

    @Test func ordinaryLatenessCountsAsWatching() {
        var deadline = PollDeadline(timeout: .seconds(1), start: start)
        deadline.looked(from: start, to: start + interval + PollDeadline.slack, expected: interval)
        #expect(deadline.end == start + .seconds(1))
    }

    @Test func aPollerStarvedForeverStillGivesUpAtTheCeiling() {
        var deadline = PollDeadline(timeout: .seconds(1), start: start)
        var now = start
        for _ in 0..<100 {
            let next = now + .seconds(5)
            deadline.looked(from: now, to: next, expected: interval)
            now = next
        }
        #expect(deadline.end == start + .seconds(PollDeadline.ceiling))
        #expect(deadline.expired(at: now))
    }
}
