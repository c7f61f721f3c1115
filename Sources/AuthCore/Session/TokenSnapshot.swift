/// What a session's token looks like at one instant, readable without a hop onto the
/// ``AuthActor`` (``AuthActor/tokenSnapshot``).
///
/// Decisions that must be taken synchronously — the replay rule, inside an upstream
/// response's head callback — read it; anything that changes the session still goes
/// through the actor.
public struct TokenSnapshot: Sendable, Equatable {
    /// The generation of the current access token.
    public var generation: TokenGeneration
    /// When ``AuthActor/token()`` will refresh before handing the token out (the expiry
    /// less the refresh lead), on the actor's monotonic clock; `nil` when it never expires.
    public var refreshAt: MonotonicInstant?

    /// Creates a snapshot.
    public init(generation: TokenGeneration, refreshAt: MonotonicInstant?) {
        self.generation = generation
        self.refreshAt = refreshAt
    }

    /// Whether the token is due for a refresh at `now`.
    public func isDue(at now: MonotonicInstant) -> Bool {
        guard let refreshAt else { return false }
        return now >= refreshAt
    }
}
