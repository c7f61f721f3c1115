internal import AuthCore
internal import Logging
internal import PostgresNIO

extension PostgresTokenStore {
    /// A lease this replica holds and renews until it gives it up: a refresh lease (its
    /// owner and fence), a device login's polling lease (the login's id), or the claim to
    /// start a device login (the id of the login it replaces).
    struct HeldLease: Sendable, Equatable {
        enum Kind: Sendable, Hashable {
            case refresh
            case devicePolling
            case deviceStart
        }

        var kind: Kind
        var account: AccountID
        /// The refresh lease's owner, the device login's id, or for the claim to start one
        /// the id of the login it replaces ("" for none).
        var key: String
        /// The refresh lease's fence (unused for a polling lease).
        var fence: Int64 = 0
    }

    /// Renews `lease` from now on, in place of any lease of its kind for its account.
    func startRenewing(_ lease: HeldLease) {
        held.withLock { $0[HeldKey(kind: lease.kind, account: lease.account.rawValue)] = lease }
    }

    /// Stops renewing the lease of `kind` for `account`.
    func stopRenewing(_ kind: HeldLease.Kind, for account: AccountID) {
        held.withLock { $0[HeldKey(kind: kind, account: account.rawValue)] = nil }
    }

    /// Renews every held lease every ``LeaseRule/Terms/renewalInterval``, all at once, until
    /// the task is cancelled; one that the row shows lost (committed, released, taken over or
    /// ended) is dropped. Runs in ``run()``'s group, so no lease outlives the store.
    ///
    /// A lease taken between two rounds is renewed at the next, within one interval, as a
    /// timer of its own would; each renewal is a single statement that only moves the
    /// expiry on while this replica still holds the lease as it took it, so a late one can
    /// never overwrite anything newer.
    func renewHeldLeases() async {
        let interval = leaseTerms.renewalInterval
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            let leases = held.withLock { Array($0) }
            await withDiscardingTaskGroup { group in
                for (key, lease) in leases {
                    group.addTask { [self] in
                        guard await renew(lease) == 0 else { return }
                        held.withLock { if $0[key] == lease { $0[key] = nil } }
                        if lease.kind == .refresh {
                            logger.notice(
                                "refresh lease lost before the refresh finished", metadata: ["auth.lease": "\(lease.key)"])
                        }
                    }
                }
            }
        }
    }

    /// Moves the expiry of `lease` one term on; returns the rows renewed (0: not held any
    /// more), nil when the database could not be asked.
    private func renew(_ lease: HeldLease) async -> Int? {
        let seconds = Double(leaseTerms.term / .milliseconds(1)) / 1000
        let account = lease.account.rawValue
        let me = replicaID
        return try? await run(lease.account, .tokens) { client, table in
            let rows: PostgresRowSequence
            switch lease.kind {
            case .refresh:
                rows = try await client.query(
                    """
                    UPDATE \(unescaped: table) SET lease_until = clock_timestamp() + make_interval(secs => \(seconds))
                    WHERE account = \(account) AND lease_owner = \(lease.key) AND generation = \(lease.fence)
                    RETURNING 1
                    """)
            case .devicePolling:
                rows = try await client.query(
                    """
                    UPDATE \(unescaped: table) SET device_until = clock_timestamp() + make_interval(secs => \(seconds))
                    WHERE account = \(account) AND device_id = \(lease.key) AND device_owner = \(me)
                    AND device_outcome IS NULL
                    RETURNING 1
                    """)
            case .deviceStart:
                rows = try await client.query(
                    """
                    UPDATE \(unescaped: table)
                    SET device_starting_until = clock_timestamp() + make_interval(secs => \(seconds))
                    WHERE account = \(account) AND device_starting = \(me) AND COALESCE(device_id, '') = \(lease.key)
                    RETURNING 1
                    """)
            }
            var count = 0
            for try await _ in rows { count += 1 }
            return count
        }
    }
}

/// Which lease of an account a ``PostgresTokenStore/HeldLease`` is.
struct HeldKey: Sendable, Hashable {
    var kind: PostgresTokenStore.HeldLease.Kind
    var account: String
}
