/// The refresh-loop guard: at most ``maximumAttempts`` refreshes within ``interval`` on the
/// monotonic clock (Alamofire's `RefreshWindow`). A refresh beyond that fails with
/// ``AuthError/Code/excessiveRefresh`` instead of hammering the authorization server when
/// an upstream rejects every new token.
public struct RefreshWindow: Sendable, Equatable {
    /// The window length.
    public var interval: Duration
    /// The refreshes allowed in one window.
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

    /// Forgets past refreshes (a new session starts).
    public mutating func reset() {
        starts.removeAll()
    }
}
