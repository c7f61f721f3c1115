/// Who may refresh an account's pair now, decided from its row alone: the pure part of the
/// cross-replica single flight, tested without a database.
///
/// A lease is an owner and an expiry on the database's clock (`lease_until`); the pair is
/// fenced by the row's `generation`, which every write of the tokens bumps (refresh, login,
/// logout).
public enum LeaseRule {
    /// What the row says.
    public struct Row: Sendable, Equatable {
        /// The access token of the stored pair; `nil` when no session is stored.
        public var storedAccessToken: String?
        /// The row's generation (the fence).
        public var fence: UInt64
        /// Who holds the lease, if anyone ever took it and did not give it up.
        public var owner: String?
        /// How long the lease has left on the database's clock (negative: expired).
        public var remaining: Duration?

        /// Creates a row.
        public init(storedAccessToken: String?, fence: UInt64, owner: String? = nil, remaining: Duration? = nil) {
            self.storedAccessToken = storedAccessToken
            self.fence = fence
            self.owner = owner
            self.remaining = remaining
        }
    }

    /// The decision.
    public enum Decision: Sendable, Equatable {
        /// Take (or keep) the lease on the pair of this fence and refresh it.
        case take(fence: UInt64)
        /// The stored pair is not the one the caller holds (another replica refreshed,
        /// logged in or out): adopt what is stored, refresh nothing.
        case superseded
        /// Another replica holds a live lease: wait for its outcome (a notification), at
        /// most this long (then it has expired: its holder died).
        case wait(atMost: Duration)
    }

    /// The decision for `me`, who holds the pair whose access token is `accessToken`, on
    /// `row` (`nil`: the account has no row).
    public static func decide(_ row: Row?, replacing accessToken: String, me: String) -> Decision {
        guard let row, let stored = row.storedAccessToken, stored == accessToken else { return .superseded }
        if let owner = row.owner, owner != me, let remaining = row.remaining, remaining > .zero {
            return .wait(atMost: remaining)
        }
        return .take(fence: row.fence)
    }

    /// How long a lease lasts and how often its holder renews it.
    public struct Terms: Sendable, Equatable {
        /// The term granted by each take or renewal.
        public var term: Duration
        /// How long a replica waits for another's lease in all before it gives up (503).
        public var maximumWait: Duration

        /// Creates terms; `term` is at least a second.
        public init(term: Duration = .seconds(10), maximumWait: Duration = .seconds(30)) {
            self.term = max(term, .seconds(1))
            self.maximumWait = maximumWait
        }

        /// Renew at a third of the term: two renewals can be lost (a slow database, a
        /// pause) before the lease lapses while its holder still works.
        public var renewalInterval: Duration { term / 3 }
    }
}
