internal import CoreMetrics
internal import Foundation
internal import Logging

extension AuthActor {
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
    ///
    /// A logout someone asked for also cancels a device login waiting for approval
    /// (``DeviceLoginEnd/cancelled``), whether or not a session was logged in: the operator
    /// wants the session out, however it was about to come in.
    public func logout(reason: LogoutReason = .userInitiated) async throws {
        if reason == .userInitiated { await cancelDeviceLoginEverywhere() }
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
                    logger.notice(
                        "token revocation failed; the session is logged out all the same", metadata: ["auth.error": "\(error)"])
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
}
