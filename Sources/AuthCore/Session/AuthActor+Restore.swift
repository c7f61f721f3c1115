internal import Logging

extension AuthActor {
    /// Restores the session from the stores, with no network call. Call once at start,
    /// before serving.
    ///
    /// Reconciliation: state "logged in" with tokens → restored; state "logged in" without
    /// tokens → state rewritten as logged out; tokens without state "logged in" (a crash
    /// during login or logout) → tokens deleted. A token record that cannot be read
    /// (corrupt, wrong key) throws ``AuthError/Code/storage`` and leaves the files alone.
    /// A record whose tokens break ``TokenSyntax`` (written before the checks existed, or
    /// tampered with: a CR or LF would end up in a header) counts as no tokens, and is
    /// deleted; the log names the field, never the value.
    @discardableResult
    public func restore() async throws -> SessionStatus {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        if case .active = phase { return status }
        let loaded: (state: SessionState?, record: TokenRecord?)
        do {
            loaded = try await loadStored()
        } catch {
            logger.info("session not restored", metadata: ["auth.store.error": "\(error)"])
            throw error
        }
        let state = loaded.state
        var record = loaded.record
        if let stored = record, let field = TokenSyntax.violation(in: stored) {
            logger.info(
                "stored tokens refused: the \(field) breaks its syntax; treated as no tokens and deleted",
                metadata: ["auth.store.invalid_field": "\(field)", "auth.generation": "\(stored.generation)"])
            // Generations stay monotonic, as if the record had been restored and ended.
            lastGeneration = max(lastGeneration, stored.generation)
            record = nil
            try? await tokenStore.delete(for: account)
        }
        sessionState = state ?? .loggedOut
        switch (state?.isLoggedIn ?? false, record) {
        case (true, let record?):
            let credentials = record.credentials(now: clock.now, wallNow: clock.wallNow)
            lastGeneration = max(lastGeneration, credentials.generation)
            epoch += 1
            let dpop = dpopKey(for: record.dpop)
            phase = .active(
                makeSession(
                    credentials, grantType: record.grantType, dpopKey: try? dpop.get(), storedDPoP: record.dpop,
                    certificate: record.certificate))
            logger.info("session restored", metadata: ["auth.generation": "\(credentials.generation)"])
            if case .failure(let mismatch) = dpop, mismatch.code == .dpopKeyChanged {
                // Tokens bound to a key no proof can be made with any more end here, once.
                logger.notice("the stored tokens are bound to another DPoP key than the configured one; logging out")
                // A shared store keeps them for the replicas that hold their key.
                _ = try? await endSessionLocked(reason: .keyChanged, persist: !coordinator.sharesStore)
            }
        case (true, nil):
            sessionState.isLoggedIn = false
            sessionState.updatedAt = clock.wallNow
            phase = .loggedOut(.tokensMissing)
            logger.info("state said logged in but no tokens were stored; now logged out")
            try? await stateStore.save(sessionState, for: account)
        case (false, .some) where coordinator.sharesStore:
            // Another process may be between the two writes of its login or logout: its
            // state write, or its delete, is on the way; deleting here would undo its login.
            logger.info("tokens without a logged-in state left alone: the store is shared")
        case (false, .some):
            logger.info("leftover tokens from an unfinished login or logout deleted")
            try? await tokenStore.delete(for: account)
        case (false, nil):
            break
        }
        events.publish(.restored(status), status: status)
        return status
    }

    /// What the stores hold for this session: the session state, then the token record (in
    /// one read when one ``SessionRowStore`` keeps both). Throws ``AuthError/Code/storage``
    /// (the store's error underneath) when either cannot be read.
    func loadStored() async throws -> (state: SessionState?, record: TokenRecord?) {
        do {
            if let row = tokenStore as? any SessionRowStore, let states = stateStore as? any SessionRowStore,
                row === states
            {
                return try await row.loadSession(for: account)
            }
            let state = try await stateStore.load(for: account)
            let record = try await tokenStore.load(for: account)
            return (state, record)
        } catch {
            throw AuthError.storage(error)
        }
    }
}
