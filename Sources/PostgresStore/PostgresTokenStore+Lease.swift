public import AuthCore
internal import Foundation
internal import Logging
internal import PostgresNIO

/// The cross-replica single flight (see ``AuthCore/RefreshCoordinator`` and ``LeaseRule``):
/// the lease is a row lock's worth of state kept in the row itself (owner, expiry on the
/// database's clock), renewed while the refresh is in flight; waiting replicas wake on the
/// holder's `NOTIFY`; the commit is compare-and-set on the row's generation.
extension PostgresTokenStore: RefreshCoordinator {
    /// Takes the lease on the pair whose access token is `accessToken`, waits for another
    /// replica's lease (woken by its notification, at most until it expires), or answers what
    /// is stored when that pair was replaced. Throws ``AuthCore/AuthError/Code/unavailable``
    /// when the database does not answer or the wait exceeds ``LeaseRule/Terms/maximumWait``.
    public func acquire(for account: AccountID, replacing accessToken: String) async throws -> RefreshClaim {
        let clock = ContinuousClock()
        let deadline = clock.now + leaseTerms.maximumWait
        // The hub counts this account's notifications only while someone here asks.
        return try await hub.watching(account.rawValue) {
            var first = true
            while true {
                let seen = hub.version(of: account.rawValue)
                let (decision, stored) = try await takeOrRead(account, replacing: accessToken, trySeen: first)
                first = false
                switch decision {
                case .take(let fence):
                    let lease = RefreshLease(owner: replicaID, fence: fence)
                    startRenewing(HeldLease(kind: .refresh, account: account, key: lease.owner, fence: Int64(lease.fence)))
                    return .granted(lease)
                case .superseded:
                    return .superseded(stored)
                case .wait(let atMost):
                    let left = deadline - clock.now
                    guard left > .zero else {
                        throw AuthError.store(
                            .unavailable, .tokens, account: account,
                            message: "another replica's refresh lease outlasted the wait")
                    }
                    // Woken by the holder's commit or release; at the latest when its lease lapses.
                    await hub.wait(for: account.rawValue, after: seen, timeout: min(atMost + .milliseconds(50), left))
                }
            }
        }
    }

    /// Reads the row and, when the rule says so, takes the lease: two single statements, two
    /// round trips (one when the rule says wait or superseded), no transaction. The take is
    /// a compare-and-set on what was read (the same generation, the lease still free or this
    /// replica's), so a change in between only makes it read again. A take that lands after
    /// its caller gave up holds a lease nobody uses, which lapses at its term. A take that
    /// lost to another replica's answers that replica's lease as the statement saw it, so the
    /// loser goes on to wait without reading the row again.
    ///
    /// With `trySeen`, when this replica saw the row hold the caller's pair at some generation
    /// (``SeenGenerations``), the take is tried first at that generation, without the read:
    /// one round trip when the pair is still there, as it is at every expiry. Otherwise the
    /// take changes nothing and the row is read as above.
    private func takeOrRead(_ account: AccountID, replacing accessToken: String, trySeen: Bool) async throws -> (
        LeaseRule.Decision, TokenRecord?
    ) {
        if trySeen, let fence = seen.generation(of: accessToken, for: account.rawValue) {
            switch try await take(account, fence: fence) {
            case nil:
                return (.take(fence: fence), nil)
            case let now? where now.fence == fence:
                // Still the caller's pair, under another replica's live lease: wait for it.
                let next = LeaseRule.decide(
                    LeaseRule.Row(storedAccessToken: accessToken, fence: now.fence, owner: now.owner, remaining: now.remaining),
                    replacing: accessToken, me: replicaID)
                if case .wait = next { return (next, nil) }
            case .some:
                break
            }
        }
        while true {
            let (row, stored) = try await leaseRow(account)
            let decision = LeaseRule.decide(row, replacing: accessToken, me: replicaID)
            guard case .take(let fence) = decision else { return (decision, stored) }
            switch try await take(account, fence: fence) {
            case nil:
                return (decision, stored)
            case let seen?:
                // Still the same pair (same generation) under another's live lease: wait.
                let now = LeaseRule.Row(
                    storedAccessToken: seen.fence == fence ? accessToken : nil, fence: seen.fence, owner: seen.owner,
                    remaining: seen.remaining)
                let next = LeaseRule.decide(now, replacing: accessToken, me: replicaID)
                if case .wait = next { return (next, stored) }
            }
        }
    }

    /// The row as ``LeaseRule`` reads it, and the record it holds.
    private func leaseRow(_ account: AccountID) async throws -> (LeaseRule.Row?, TokenRecord?) {
        let sealer = self.sealer
        let seen = self.seen
        return try await run(account, .tokens) { client, table in
            let rows = try await client.query(
                """
                SELECT sealed, generation, lease_owner, EXTRACT(EPOCH FROM (lease_until - clock_timestamp()))::float8
                FROM \(unescaped: table) WHERE account = \(account.rawValue)
                """)
            var row: LeaseRule.Row?
            var stored: TokenRecord?
            for try await (sealed, generation, owner, remaining) in rows.decode((Data?, Int64, String?, Double?).self) {
                stored = try sealed.map { try sealer.open(Array($0), for: account) }
                seen.remember(stored?.accessToken, generation: generation, for: account.rawValue)
                row = LeaseRule.Row(
                    storedAccessToken: stored?.accessToken, fence: UInt64(generation), owner: owner,
                    remaining: remaining.map { .milliseconds(Int64($0 * 1000)) })
            }
            return (row, stored)
        }
    }

