/// Who may poll the token endpoint with a shared device login's code now, decided from the
/// row alone: the pure part of the device login the replicas share, tested without a
/// database. The polling lease is an owner and an expiry on the database's clock
/// (`device_owner`, `device_until`), as the refresh lease is (``LeaseRule``).
public enum DevicePollRule {
    /// What the row says of its device login.
    public struct Row: Sendable, Equatable {
        /// The shared device login's id; nil when none is shared.
        public var id: String?
        /// How it ended (`approved` or a device login end's code); nil while it waits.
        public var outcome: String?
        /// Who holds the polling lease, if anyone took it and did not give it up.
        public var owner: String?
        /// How long the lease has left on the database's clock (negative: lapsed).
        public var remaining: Duration?

        /// Creates a row.
        public init(id: String?, outcome: String? = nil, owner: String? = nil, remaining: Duration? = nil) {
            self.id = id
            self.outcome = outcome
            self.owner = owner
            self.remaining = remaining
        }
    }

    /// The decision.
    public enum Decision: Sendable, Equatable {
        /// Take (or keep) the polling lease and poll.
        case take
        /// Another replica polls: wait at most this long (then its lease has lapsed: its
        /// holder died or stopped, and this replica takes over).
        case wait(atMost: Duration)
        /// The login ended with this outcome; nil when another took its place (or none is
        /// shared any more).
        case ended(String?)
    }

    /// The decision for `me`, polling the shared device login `id`, on `row` (nil: the
    /// account has no row).
    public static func decide(_ row: Row?, login id: String, me: String) -> Decision {
        guard let row, row.id == id else { return .ended(nil) }
        if let outcome = row.outcome { return .ended(outcome) }
        if let owner = row.owner, owner != me, let remaining = row.remaining, remaining > .zero {
            return .wait(atMost: remaining)
        }
        return .take
    }
}
