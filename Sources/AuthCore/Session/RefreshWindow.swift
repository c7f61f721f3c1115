/// The refresh-loop guard's window: at most ``maximumAttempts`` counted refreshes within
/// ``interval`` on the monotonic clock (after Alamofire's `RefreshWindow`).
///
/// ``AuthActor`` counts only *premature* refreshes here: those that replace a token younger
/// than `min(lifetime / 2, interval)` (see ``RefreshGate/admit(at:replacing:)``), i.e. the
/// upstream rejected a fresh token. Refreshes of tokens that reached their refresh instant or
/// expired are never counted, whatever the token lifetime, so short-lived tokens do not trip
/// the guard. A counted refresh beyond the limit fails with
/// ``AuthError/Code/excessiveRefresh`` instead of hammering the authorization server while
/// an upstream rejects every new token (REFERENCES.md item 5).
public struct RefreshWindow: Sendable, Equatable {
    /// The window length. It also caps how young a rejected token must be to count.
    public var interval: Duration
    /// The counted refreshes allowed in one window.
    public var maximumAttempts: Int
    private var starts: [MonotonicInstant] = []

    /// Creates a guard.
    public init(interval: Duration = .seconds(30), maximumAttempts: Int = 5) {
        self.interval = interval
        self.maximumAttempts = maximumAttempts
    }

    /// Records a refresh at `now` and returns `true` when it is within the limit; returns
    /// `false` (and records nothing) when it is not.
    public mutating func admit(at now: MonotonicInstant) -> Bool {
        starts.removeAll { now - $0 >= interval }
        guard starts.count < maximumAttempts else { return false }
        starts.append(now)
        return true
    }

    /// How long until the window admits a refresh again; `nil` when it would admit one at
    /// `now`.
    public func timeUntilNextSlot(at now: MonotonicInstant) -> Duration? {
        let live = starts.filter { now - $0 < interval }
        guard live.count >= maximumAttempts else { return nil }
        // The window frees a slot when enough of the oldest starts have left it.
        let freeing = live.sorted()[live.count - maximumAttempts]
        return freeing + interval - now
    }

    /// Forgets past refreshes (a new session starts).
    public mutating func reset() {
        starts.removeAll()
    }
}
