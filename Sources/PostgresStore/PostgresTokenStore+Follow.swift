public import AuthCore
internal import Logging

extension PostgresTokenStore {
    /// Keeps `sessions` (by account) in line with what the other replicas write: each
    /// notification about an account, and every reconnection of the listening connection
    /// (notifications may have been missed), has its session ``AuthCore/AuthActor/synchronize()``.
    /// Returns when the store is closed.
    public func follow(_ sessions: [AccountID: AuthActor]) async {
        let changes = hub.changes()
        // Whatever changed between the sessions' restore and this subscription.
        await synchronize(Array(sessions.values))
        for await change in changes {
            let targets = change.account == "*" ? Array(sessions.values) : sessions[AccountID(change.account)].map { [$0] } ?? []
            await synchronize(targets)
        }
    }

    private func synchronize(_ actors: [AuthActor]) async {
            for actor in actors {
                do {
                    try await actor.synchronize()
                } catch {
                    logger.info(
                        "session not synchronised with the store",
                        metadata: ["auth.session": "\(actor.account)", "store.error": "\(error)"])
                }
            }
    }
}
