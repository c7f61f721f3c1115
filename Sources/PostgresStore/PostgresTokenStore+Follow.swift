public import AuthCore
internal import Logging

extension PostgresTokenStore {
    /// Keeps `sessions` (by account) in line with what the other replicas write, from now
    /// until the store stops: each notification about an account, and every reconnection of
    /// the listening connection (notifications may have been missed), has its session
    /// ``AuthCore/AuthActor/synchronize()``. ``run()`` does the following, in its own task
    /// group; a call after ``close()`` does nothing.
    ///
    /// A notification is only a reason to read the row again (anyone may send one, see
    /// ``NotificationHub``): `synchronize()` decides from the row alone. A burst of them about
    /// one account costs one read, not one each: a notification the hub numbered before the
    /// last read of its account began announces a commit that read already saw.
    public func follow(_ sessions: [AccountID: AuthActor]) {
        followed.add(sessions)
    }

    /// Follows `sessions` until the notifications end (the store stopped) or the task is
    /// cancelled (the run ended).
    func keepInLine(_ sessions: [AccountID: AuthActor]) async {
        let changes = hub.changes(for: Set(sessions.keys.map(\.rawValue)))
        // The account's version as its row was last read.
        var read: [String: UInt64] = [:]
        func reread(_ accounts: [AccountID]) async {
            for account in accounts {
                guard let actor = sessions[account] else { continue }
                read[account.rawValue] = hub.version(of: account.rawValue)
                await synchronize(actor)
            }
        }
        // Whatever changed between the sessions' restore and this subscription.
        await reread(Array(sessions.keys))
        for await change in changes {
            if change.account == "*" {
                await reread(Array(sessions.keys))
            } else if let last = read[change.account], change.version <= last {
                continue
            } else {
                await reread([AccountID(change.account)])
            }
        }
    }

    private func synchronize(_ actor: AuthActor) async {
        do {
            try await actor.synchronize()
        } catch {
            // A read the end of the run cancelled is no news.
            guard !Task.isCancelled else { return }
            logger.info(
                "session not synchronised with the store",
                metadata: ["auth.session": "\(actor.account)", "store.error": "\(error)"])
        }
    }
}
