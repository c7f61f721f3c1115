public import AuthCore
internal import Foundation
internal import Logging
internal import PostgresNIO

/// The device login the replicas share (see ``AuthCore/DeviceLoginCoordinator`` and
/// ``DevicePollRule``), kept in the account's row beside the tokens: its id, its codes
/// sealed as the tokens are (the device code is a secret), the interval polling has reached,
/// its outcome, and the polling lease (owner, expiry on the database's clock), renewed while
/// its holder lives. Every change is one statement that notifies the other replicas
/// (`device account generation`).
extension PostgresTokenStore: DeviceLoginCoordinator {
    /// The device login shared for `account`, whatever its state; nil when none is.
    public func sharedDeviceLogin(for account: AccountID) async throws -> SharedDeviceLogin? {
        let sealer = self.sealer
        return try await run(account, .tokens) { client, table in
            let rows = try await client.query(
                """
                SELECT device_id, device_sealed, device_outcome, device_interval_ms
                FROM \(unescaped: table) WHERE account = \(account.rawValue)
                """)
            for try await (id, sealed, outcome, interval) in rows.decode((String?, Data?, String?, Int64?).self) {
                guard let id, let sealed else { return nil }
                var login = try sealer.openDeviceLogin(Array(sealed), id: id, outcome: outcome, for: account)
                if let interval { login.status.interval = max(login.status.interval, .milliseconds(interval)) }
                return login
            }
            return nil
        }
    }

    /// Shares `login` (its codes sealed) if the row's device login is still `replacing`
    /// (compare-and-set); the row is created when absent. One statement, which also ends this
    /// replica's claim to start one.
    public func shareDeviceLogin(_ login: SharedDeviceLogin, replacing: String?, for account: AccountID) async throws -> Bool {
        stopRenewing(.deviceStart, for: account)
        let sealed = Data(try sealer.seal(login, for: account))
        let interval = Int64(login.status.interval / .milliseconds(1))
        let channel = self.channel
        return try await run(account, .tokens) { client, table in
            let rows = try await client.query(
                .notifying(
                    "device", account: account, on: channel,
                    """
                    INSERT INTO \(unescaped: table) AS t (account, device_id, device_sealed, device_interval_ms)
                    VALUES (\(account.rawValue), \(login.id), \(sealed), \(interval))
                    ON CONFLICT (account) DO UPDATE SET device_id = EXCLUDED.device_id, device_sealed = EXCLUDED.device_sealed,
                    device_interval_ms = EXCLUDED.device_interval_ms, device_outcome = NULL, device_owner = NULL,
                    device_until = NULL, device_starting = NULL, device_starting_until = NULL, updated_at = now()
                    WHERE t.device_id IS NOT DISTINCT FROM \(replacing)::text
                    """))
            var shared = false
            for try await _ in rows { shared = true }
            return shared
        }
    }

