internal import Foundation
internal import Logging

extension AuthActor {
    /// Joins the in-flight refresh, starting one when there is none, or returns the current
    /// token when `trigger` no longer calls for a refresh.
    ///
    /// The caller read the session before one or more suspension points (each `await` into
    /// an isolated function can be a real hop, e.g. when the actor runs on an event loop and
    /// the calling task prefers another loop), so a whole refresh may have committed since.
    /// Everything is therefore decided again inside the continuation's closure, which runs
    /// on the actor in one piece together with the registration: a newer token than the one
    /// the caller saw is returned at once; a refresh in flight is joined; otherwise one is
    /// started. Only a real cancellation of the caller ends in `CancellationError`.
    func joinRefresh(_ trigger: RefreshTrigger) async throws -> AccessToken {
        // Called from inside this actor's own refresh request: waiting would wait for itself.
        if RefreshTaskMarker.actor == ObjectIdentifier(self) {
            throw AuthError(.refreshReentered)
        }
        let waiterID = nextWaiterID
        nextWaiterID += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AccessToken, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                switch registerWaiter(waiterID, continuation, for: trigger) {
                case .waiting:
                    break
                case .current(let token):
                    continuation.resume(returning: token)
                case .failed(let error):
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(waiterID) }
        }
    }

    enum Registration {
        case waiting
        case current(AccessToken)
        case failed(any Error)
    }

    /// The synchronous decision of ``joinRefresh(_:)``, on the state as it is now.
    private func registerWaiter(
        _ waiterID: UInt64, _ continuation: CheckedContinuation<AccessToken, any Error>,
        for trigger: RefreshTrigger
    ) -> Registration {
        switch phase {
        case .loggedOut(let reason?):
            // The caller saw a session; it ended while the caller was suspended.
            return .failed(AuthError.sessionEnded(reason))
        case .loggedOut(nil):
            return .failed(AuthError.loginRequired)
        case .active(let session):
            switch trigger {
            case .rejected(let generation):
                // A newer token than the rejected one: the 401 was for a stale token.
                if session.credentials.generation > generation { return .current(session.token) }
            case .due(let seen):
                let now = clock.now
                // A refresh committed since the caller looked: its token serves this caller,
                // unless it has already expired.
                if session.credentials.generation > seen, !session.credentials.isExpired(at: now) {
                    return .current(session.token)
                }
                if !session.isDue(at: now) { return .current(session.token) }
            }
            if inFlight == nil {
                do {
                    try startRefresh(session, dueToLead: { if case .due = trigger { true } else { false } }())
                } catch {
                    return .failed(error)
                }
            }
            inFlight?.waiters[waiterID] = continuation
            return .waiting
        }
    }

    /// A cancelled caller stops waiting; the refresh itself goes on.
    func cancelWaiter(_ id: UInt64) {
        if let continuation = inFlight?.waiters.removeValue(forKey: id) {
            continuation.resume(throwing: CancellationError())
        }
    }

    /// Starts the single refresh task for `session`, or throws when it cannot refresh now.
    /// Synchronous: the caller has just checked that none is in flight.
    func startRefresh(_ session: ActiveSession, dueToLead: Bool = false) throws {
        let now = clock.now
        let grant: Grant
        if let refreshToken = session.credentials.refreshToken {
            grant = .refreshToken(refreshToken, expiredAccessToken: session.credentials.accessToken)
        } else if session.grantType == Grant.clientCredentials().grantType {
            grant = .clientCredentials(scope: session.credentials.scope)
        } else {
            throw AuthError(.refreshNotPossible)
        }
        let current = session.gateToken
        let alreadyTripped = gate.isLoopGuardTripped
        switch gate.admit(at: now, replacing: current, dueToLead: dueToLead) {
        case .proceed:
            break
        case .backingOff(let retryAfter, let lastError):
            throw AuthError.backingOff(retryAfter: retryAfter, lastError: lastError)
        case .excessive:
            let retryAfter = gate.loopGuardRetryAfter(at: now, replacing: current)
            if !alreadyTripped {
                // Once per trip, not once per refused caller.
                countRefresh("loop_guard")
                logger.warning(
                    "refresh loop guard tripped",
                    metadata: [
                        "auth.refresh.limit": "\(gate.window.maximumAttempts)",
                        "auth.refresh.interval": "\(gate.window.interval)",
                        "auth.generation": "\(current.generation)",
                        "auth.token.age": "\(now - current.obtainedAt)",
                        "auth.refresh.retry_in": "\(retryAfter)",
                    ])
                events.publish(
                    .refreshFailed(code: AuthError.Code.excessiveRefresh.name, retryAfter: retryAfter),
                    status: status)
            }
            throw AuthError.excessiveRefresh(retryAfter: retryAfter)
        }
        nextFlightID += 1
        refreshesStarted += 1
        let flight = InFlightRefresh(id: nextFlightID, epoch: epoch, requestedAt: now, requestedAtWall: clock.wallNow)
        inFlight = flight
        logger.debug(
            "refresh started",
            metadata: ["auth.generation": "\(session.credentials.generation)", "auth.epoch": "\(epoch)"])
        let client = self.client
        let marker = ObjectIdentifier(self)
        let coordinator = self.coordinator
        let account = self.account
        let replacing = session.credentials.accessToken
        refreshTask = Task {
            // Across replicas: take the lease on the pair, or adopt what another committed.
            let lease: RefreshLease
            do {
                switch try await coordinator.acquire(for: account, replacing: replacing) {
                case .granted(let granted):
                    lease = granted
                case .superseded(let stored):
                    await self.adoptStored(stored, flightID: flight.id, epoch: flight.epoch)
                    return
                }
            } catch {
                await self.finishRefresh(flightID: flight.id, epoch: flight.epoch, result: .failure(error), lease: nil)
                return
            }
            let result: Result<TokenResponse, any Error>
            do {
                let response = try await RefreshTaskMarker.$actor.withValue(marker) {
                    try await client.requestToken(grant)
                }
                result = .success(response)
            } catch {
                result = .failure(error)
            }
            if case .failure = result { await coordinator.release(lease, for: account) }
            await self.finishRefresh(flightID: flight.id, epoch: flight.epoch, result: result, lease: lease)
        }
    }

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
            await commitRefresh(response, flightID: flightID, epoch: flightEpoch, lease: lease)
        case .failure(let error as AuthError) where error.code.domain == .store:
            // The lease could not be had (the shared store did not answer): tokens kept.
            failTransiently(error, flightID: flightID)
        case .failure(let error):
            let endpointError =
                (error as? AuthError).flatMap { $0.code.domain == .tokenEndpoint ? $0 : nil }
                ?? AuthError.tokenEndpoint(.network, .transient, message: String(describing: type(of: error)))
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
            wallNow: inFlight?.requestedAtWall ?? clock.wallNow)
        var persisted = true
        do {
            let outcome = try await coordinator.commit(
                TokenRecord(credentials, grantType: session.grantType), for: account, lease: lease)
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
        let newSession = makeSession(credentials, grantType: session.grantType, obtainedAt: obtainedAt)
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
