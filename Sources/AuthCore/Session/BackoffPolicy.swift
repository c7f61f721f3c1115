/// Exponential backoff after transient refresh failures: 1 s, 2 s, 4 s, … up to 5 minutes
/// by default, like Vault Agent's renewal, with a random extra share (``jitter``) so
/// replicas that failed together do not retry together.
///
/// A server's `Retry-After` is honoured within bounds: never shorter than the current step
/// (`Retry-After: 0` does not turn the backoff off) and never longer than ``maximum``
/// (`Retry-After: 99999999` does not stop refreshing until the next login).
public struct BackoffPolicy: Sendable, Equatable {
    /// The first delay.
    public var initial: Duration
    /// The largest delay.
    public var maximum: Duration
    /// The growth factor per consecutive failure.
    public var multiplier: Int
    /// The largest random extra share of a delay, in `0...1`: a delay `d` becomes
    /// `d × (1 + jitter × r)` for a random `r` in `0..<1`, capped at ``maximum``.
    public var jitter: Double

    /// Creates a policy.
    public init(
        initial: Duration = .seconds(1), maximum: Duration = .seconds(300), multiplier: Int = 2, jitter: Double = 0.25
    ) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.multiplier = max(1, multiplier)
        self.jitter = jitter.isFinite ? min(1, max(0, jitter)) : 0
    }

    /// The delay after `failures` consecutive failures (1 → ``initial``), without jitter.
    public func delay(afterConsecutiveFailures failures: Int) -> Duration {
        var delay = initial
        var remaining = max(0, failures - 1)
        while remaining > 0, delay < maximum {
            delay = delay * multiplier
            remaining -= 1
        }
        return min(delay, maximum)
    }

    /// The delay to honour after a failure, without jitter: the server's `Retry-After`
    /// clamped to [the exponential step, ``maximum``], or the step when there is none.
    public func delay(afterConsecutiveFailures failures: Int, retryAfter: Duration?) -> Duration {
        delay(afterConsecutiveFailures: failures, retryAfter: retryAfter, randomFraction: 0)
    }

    /// The delay to honour after a failure: as ``delay(afterConsecutiveFailures:retryAfter:)``,
    /// plus the jitter share drawn by `randomFraction` (a value in `0..<1`; others are
    /// clamped), never past ``maximum``.
    public func delay(afterConsecutiveFailures failures: Int, retryAfter: Duration?, randomFraction: Double) -> Duration {
        let step = delay(afterConsecutiveFailures: failures)
        let base = retryAfter.map { min(max($0, step), maximum) } ?? step
        let r = randomFraction.isFinite ? min(1, max(0, randomFraction)) : 0
        return min(base + base * (jitter * r), maximum)
    }
}
