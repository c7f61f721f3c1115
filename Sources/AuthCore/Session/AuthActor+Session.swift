internal import Foundation
internal import Logging
internal import CoreMetrics

extension AuthActor {
    /// Logs in by presenting `grant` to the token endpoint, then stores the tokens (first)
    /// and the session state (second). A session already logged in ends first
    /// (``LogoutReason/replacedByLogin``).
    ///
    /// - Parameter subject: the subject to record; by default the password grant's user
    ///   name, or the token's `sub` claim.
    @discardableResult
    public func login(_ grant: Grant, subject: String? = nil) async throws -> AccessToken {
        let response: TokenResponse
        let requestedAt = (clock.now, clock.wallNow)
        do {
            response = try await client.requestToken(grant)
        } catch let error as AuthError where error.code.domain == .tokenEndpoint {
            throw AuthError.loginFailed(error)
        }
        var subject = subject
        if subject == nil, case .password(let username, _, _) = grant { subject = username }
        return try await install(response, grantType: grant.grantType, subject: subject, requestedAt: requestedAt)
    }

    /// Logs in with tokens obtained elsewhere (no network). Tokens that break their syntax
    /// (``TokenSyntax``) are refused with ``AuthError/Code/loginFailed``.
    @discardableResult
    public func login(importing response: TokenResponse, subject: String? = nil) async throws -> AccessToken {
        if let field = TokenSyntax.violation(in: response) {
            throw AuthError.loginFailed(
                .tokenEndpoint(
                    .invalidTokenSyntax, .terminal, message: TokenSyntax.requirement(for: field), field: field))
        }
        return try await install(response, grantType: nil, subject: subject)
    }

    /// Installs a new session; `requestedAt` (when the token request left) is where the
    /// lifetime counts from, as for a refresh.
    private func install(
        _ response: TokenResponse, grantType: String?, subject: String?,
        requestedAt: (MonotonicInstant, Date)? = nil
    ) async throws -> AccessToken {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        if case .active = phase {
            _ = try? await endSessionLocked(reason: .replacedByLogin)
        }
        let generation = lastGeneration.next
        let obtainedAt = clock.now
        let credentials = Credentials(
            response: response, previousRefreshToken: nil, generation: generation, now: requestedAt?.0 ?? obtainedAt,
            wallNow: requestedAt?.1 ?? clock.wallNow)
        let subject =
            subject ?? JWTClaims(decodingPayloadOf: response.idToken ?? response.accessToken)?.subject
        do {
            try await tokenStore.save(TokenRecord(credentials, grantType: grantType), for: account)
        } catch {
            throw AuthError.storage(error)
        }
        let wallNow = clock.wallNow
        let newState = SessionState(
            isLoggedIn: true, subject: subject, lastLogin: wallNow, isGuest: false, updatedAt: wallNow)
        do {
            try await stateStore.save(newState, for: account)
        } catch {
            try? await tokenStore.delete(for: account)
            throw AuthError.storage(error)
        }
        lastGeneration = generation
        epoch += 1
        sessionState = newState
        let session = makeSession(credentials, grantType: grantType, obtainedAt: obtainedAt)
        phase = .active(session)
        gate.reset()
        needsPersist = false
        logger.info("logged in", metadata: ["auth.generation": "\(generation)", "auth.epoch": "\(epoch)"])
        events.publish(.loggedIn(status), status: status)
        return session.token
    }

    /// Ends the session: the state file says "logged out" first, then the tokens are
    /// deleted, then one ``AuthEvent/loggedOut(reason:epoch:)`` is published. Callers waiting
    /// for a refresh get ``AuthError/Code/sessionEnded``. Does nothing when logged out.
    ///
    /// The session ends in memory even when a store fails; the store error is thrown after.
    ///
    /// A logout someone asked for (``LogoutReason/userInitiated``) also revokes the ended
    /// session's tokens at the server when the client can (RFC 7009), in the background: a
    /// revocation that fails is logged and never undoes or delays the logout. Other
    /// endings (a refused refresh, a replacing login) revoke nothing, so an outage never
    /// costs a working session (REFERENCES.md item 8).
    public func logout(reason: LogoutReason = .userInitiated) async throws {
        var ended: Credentials?
        defer {
            if reason == .userInitiated, let ended {
                revokeInBackground(refreshToken: ended.refreshToken, accessToken: ended.accessToken)
                // A refresh of the ended session still in flight rotates at the server; its
                // new pair, dropped when it lands, is revoked then.
                if inFlight != nil || refreshTask != nil { revokingEpochs.insert(epoch - 1) }
            }
        }
        ended = try await endSession(reason: reason, onlyEpoch: nil)
    }

