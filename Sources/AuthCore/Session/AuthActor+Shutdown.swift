internal import Logging

extension AuthActor {
    /// Waits for the work the actor started in the background: the refresh in flight, if
    /// any, and the revocations logout started; a device login still waiting is cancelled. Call at shutdown, before the transport and
    /// the executor stop, so that nothing is left waiting on them.
    public func finishBackgroundWork() async {
        // A device login still waiting for a person cannot end in a login once the process
        // stops: it is cancelled, and its polling task awaited.
        // A shared one goes on on the other processes: its polling lease is given up, so
        // that one of them takes it at once (and polls an interval later).
        if let task = deviceFlow?.task {
            let shared = deviceFlow?.shared
            cancelDeviceLogin()
            await task.value
            if let shared, let deviceCoordinator { await deviceCoordinator.releaseDevicePolling(shared, for: account) }
        }
        await finishRevocations()
        while let task = refreshTask {
            await task.value
            if refreshTask == task { refreshTask = nil }
        }
        await flushPendingCredentials()
    }

    /// Waits for the refresh in flight only when the token endpoint has already answered it,
    /// then saves a pair held only in memory; returns at once when neither is pending. The
    /// server has by then rotated the pair and spent the previous refresh token, so what is
    /// left is a store write, and losing it leaves the next start only a spent refresh token.
    /// Shutdown calls this once its cap on ``finishBackgroundWork()`` has expired: a request
    /// still waiting on the token endpoint is given up on, a pair already issued is not.
    public func finishSavingIssuedTokens() async {
        while inFlight?.answered == true, let task = refreshTask {
            await task.value
            if refreshTask == task { refreshTask = nil }
        }
        await flushPendingCredentials()
    }

    /// Saves a pair held only in memory (its save failed after a rotation: the previous
    /// refresh token is already spent at the server), whatever the retry backoff says — at
    /// shutdown there is no later. Returns whether nothing is left unsaved; a failure is
    /// logged as an error, since the next start will present a spent refresh token.
    @discardableResult
    public func flushPendingCredentials() async -> Bool {
        guard needsPersist else { return true }
        persistRetryAt = clock.now
        await persistPendingCredentials()
        if needsPersist {
            logger.error(
                "rotated tokens could not be saved before stopping; the next start has only the spent refresh token",
                metadata: ["auth.generation": "\(status.generation.map { "\($0)" } ?? "none")"])
            return false
        }
        return true
    }
}
