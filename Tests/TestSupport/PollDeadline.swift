/// The end of a poll whose timeout counts only the time the poller was running.
///
/// A look at the condition is expected to take `expected` (the poll interval) plus
/// ``slack``; when the poller comes back later than that, it was waiting for a thread, not
/// looking, and the extra time moves the end back. So a timeout means "the condition stayed
/// false while it was watched for this long", whatever else held the machine. The end never
/// moves past ``ceiling`` times the timeout after the start, so a poller that keeps being
/// starved still gives up.
public struct PollDeadline: Sendable {
    /// Lateness up to this much is ordinary scheduling and counts as looking.
    public static let slack: Duration = .milliseconds(100)
    /// How many timeouts after the start the end may move to at most.
    public static let ceiling = 10

    /// When the poll gives up, as of the looks recorded so far.
    public private(set) var end: ContinuousClock.Instant
    private let latest: ContinuousClock.Instant

    /// A poll that starts at `start` and may watch for `timeout`.
    public init(timeout: Duration, start: ContinuousClock.Instant) {
        end = start + timeout
        latest = start + timeout * Self.ceiling
    }

    /// Records one look that began at `from` and came back at `to` when it should have
    /// taken `expected`.
    public mutating func looked(from: ContinuousClock.Instant, to: ContinuousClock.Instant, expected: Duration) {
        let starved = (to - from) - expected - Self.slack
        if starved > .zero { end = min(end + starved, latest) }
    }

    /// Whether the poll has watched for its whole timeout at `now`.
    public func expired(at now: ContinuousClock.Instant) -> Bool { now >= end }
}
