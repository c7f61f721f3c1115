/// Whether a refresh may start now: the pure decision behind ``AuthActor``'s backoff after
/// transient failures and its refresh-loop guard. A value with no I/O, tested on its own.
public struct RefreshGate: Sendable, Equatable {
    /// The answer to "may a refresh start now?".
    public enum Decision: Sendable, Equatable {
        /// Start it.
        case proceed
        /// A transient failure is being backed off; try again after `retryAfter`.
        case backingOff(retryAfter: Duration, lastError: AuthError?)
        /// Too many premature refreshes in the window: something rejects every new token.
        case excessive
    }

    /// The token a refresh would replace, as the loop guard sees it.
    public struct CurrentToken: Sendable, Equatable {
        /// Its generation.
        public var generation: TokenGeneration
        /// When it was obtained, on the monotonic clock.
        public var obtainedAt: MonotonicInstant
        /// Its lifetime as issued (deadline − obtained); `nil` when the server gave no expiry.
        public var lifetime: Duration?

        /// Creates a description of the current token.
        public init(generation: TokenGeneration, obtainedAt: MonotonicInstant, lifetime: Duration?) {
            self.generation = generation
            self.obtainedAt = obtainedAt
            self.lifetime = lifetime
        }
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
    public private(set) var lastError: AuthError?
    /// Whether the loop guard refused a refresh and has not admitted a counted one since.
    /// A trip starts when this turns `true`; ``AuthActor`` logs and publishes once per trip.
    public private(set) var isLoopGuardTripped = false
    /// The generation whose premature refresh was last counted: retries of it after a
    /// transient failure are the backoff's business and are not counted again.
    private var countedGeneration: TokenGeneration?

    /// Creates a gate.
    public init(policy: BackoffPolicy, window: RefreshWindow) {
        self.policy = policy
        self.window = window
    }

    /// Decides whether a refresh may start at `now`, counting it against the window whatever
    /// it replaces. ``AuthActor`` uses ``admit(at:replacing:)``.
    public mutating func admit(at now: MonotonicInstant) -> Decision {
        if let notBefore, now < notBefore {
            return .backingOff(retryAfter: notBefore - now, lastError: lastError)
        }
        return countAgainstWindow(at: now) ? .proceed : .excessive
    }

    /// Decides whether a refresh that replaces `current` may start at `now`.
    ///
    /// - During a backoff: ``Decision/backingOff(retryAfter:lastError:)``.
    /// - Only a *premature* refresh counts against the window: one that replaces a token
    ///   younger than ``prematurityThreshold(for:)``, i.e. `min(lifetime / 2, interval)`
    ///   (the whole interval when the lifetime is unknown or not positive). A proactive
    ///   refresh is never premature (its lead is at most half the lifetime), nor is a 401 for
    ///   a token near its expiry. Each generation counts at most once, so retries after a
    ///   transient failure do not count again.
    /// - A premature refresh beyond ``RefreshWindow/maximumAttempts`` within
    ///   ``RefreshWindow/interval`` is ``Decision/excessive``.
    ///
    /// `dueToLead` says the refresh was asked for because the token reached its refresh
    /// instant (`expiry − lead`), not because an upstream rejected it: such a refresh is
    /// never premature whatever the lead (`refreshLead: "90%"` refreshes at a tenth of the
    /// lifetime), as long as the token has a positive lifetime.
    public mutating func admit(
        at now: MonotonicInstant, replacing current: CurrentToken, dueToLead: Bool = false
    ) -> Decision {
        if let notBefore, now < notBefore {
            return .backingOff(retryAfter: notBefore - now, lastError: lastError)
        }
        if dueToLead, let lifetime = current.lifetime, lifetime > .zero { return .proceed }
        guard isPremature(current, at: now), current.generation != countedGeneration else { return .proceed }
        guard countAgainstWindow(at: now) else { return .excessive }
        countedGeneration = current.generation
        return .proceed
    }

    /// How young a replaced token must be for its refresh to count against the window:
    /// `min(lifetime / 2, interval)`, or `interval` when the lifetime is unknown or ≤ 0
    /// (a token issued already expired would otherwise refresh on every call).
    public func prematurityThreshold(for current: CurrentToken) -> Duration {
        guard let lifetime = current.lifetime, lifetime > .zero else { return window.interval }
        return min(lifetime / 2, window.interval)
    }

    /// Whether refreshing `current` at `now` is premature (see ``admit(at:replacing:)``).
    public func isPremature(_ current: CurrentToken, at now: MonotonicInstant) -> Bool {
        now - current.obtainedAt < prematurityThreshold(for: current)
    }

    /// After ``Decision/excessive``: how long until a refresh replacing `current` would be
    /// admitted (the window frees a slot, or the token is no longer premature).
    public func loopGuardRetryAfter(at now: MonotonicInstant, replacing current: CurrentToken) -> Duration {
        let aged = current.obtainedAt + prematurityThreshold(for: current) - now
        guard let slot = window.timeUntilNextSlot(at: now) else { return max(.zero, aged) }
        return max(.zero, min(slot, aged))
    }

    /// Records a transient failure at `now` and returns the backoff it starts: the server's
    /// `Retry-After` when sent, otherwise the policy's exponential delay, with jitter.
    ///
    /// `Retry-After` is clamped to [the step, the maximum]; `randomFraction` (in `0..<1`)
    /// draws the jitter (see ``BackoffPolicy``).
    public mutating func recordTransientFailure(
        _ error: AuthError, at now: MonotonicInstant, randomFraction: Double = 0
    ) -> Duration {
        // A client credential file that cannot serve sent nothing to the server: there is no
        // server to spare, and the file is looked at again cheaply. Its backoff stays at the
        // first step, so a renewed file is used within a second, not after minutes of growth.
        let failures = error.code == .clientCredentialsUnusable ? 1 : consecutiveFailures + 1
        consecutiveFailures = failures
        let delay = policy.delay(
            afterConsecutiveFailures: failures, retryAfter: error.retryAfter, randomFraction: randomFraction)
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
        isLoopGuardTripped = false
        countedGeneration = nil
    }

    private mutating func countAgainstWindow(at now: MonotonicInstant) -> Bool {
        guard window.admit(at: now) else {
            isLoopGuardTripped = true
            return false
        }
        isLoopGuardTripped = false
        return true
    }
}
