/// Whether a refresh may start now: the pure decision behind ``AuthActor``'s backoff after
/// transient failures and its refresh-loop guard. A value with no I/O, tested on its own.
public struct RefreshGate: Sendable, Equatable {
    /// The answer to "may a refresh start now?".
    public enum Decision: Sendable, Equatable {
        /// Start it.
        case proceed
        /// A transient failure is being backed off; try again after `retryAfter`.
        case backingOff(retryAfter: Duration, lastError: TokenEndpointError?)
        /// Too many refreshes in the window.
        case excessive
    }

    /// The backoff policy.
    public let policy: BackoffPolicy
    /// The loop guard.
    public private(set) var window: RefreshWindow
    /// Consecutive transient failures since the last success.
    public private(set) var consecutiveFailures = 0
    /// No refresh before this instant.
    public private(set) var notBefore: MonotonicInstant?
    /// The last transient failure.
    public private(set) var lastError: TokenEndpointError?

    /// Creates a gate.
    public init(policy: BackoffPolicy, window: RefreshWindow) {
        self.policy = policy
        self.window = window
    }

    /// Decides whether a refresh may start at `now`; a `.proceed` counts against the window.
    public mutating func admit(at now: MonotonicInstant) -> Decision {
        if let notBefore, now < notBefore {
            return .backingOff(retryAfter: notBefore - now, lastError: lastError)
        }
        return window.admit(at: now) ? .proceed : .excessive
    }

    /// Records a transient failure at `now` and returns the backoff it starts: the server's
    /// `Retry-After` when sent, otherwise the policy's exponential delay.
    public mutating func recordTransientFailure(_ error: TokenEndpointError, at now: MonotonicInstant) -> Duration {
        consecutiveFailures += 1
        let delay = policy.delay(afterConsecutiveFailures: consecutiveFailures, retryAfter: error.retryAfter)
        notBefore = now + delay
        lastError = error
        return delay
    }

    /// Records a successful refresh: the backoff starts over.
    public mutating func recordSuccess() {
        consecutiveFailures = 0
        notBefore = nil
        lastError = nil
    }

    /// Forgets everything (a new session starts).
    public mutating func reset() {
        recordSuccess()
        window.reset()
    }
}
