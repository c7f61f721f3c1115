internal import Locking

/// The generation at which this replica last saw each account's pair, with the pair's access
/// token: read with it in one statement, or written by this replica.
///
/// Every write of a row's tokens (login, refresh, logout) moves its generation on, and rows
/// are never deleted, so a row still at a generation this replica saw still holds the pair it
/// saw then. A refresh of that pair can therefore try to take the lease at once, fenced on the
/// generation, instead of reading the row first: one round trip less at every expiry. Should
/// the row have moved on, the take does nothing and the refresh reads the row as before.
final class SeenGenerations: Sendable {
    private struct Seen {
        var accessToken: String
        var generation: UInt64
    }
    private let seen = Locked<[String: Seen]>([:])

    /// Remembers that `account`'s row held the pair of `accessToken` at `generation`; with no
    /// token (no session stored), forgets the account.
    func remember(_ accessToken: String?, generation: Int64?, for account: String) {
        guard let accessToken, let generation, generation > 0 else {
            forget(account)
            return
        }
        seen.withLock { $0[account] = Seen(accessToken: accessToken, generation: UInt64(generation)) }
    }

    /// Forgets what was seen of `account`.
    func forget(_ account: String) {
        _ = seen.withLock { $0.removeValue(forKey: account) }
    }

    /// The generation at which `account`'s row was seen holding the pair of `accessToken`.
    func generation(of accessToken: String, for account: String) -> UInt64? {
        seen.withLock { s in
            guard let entry = s[account], entry.accessToken == accessToken else { return nil }
            return entry.generation
        }
    }
}