    /// Claims the start of a new device login in one statement: a compare-and-set on the
    /// shared login still being `replacing` and nobody else's live claim (the row is created
    /// when absent). The claim lasts a lease's term and is renewed while this replica lives,
    /// until it shares the codes (``shareDeviceLogin(_:replacing:for:)``) or gives the claim
    /// up (``releaseDeviceStart(for:)``).
    public func claimDeviceStart(replacing: String?, for account: AccountID) async throws -> DeviceStartClaim {
        let me = replicaID
        let seconds = Double(leaseTerms.term / .milliseconds(1)) / 1000
        let (claimed, current, remaining) = try await run(account, .tokens) {
            client, table -> (Bool, String?, Double?) in
            let rows = try await client.query(
                """
                WITH u AS (
                INSERT INTO \(unescaped: table) AS t (account, device_starting, device_starting_until)
                VALUES (\(account.rawValue), \(me), clock_timestamp() + make_interval(secs => \(seconds)))
                ON CONFLICT (account) DO UPDATE SET device_starting = EXCLUDED.device_starting,
                device_starting_until = EXCLUDED.device_starting_until
                WHERE t.device_id IS NOT DISTINCT FROM \(replacing)::text
                AND (t.device_starting IS NULL OR t.device_starting = \(me) OR t.device_starting_until IS NULL
                OR t.device_starting_until <= clock_timestamp())
                RETURNING 1)
                SELECT (SELECT count(*) FROM u)::int8, r.device_id,
                EXTRACT(EPOCH FROM (r.device_starting_until - clock_timestamp()))::float8
                FROM (SELECT 1) AS one LEFT JOIN \(unescaped: table) AS r ON r.account = \(account.rawValue)
                """)
            // One row, whether or not the statement's snapshot saw the account's (a row
            // another replica inserted meanwhile is not seen: read again shortly).
            for try await (count, id, remaining) in rows.decode((Int64, String?, Double?).self) {
                return (count > 0, id, remaining)
            }
            return (false, nil, nil)
        }
        if claimed {
            // Renewed while the codes are being asked for, however slow the endpoint: a
            // claim that lapsed meanwhile would let another replica ask for other codes.
            startRenewing(HeldLease(kind: .deviceStart, account: account, key: replacing ?? ""))
            return .start
        }
        stopRenewing(.deviceStart, for: account)
        if current != replacing { return .changed }
        guard let remaining, remaining > 0 else { return .wait(atMost: .milliseconds(100)) }
        return .wait(atMost: .milliseconds(Int64(remaining * 1000)))
    }

    /// Gives this replica's claim to start a device login up and notifies, so that another
    /// replica asks at once. A failure is logged: the claim lapses at its term.
    public func releaseDeviceStart(for account: AccountID) async {
        stopRenewing(.deviceStart, for: account)
        await releaseDeviceLease(.start, for: account)
    }

    /// Takes or keeps the polling lease of the login `id` in one statement (a
    /// compare-and-set on the lease being free, lapsed or this replica's), renewed from then
    /// on while this replica lives; otherwise says, as ``DevicePollRule`` decides, who polls
    /// or how the login ended.
    public func claimDevicePolling(_ id: String, for account: AccountID) async throws -> DevicePollClaim {
        let me = replicaID
        let seconds = Double(leaseTerms.term / .milliseconds(1)) / 1000
        let (taken, interval, row) = try await run(account, .tokens) { client, table -> (Bool, Int64?, DevicePollRule.Row?) in
            let rows = try await client.query(
                """
                WITH u AS (
                UPDATE \(unescaped: table) SET device_owner = \(me),
                device_until = clock_timestamp() + make_interval(secs => \(seconds))
                WHERE account = \(account.rawValue) AND device_id = \(id) AND device_outcome IS NULL
                AND (device_owner IS NULL OR device_owner = \(me) OR device_until IS NULL OR device_until <= clock_timestamp())
                RETURNING 1)
                SELECT (SELECT count(*) FROM u)::int8, device_interval_ms, device_id, device_outcome, device_owner,
                EXTRACT(EPOCH FROM (device_until - clock_timestamp()))::float8
                FROM \(unescaped: table) WHERE account = \(account.rawValue)
                """)
            for try await (count, interval, id, outcome, owner, remaining) in rows.decode(
                (Int64, Int64?, String?, String?, String?, Double?).self)
            {
                let row = DevicePollRule.Row(
                    id: id, outcome: outcome, owner: owner, remaining: remaining.map { .milliseconds(Int64($0 * 1000)) })
                return (count > 0, interval, row)
            }
            return (false, nil, nil)
        }
        if taken {
            startRenewing(HeldLease(kind: .devicePolling, account: account, key: id))
            return .poll(interval: .milliseconds(interval ?? 0))
        }
        switch DevicePollRule.decide(row, login: id, me: me) {
        case .ended(let outcome):
            stopRenewing(.devicePolling, for: account)
            return .ended(outcome)
        case .wait(let atMost):
            stopRenewing(.devicePolling, for: account)
            return .wait(atMost: atMost)
        case .take:
            // Another replica changed the lease between the statement's snapshot and its
            // update: read again shortly.
            return .wait(atMost: .milliseconds(100))
        }
    }