    /// Ends the session of `epoch` only: a newer session (a login since) is left alone.
    /// For callers that decided on what they saw of one session, such as the user-info
    /// call. Does nothing when that session has already ended.
    public func logout(reason: LogoutReason, ifEpoch epoch: UInt64) async throws {
        try await endSession(reason: reason, onlyEpoch: epoch)
    }

    /// Waits for the work the actor started in the background: the refresh in flight, if
    /// any, and the revocations logout started. Call at shutdown, before the transport and
    /// the executor stop, so that nothing is left waiting on them.
    public func finishBackgroundWork() async {
        await finishRevocations()
        while let task = refreshTask {
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

    /// Waits for the revocations logout started (at shutdown, before the transport stops).
    public func finishRevocations() async {
        while let task = revocations.first {
            await task.value
            revocations.removeFirst()
        }
    }

    func revokeInBackground(refreshToken: String?, accessToken: String) {
        // Without a revocation endpoint there is nothing to do, and nothing to log.
        guard client.canRevoke else { return }
        let client = self.client
        let logger = self.logger
        revocations.append(
            Task {
                do {
                    try await client.revoke(refreshToken: refreshToken, accessToken: accessToken)
                    logger.info("tokens revoked at the authorization server")
                } catch {
                    logger.notice("token revocation failed; the session is logged out all the same", metadata: ["auth.error": "\(error)"])
                }
            })
    }

    /// Ends the session when it is still in `onlyEpoch` (any epoch when `nil`).
    /// Returns the credentials of the session it ended, if it ended one.
    @discardableResult
    func endSession(reason: LogoutReason, onlyEpoch: UInt64?) async throws -> Credentials? {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        if let onlyEpoch, onlyEpoch != epoch { return nil }
        return try await endSessionLocked(reason: reason)
    }

    /// Ends the session; the store lock is held. Returns the ended session's credentials.
    /// When a store fails, the session has ended all the same and the error is thrown.
    /// With `persist: false` the stores are left alone (another process that shares them
    /// ended the session and wrote them).
    @discardableResult
    func endSessionLocked(reason: LogoutReason, persist: Bool = true) async throws -> Credentials? {
        guard case .active(let ending) = phase else { return nil }
        let endedEpoch = epoch
        epoch += 1
        phase = .loggedOut(reason)
        // Counted before any waiter hears of it, so a client that got its 401 sees it counted.
        Counter(
            label: "authgate_logouts_total", dimensions: [("session", account.rawValue), ("reason", reason.code)],
            factory: metricsFactory
        ).increment()
        needsPersist = false
        gate.recordSuccess()
        let waiters = inFlight?.waiters ?? [:]
        inFlight = nil
        let failure = AuthError.sessionEnded(reason)
        for continuation in waiters.values {
            continuation.resume(throwing: failure)
        }
        let wallNow = clock.wallNow
        sessionState = SessionState(
            isLoggedIn: false, subject: nil, lastLogin: sessionState.lastLogin, isGuest: false,
            updatedAt: wallNow)
        var storeError: (any Error)?
        if persist {
            do {
                try await stateStore.save(sessionState, for: account)
            } catch {
                storeError = error
                storeFailureCounter.increment()
                logger.info("session state not saved at logout", metadata: ["auth.store.error": "\(error)"])
            }
            do {
                try await tokenStore.delete(for: account)
            } catch {
                storeError = storeError ?? error
                storeFailureCounter.increment()
                logger.info("tokens not deleted at logout", metadata: ["auth.store.error": "\(error)"])
            }
        }
        logger.info("logged out", metadata: ["auth.reason": "\(reason)", "auth.epoch": "\(endedEpoch)"])
        events.publish(.loggedOut(reason: reason, epoch: endedEpoch), status: status)
        if let storeError {
            throw AuthError.storage(storeError, logoutReason: reason)
        }
        return ending.credentials
    }

    /// Enters or leaves guest mode (public routes only, no tokens) while logged out. The
    /// flag is kept in the session state; a login clears it. Does nothing while logged in.
    public func setGuestMode(_ enabled: Bool) async throws {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        guard case .loggedOut = phase, sessionState.isGuest != enabled else { return }
        var newState = sessionState
        newState.isGuest = enabled
        newState.updatedAt = clock.wallNow
        do {
            try await stateStore.save(newState, for: account)
        } catch {
            throw AuthError.storage(error)
        }
        sessionState = newState
        events.publish(.state(status), status: status)
    }

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
        let state: SessionState?
        var record: TokenRecord?
        do {
            state = try await stateStore.load(for: account)
            record = try await tokenStore.load(for: account)
        } catch {
            logger.info("session not restored", metadata: ["auth.store.error": "\(error)"])
            throw AuthError.storage(error)
        }
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
            phase = .active(makeSession(credentials, grantType: record.grantType))
            logger.info("session restored", metadata: ["auth.generation": "\(credentials.generation)"])
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
}
