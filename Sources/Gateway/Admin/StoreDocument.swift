public import AuthCore

/// What the admin API can ask about the store that keeps the sessions: its kind, this
/// replica's name in it and who holds a session's refresh lease (see docs/SCALE-OUT.md).
public struct StoreView: Sendable {
    /// `file` or `postgres`.
    public let kind: String
    /// This replica's name in the lease column (postgres only).
    public let replica: String?
    /// Whether the store can take a write now.
    public let isWritable: @Sendable () -> Bool
    /// The replica refreshing an account now, and how long its lease still runs.
    public let leaseHolder: @Sendable (AccountID) async throws -> (owner: String, remaining: Duration)?

    /// A view of `stores`.
    public init(_ stores: GatewayStores) {
        self.init(kind: stores.kind, replica: stores.replica, isWritable: stores.isWritable, leaseHolder: stores.leaseHolder)
    }

    /// A view from its parts; the defaults describe a process-local store with no lease.
    public init(
        kind: String, replica: String? = nil, isWritable: @escaping @Sendable () -> Bool = { true },
        leaseHolder: @escaping @Sendable (AccountID) async throws -> (owner: String, remaining: Duration)? = { _ in nil }
    ) {
        self.kind = kind
        self.replica = replica
        self.isWritable = isWritable
        self.leaseHolder = leaseHolder
    }

    /// The `store` member of `account`'s session document, read now. A database that does
    /// not answer is `reachable: false` with no lease, never an error of the whole document.
    func document(for account: AccountID) async -> StoreDocument {
        guard replica != nil else {
            return StoreDocument(kind: kind, replica: nil, reachable: isWritable(), lease: nil)
        }
        do {
            let holder = try await leaseHolder(account)
            return StoreDocument(
                kind: kind, replica: replica, reachable: true,
                lease: holder.map {
                    StoreDocument.Lease(holder: $0.owner, thisReplica: $0.owner == replica, remaining: $0.remaining)
                })
        } catch {
            return StoreDocument(kind: kind, replica: replica, reachable: false, lease: nil)
        }
    }
}

/// The `store` member of a session document: which store keeps the session and, when
/// replicas share it, which of them is refreshing it now. Holds no token.
struct StoreDocument: Codable, Sendable, Equatable {
    /// A live refresh lease.
    struct Lease: Codable, Sendable, Equatable {
        /// The replica name of the holder.
        var holder: String
        /// Whether the holder is the replica answering.
        var thisReplica: Bool
        /// Seconds the lease still runs unless renewed, to the millisecond.
        var expiresInSeconds: Double

        init(holder: String, thisReplica: Bool, remaining: Duration) {
            self.holder = holder
            self.thisReplica = thisReplica
            expiresInSeconds = Double(remaining / .milliseconds(1)) / 1000
        }

        private enum CodingKeys: String, CodingKey {
            case holder
            case thisReplica = "this_replica"
            case expiresInSeconds = "expires_in_seconds"
        }
    }

    /// `file` or `postgres`.
    var kind: String
    /// This replica's name in the shared store (null for files).
    var replica: String?
    /// Whether the store answered (postgres) or can be written (files).
    var reachable: Bool
    /// The live refresh lease of the session, null when no replica is refreshing it.
    var lease: Lease?

    private enum CodingKeys: String, CodingKey { case kind, replica, reachable, lease }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(replica, forKey: .replica)
        try c.encode(reachable, forKey: .reachable)
        try c.encode(lease, forKey: .lease)
    }

    /// One line for a person: `postgres, replica b/2/9; refreshing now: a/1/7 (2.5 s left)`.
    var summary: String {
        guard let replica else { return kind + (reachable ? "" : " (not writable)") }
        let lease: String
        if !reachable {
            lease = "the database does not answer"
        } else if let l = self.lease {
            lease = "refreshing now: \(l.thisReplica ? "this replica" : l.holder) (\(l.expiresInSeconds) s left)"
        } else {
            lease = "no refresh in flight"
        }
        return "\(kind), replica \(replica); \(lease)"
    }
}
