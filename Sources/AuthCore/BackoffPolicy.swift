/// Exponential backoff after transient refresh failures: 1 s, 2 s, 4 s, … up to 5 minutes
/// by default, like Vault Agent's renewal. A server's `Retry-After` takes precedence.
public struct BackoffPolicy: Sendable, Equatable {
    /// The first delay.
    public var initial: Duration
    /// The largest delay.
    public var maximum: Duration
    /// The growth factor per consecutive failure.
    public var multiplier: Int

    /// Creates a policy.
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(300), multiplier: Int = 2) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = max(1, multiplier)
    }

    /// The delay after `failures` consecutive failures (1 → ``initial``).
    public func delay(afterConsecutiveFailures failures: Int) -> Duration {
        var delay = initial
        var remaining = max(0, failures - 1)
        while remaining > 0, delay < maximum {
            delay = delay * multiplier
            remaining -= 1
        }
        return min(delay, maximum)
    }

    /// The delay to honour after a failure: the server's `Retry-After` when it sent one,
    /// otherwise the exponential delay.
    public func delay(afterConsecutiveFailures failures: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return retryAfter }
        return delay(afterConsecutiveFailures: failures)
    }
}