    /// Waits for a notification about `account` (a device login shared, ended, its lease
    /// given up; or any other change of the row), at most `atMost`; returns early when the
    /// calling task is cancelled.
    public func waitForDeviceChange(for account: AccountID, atMost: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now + atMost + .milliseconds(50)
        await hub.watching(account.rawValue) {
            let seen = hub.version(of: account.rawValue)
            while !Task.isCancelled, hub.version(of: account.rawValue) == seen {
                let left = deadline - clock.now
                guard left > .zero else { return }
                await hub.wait(for: account.rawValue, after: seen, timeout: min(left, .milliseconds(250)))
            }
        }
    }

    /// Records `interval` for the login `id`, if it is longer than the one recorded.
    public func recordDeviceInterval(_ interval: Duration, of id: String, for account: AccountID) async {
        let milliseconds = Int64(interval / .milliseconds(1))
        do {
            try await run(account, .tokens) { client, table in
                _ = try await client.query(
                    """
                    UPDATE \(unescaped: table) SET device_interval_ms = GREATEST(COALESCE(device_interval_ms, 0), \(milliseconds))
                    WHERE account = \(account.rawValue) AND device_id = \(id)
                    """)
            }
        } catch {
            logger.info("device login interval not recorded", metadata: ["store.error": "\(error)"])
        }
    }

    /// Ends the login `id` with `outcome` for every replica (when it has not ended yet), gives
    /// its lease up and notifies. A failure is logged: the other replicas then learn the
    /// outcome from the authorization server at their next poll.
    public func endDeviceLogin(_ id: String, outcome: String, for account: AccountID) async {
        stopRenewing(.devicePolling, for: account)
        let channel = self.channel
        do {
            try await run(account, .tokens) { client, table in
                _ = try await client.query(
                    .notifying(
                        "device", account: account, on: channel,
                        """
                        UPDATE \(unescaped: table) SET device_outcome = \(outcome), device_owner = NULL, device_until = NULL,
                        updated_at = now()
                        WHERE account = \(account.rawValue) AND device_id = \(id) AND device_outcome IS NULL
                        """))
            }
        } catch {
            logger.info("device login end not stored", metadata: ["store.error": "\(error)"])
        }
    }

    /// Gives the polling lease of the login `id` up (this replica stops) and notifies, so
    /// that another replica takes it at once. A failure is logged: the lease lapses at its term.
    public func releaseDevicePolling(_ id: String, for account: AccountID) async {
        stopRenewing(.devicePolling, for: account)
        await releaseDeviceLease(.polling(id), for: account)
    }

    /// The two leases a replica holds in the row: the claim to start a device login, and
    /// the polling lease of the login that waits.
    private enum DeviceLease {
        case start
        case polling(String)

        /// The columns of its holder and its term (constants, never input).
        var columns: (owner: String, until: String) {
            switch self {
            case .start: ("device_starting", "device_starting_until")
            case .polling: ("device_owner", "device_until")
            }
        }

        /// The login it is for; nil for the claim to start one.
        var login: String? {
            if case .polling(let id) = self { id } else { nil }
        }
    }

    /// Gives `lease` up if this replica holds it, and notifies, in one statement. A failure
    /// is logged: the lease lapses at its term.
    private func releaseDeviceLease(_ lease: DeviceLease, for account: AccountID) async {
        let channel = self.channel
        let me = replicaID
        let (owner, until) = lease.columns
        let login = lease.login
        do {
            try await run(account, .tokens) { client, table in
                _ = try await client.query(
                    .notifying(
                        "device", account: account, on: channel,
                        """
                        UPDATE \(unescaped: table) SET \(unescaped: owner) = NULL, \(unescaped: until) = NULL
                        WHERE account = \(account.rawValue) AND \(unescaped: owner) = \(me)
                        AND (\(login)::text IS NULL OR device_id = \(login)::text)
                        """))
            }
        } catch {
            logger.info(
                "device login lease not released; it lapses at its term",
                metadata: ["store.error": "\(error)", "store.lease": "\(owner)"])
        }
    }
}
