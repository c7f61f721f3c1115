public import AuthCore
internal import PostgresNIO

extension PostgresTokenStore {
    /// Who holds the refresh lease of one account, as the row says on the database's clock.
    public struct LeaseHolder: Sendable, Equatable {
        /// The holder's replica name (``PostgresTokenStore/replicaID`` of that replica).
        public let owner: String
        /// How long the lease still runs unless renewed.
        public let remaining: Duration

        /// Creates a holder.
        public init(owner: String, remaining: Duration) {
            self.owner = owner
            self.remaining = remaining
        }
    }

    /// The replica refreshing `account` now (a live lease), or nil when none is: no refresh
    /// is in flight anywhere, or the last holder's lease lapsed. Throws
    /// ``AuthCore/AuthError/Code/unavailable`` when the database does not answer.
    public func leaseHolder(for account: AccountID) async throws -> LeaseHolder? {
        try await run(account, .tokens) { client, table in
            let rows = try await client.query(
                """
                SELECT lease_owner, EXTRACT(EPOCH FROM (lease_until - clock_timestamp()))::float8
                FROM \(unescaped: table)
                WHERE account = \(account.rawValue) AND lease_owner IS NOT NULL AND lease_until > clock_timestamp()
                """)
            var holder: LeaseHolder?
            for try await (owner, remaining) in rows.decode((String, Double).self) {
                holder = LeaseHolder(owner: owner, remaining: .milliseconds(Int64((remaining * 1000).rounded())))
            }
            return holder
        }
    }
}