    /// Takes the lease at `fence` if the row is still at that generation and nobody else
    /// holds a live lease (what ``LeaseRule/decide(_:replacing:me:)`` said when it read it):
    /// `nil` when taken, otherwise the row's generation and lease as the statement's snapshot
    /// saw them (from before a take that raced it may still show the lease free; the caller
    /// then reads the row again).
    private func take(_ account: AccountID, fence: UInt64) async throws -> LeaseRule.Row? {
        let me = replicaID
        let seconds = Double(leaseTerms.term / .milliseconds(1)) / 1000
        let fence = Int64(fence)
        return try await run(account, .tokens) { client, table in
            let rows = try await client.query(
                """
                WITH u AS (
                UPDATE \(unescaped: table) SET lease_owner = \(me),
                lease_until = clock_timestamp() + make_interval(secs => \(seconds))
                WHERE account = \(account.rawValue) AND generation = \(fence) AND sealed IS NOT NULL
                AND (lease_owner IS NULL OR lease_owner = \(me) OR lease_until IS NULL OR lease_until <= clock_timestamp())
                RETURNING 1)
                SELECT (SELECT count(*) FROM u)::int8, generation, lease_owner,
                EXTRACT(EPOCH FROM (lease_until - clock_timestamp()))::float8
                FROM \(unescaped: table) WHERE account = \(account.rawValue)
                """)
            var seen: LeaseRule.Row?
            var taken = false
            for try await (count, generation, owner, remaining) in rows.decode((Int64, Int64, String?, Double?).self) {
                taken = count > 0
                seen = LeaseRule.Row(
                    storedAccessToken: nil, fence: UInt64(generation), owner: owner,
                    remaining: remaining.map { .milliseconds(Int64($0 * 1000)) })
            }
            if taken { return nil }
            return seen ?? LeaseRule.Row(storedAccessToken: nil, fence: 0)
        }
    }

    /// Stores `record` only if the row's generation is still the lease's fence (no refresh,
    /// login or logout since), clears the lease, and notifies the other replicas: one
    /// statement, one round trip. Otherwise answers what is stored now.
    ///
    /// It needs no transaction with a commit point (see ``transaction(_:_:_:)``): the fence
    /// is what keeps a late commit from replacing anything newer. Should it land after its
    /// caller was told it failed, it stores the pair the authorization server issued last
    /// for that generation, which is the one the caller keeps serving and commits again.
    public func commit(_ record: TokenRecord, for account: AccountID, lease: RefreshLease) async throws -> RefreshCommit {
        stopRenewing(.refresh, for: account)
        let sealed = Data(try sealer.seal(record, for: account))
        let fence = Int64(lease.fence)
        let channel = self.channel
        let committed = try await run(account, .tokens) { client, table in
            let rows = try await client.query(
                .notifying(
                    "refreshed", account: account, on: channel,
                    """
                    UPDATE \(unescaped: table) SET sealed = \(sealed), generation = generation + 1, lease_owner = NULL,
                    lease_until = NULL, updated_at = now()
                    WHERE account = \(account.rawValue) AND generation = \(fence) AND sealed IS NOT NULL
                    """))
            var generation: Int64?
            for try await (g) in rows.decode(Int64.self) { generation = g }
            return generation
        }
        if let committed {
            seen.remember(record.accessToken, generation: committed, for: account.rawValue)
            return .committed
        }
        return .superseded(try await load(for: account) as TokenRecord?)
    }

    /// Gives `lease` up (the refresh failed) and wakes the replicas waiting for it: one
    /// statement, fenced on the owner and the generation, so a late one changes nothing.
    public func release(_ lease: RefreshLease, for account: AccountID) async {
        stopRenewing(.refresh, for: account)
        let fence = Int64(lease.fence)
        let payload = NotificationHub.Change(kind: "released", account: account.rawValue, generation: lease.fence).payload
        let channel = self.channel
        do {
            try await run(account, .tokens) { client, table in
                _ = try await client.query(
                    """
                    WITH r AS (
                    UPDATE \(unescaped: table) SET lease_owner = NULL, lease_until = NULL
                    WHERE account = \(account.rawValue) AND lease_owner = \(lease.owner) AND generation = \(fence)
                    RETURNING 1)
                    SELECT pg_notify(\(channel), \(payload)), (SELECT count(*) FROM r)
                    """)
            }
        } catch {
            // It lapses on its own within a term.
            logger.info("refresh lease not released; it lapses at its term", metadata: ["auth.lease": "\(lease)"])
        }
    }
}
