extension AuthActor {
    /// The current access token when it can be handed out without a hop onto the actor: a
    /// session is active, its token is not due for a refresh, and no rotated pair waits to be
    /// saved. `nil` otherwise, and then ``token()`` decides (it refreshes, retries the save or
    /// throws).
    ///
    /// What it returns is what ``token()`` would return at this instant; it can be superseded
    /// a moment later, as any token can, and a rejection of it goes through
    /// ``refresh(after:)`` like any other.
    public nonisolated func tokenWithoutWaiting() -> AccessToken? {
        guard !holdsUnsavedCredentials else { return nil }
        let now = clock.now
        // Only the token leaves the lock, and only when it is not due: the snapshot is read
        // in place, and only the token is copied (not the pair first, then the token).
        return published.withLock { current in
            guard current?.snapshot.isDue(at: now) == false else { return nil }
            return current?.token
        }
    }
}
