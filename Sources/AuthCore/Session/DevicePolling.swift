/// When to poll the token endpoint during a device login, and when to stop (RFC 8628 §3.4,
/// §3.5): a pure value that takes each poll's outcome and returns the next action.
///
/// - `authorization_pending`: poll again after the interval.
/// - `slow_down`: the interval grows by 5 s for this and every later poll (§3.5).
/// - `expired_token`: the login failed (``DeviceLoginEnd/expired``); so does any poll that
///   would come at or after the codes' expiry.
/// - `access_denied`: the login failed (``DeviceLoginEnd/denied``).
/// - Another OAuth error with 400 or 401 (`invalid_grant`, `invalid_client`, …), or an
///   unusable success: the login failed (``DeviceLoginEnd/rejected(code:)``).
/// - No answer, 5xx, 429, a non-OAuth body, a credential file that cannot be used now:
///   poll again later, the wait doubling with each such failure in a row (§3.5 asks for
///   an exponential backoff on timeouts), at most ``maximumBackoff``, and never sooner than
///   a `Retry-After`.
/// - Tokens: done.
///
/// ```swift
/// var polling = DevicePolling(interval: .seconds(5), expiresIn: .seconds(600), startedAt: clock.now)
/// var action = polling.start(now: clock.now)
/// while case .poll(let wait) = action {
///     try await clock.sleep(for: wait)
///     action = polling.next(after: outcome(of: try? await poll()), now: clock.now)
/// }
/// ```
public struct DevicePolling: Sendable, Equatable {
    /// What a poll came back with.
    public enum Outcome: Sendable, Equatable {
        /// Tokens were issued.
        case issued
        /// An OAuth error (`authorization_pending`, `slow_down`, …) with a 400 or 401.
        case refused(String)
        /// Nothing usable came back and asking again may work: no answer, 5xx, 429, a
        /// non-OAuth body; `retryAfter` when the server said.
        case unavailable(retryAfter: Duration?)
        /// The answer cannot be used and asking again cannot help (`code` says why).
        case unusable(String)
    }

    /// What to do next.
    public enum Action: Sendable, Equatable {
        /// Poll the token endpoint after waiting this long.
        case poll(after: Duration)
        /// The session is logged in with the issued tokens.
        case succeed
        /// The login failed.
        case fail(DeviceLoginEnd)
    }

    /// The longest wait between two polls after failures in a row.
    public static let maximumBackoff = Duration.seconds(60)
    /// The shortest interval honoured: a server's `interval: 0` must not make a busy loop.
    public static let minimumInterval = Duration.seconds(1)
    /// What `slow_down` adds to the interval (§3.5).
    public static let slowDownStep = Duration.seconds(5)

    /// The interval between polls now.
    public private(set) var interval: Duration
    /// When the codes expire, on the monotonic clock.
    public let deadline: MonotonicInstant
    /// Polls in a row that got no usable answer.
    public private(set) var consecutiveFailures = 0

    /// Starts the schedule of a device authorization answered at `startedAt`.
    public init(interval: Duration, expiresIn: Duration, startedAt: MonotonicInstant) {
        self.interval = max(interval, Self.minimumInterval)
        self.deadline = startedAt + expiresIn
    }

    /// The first action: wait one interval, then poll (§3.4).
    public func start(now: MonotonicInstant) -> Action {
        schedule(after: interval, now: now)
    }

    /// Takes over the interval another process polled at (it grew with its `slow_down`s):
    /// the interval never shrinks.
    public mutating func adopt(interval other: Duration) {
        interval = max(interval, other)
    }

    /// The action after a poll that came back with `outcome` at `now`.
    public mutating func next(after outcome: Outcome, now: MonotonicInstant) -> Action {
        switch outcome {
        case .issued:
            return .succeed
        case .refused("authorization_pending"):
            consecutiveFailures = 0
            return schedule(after: interval, now: now)
        case .refused("slow_down"):
            consecutiveFailures = 0
            interval += Self.slowDownStep
            return schedule(after: interval, now: now)
        case .refused("expired_token"):
            return .fail(.expired)
        case .refused("access_denied"):
            return .fail(.denied)
        case .refused(let code), .unusable(let code):
            return .fail(.rejected(code: code))
        case .unavailable(let retryAfter):
            consecutiveFailures += 1
            var wait = interval
            for _ in 0..<min(consecutiveFailures, 8) where wait < Self.maximumBackoff { wait = wait * 2 }
            wait = min(wait, Self.maximumBackoff)
            if let retryAfter { wait = max(wait, retryAfter) }
            return schedule(after: wait, now: now)
        }
    }

    /// Polls after `wait` unless that is at or past the deadline.
    private func schedule(after wait: Duration, now: MonotonicInstant) -> Action {
        now + wait < deadline ? .poll(after: wait) : .fail(.expired)
    }

    /// The outcome a failed poll's error stands for: an OAuth error answered with 400 or
    /// 401 is the server's word on the login; an answer that was not understood cannot be
    /// polled past (the server may have spent the code); anything transient is asked again.
    public static func outcome(of error: AuthError) -> Outcome {
        let error = error.code == .loginFailed ? error.underlyingAuthError ?? error : error
        if let oauth = error.oauthError, [400, 401].contains(error.status ?? 0) { return .refused(oauth.error) }
        switch error.code {
        case .invalidTokenSyntax, .malformedResponse, .invalidConfiguration:
            return .unusable(error.code.name)
        default:
            break
        }
        if error.disposition == .terminal { return .unusable(error.oauthError?.error ?? error.code.name) }
        return .unavailable(retryAfter: error.retryAfter)
    }
}
