internal import Foundation
internal import Logging

// What becomes of a refresh once its request has answered: committed and handed to every
// waiter, kept back after a transient failure, ended for good, or dropped because the
// session changed meanwhile.
extension AuthActor {
    /// Commits or rejects the result of refresh `flightID`.
    func finishRefresh(
        flightID: UInt64, epoch flightEpoch: UInt64, result: Result<TokenResponse, any Error>, lease: RefreshLease?
    ) async {
        guard inFlight?.id == flightID else {
            logger.info("refresh result dropped: session changed meanwhile", metadata: ["auth.epoch": "\(flightEpoch)"])
            revokeIfLoggedOut(result, epoch: flightEpoch)
            if case .success = result, let lease { await coordinator.release(lease, for: account) }
            return
        }
        switch result {
        case .success(let response):
            inFlight?.answered = true
            if configuration.dpop != nil { clockSkew.proofAccepted() }
            await commitRefresh(response, flightID: flightID, epoch: flightEpoch, lease: lease)
        case .failure(let error as AuthError) where error.code.domain == .store:
            // The lease could not be had (the shared store did not answer): tokens kept.
            failTransiently(error, flightID: flightID)
        case .failure(let error):
            let endpointError =
                (error as? AuthError).flatMap { $0.code.domain == .tokenEndpoint ? $0 : nil }
                ?? AuthError.tokenEndpoint(.network, .transient, message: String(describing: type(of: error)))
            noteProofRefusal(endpointError)
            switch endpointError.disposition ?? .transient {
            case .terminal:
                countRefresh("terminal")
                logger.info("refresh refused for good; logging out", metadata: ["auth.error": "\(endpointError)"])
                _ = try? await endSession(
                    reason: .refreshRejected(code: endpointError.oauthError?.error ?? endpointError.code.name),
                    onlyEpoch: flightEpoch)
            case .transient, .ambiguous:
                failTransiently(endpointError, flightID: flightID)
            }
        }
    }

    private func commitRefresh(
        _ response: TokenResponse, flightID: UInt64, epoch flightEpoch: UInt64, lease: RefreshLease?
    ) async {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        guard inFlight?.id == flightID, epoch == flightEpoch, case .active(let session) = phase else {
            logger.info("refresh result dropped: session ended meanwhile", metadata: ["auth.epoch": "\(flightEpoch)"])
            revokeIfLoggedOut(.success(response), epoch: flightEpoch)
            if let lease { await coordinator.release(lease, for: account) }
            return
        }
        let lease = lease ?? RefreshLease(owner: "local", fence: 0)
        let generation = lastGeneration.next
        lastGeneration = generation
        let obtainedAt = clock.now
        // `expires_in` counts from when the server issued the token, which is after the
        // request left and before its answer arrived: counting from the request's start
        // never believes a token valid when the server no longer does (REFERENCES item 10).
        let credentials = Credentials(
            response: response, previousRefreshToken: session.credentials.refreshToken,
            generation: generation, now: inFlight?.requestedAt ?? obtainedAt,
            wallNow: inFlight?.requestedAtWall ?? clock.wallNow, previousIssuedTokenType: session.credentials.issuedTokenType)
        // Bound to the certificate shown for this refresh; without one read, to what the
        // previous tokens were bound to (the transport showed the same files).
        let certificate = inFlight?.certificate ?? session.certificate
        var persisted = true
        do {
            let outcome = try await coordinator.commit(
                TokenRecord(
                    credentials, grantType: session.grantType, dpop: session.dpopBinding, certificate: certificate),
                for: account, lease: lease)
            if case .superseded(let stored) = outcome {
                // Another replica's pair (or its logout) won: this result is never used.
                logger.notice(
                    "refresh result lost its fence; the stored session is adopted",
                    metadata: ["auth.lease": "\(lease)", "auth.store.has_session": "\(stored != nil)"])
                await adoptLocked(stored)
                return
            }
            needsPersist = false
            pendingLease = nil
        } catch {
            // The server has already rotated: the old refresh token is spent. Keep the new
            // pair in memory (serving it) and retry persisting on the next token() call.
            persisted = false
            storeFailureCounter.increment()
            needsPersist = true
            persistFailures = 1
            persistRetryAt = clock.now
            pendingLease = lease
            logger.info(
                "refreshed tokens could not be persisted; kept in memory",
                metadata: ["auth.generation": "\(generation)", "auth.store.error": "\(error)"])
        }
        // The store lock keeps logout and login out while we awaited; re-check anyway.
        guard inFlight?.id == flightID, epoch == flightEpoch, case .active = phase else { return }
        let newSession = makeSession(
            credentials, grantType: session.grantType, dpopKey: session.dpopKey, storedDPoP: session.storedDPoP,
            certificate: certificate, obtainedAt: obtainedAt)
        phase = .active(newSession)
        gate.recordSuccess()
        countRefresh("success")
        let waiters = inFlight?.waiters ?? [:]
        inFlight = nil
        logger.debug("refreshed", metadata: ["auth.generation": "\(generation)", "auth.waiters": "\(waiters.count)"])
        events.publish(.refreshed(generation: generation, persisted: persisted), status: status)
        for continuation in waiters.values {
            continuation.resume(returning: newSession.token)
        }
    }

    private func failTransiently(_ error: AuthError, flightID: UInt64) {
        countRefresh("transient")
        let delay = gate.recordTransientFailure(error, at: clock.now, randomFraction: randomFraction())
        let waiters = inFlight?.waiters ?? [:]
        inFlight = nil
        logger.info(
            "refresh failed transiently; tokens kept",
            metadata: [
                "auth.error": "\(error)", "auth.backoff": "\(delay)",
                "auth.failures": "\(gate.consecutiveFailures)",
            ])
        events.publish(.refreshFailed(code: error.code.name, retryAfter: delay), status: status)
        let failure = AuthError.refreshFailed(retryAfter: delay, cause: error)
        for continuation in waiters.values {
            continuation.resume(throwing: failure)
        }
    }

    /// Revokes the tokens a refresh obtained for a session that a logout someone asked for
    /// ended while the refresh was in flight: the logout revoked the spent refresh token;
    /// the rotated one, whose commit was dropped, would otherwise stay valid at the server.
    func revokeIfLoggedOut(_ result: Result<TokenResponse, any Error>, epoch flightEpoch: UInt64) {
        guard case .success(let response) = result, revokingEpochs.remove(flightEpoch) != nil else { return }
        revokeInBackground(refreshToken: response.refreshToken, accessToken: response.accessToken)
    }
}
