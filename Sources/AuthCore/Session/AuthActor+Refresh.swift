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
                // A newer token than the rejected one: the 401 was for a stale token. Unless
                // it is bound to a newer certificate than this process shows, as the one
                // rejected was: the API refuses it too.
                if session.credentials.generation > generation {
                    do { try checkCertificateBinding(session, shown: configuration.shownCertificate?()) } catch {
                        return .failed(error)
                    }
                    return .current(session.token)
                }
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
        } else if let renewal = Grant.renewal(grantType: session.grantType, scope: session.credentials.scope) {
            grant = renewal
        } else {
            throw AuthError(.refreshNotPossible)
        }
        // Read once: the decision and the binding kept with the new tokens are the same
        // certificate, the one the transport shows this request.
        let certificate = configuration.shownCertificate?()
        try checkCertificateBinding(session, shown: certificate)
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
        let flight = InFlightRefresh(
            id: nextFlightID, epoch: epoch, requestedAt: now, requestedAtWall: clock.wallNow, certificate: certificate)
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
            // Tokens bound to a key the file no longer holds cannot be refreshed with it.
            if await self.checkDPoPKey() { return }
            let dpop = await self.sessionDPoPKey
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
                    try await client.requestToken(grant, dpop: dpop)
                }
                result = .success(response)
            } catch {
                result = .failure(error)
            }
            if case .failure = result { await coordinator.release(lease, for: account) }
            await self.finishRefresh(flightID: flight.id, epoch: flight.epoch, result: result, lease: lease)
        }
    }
}

extension AuthActor {
    /// How long a request refused with ``AuthError/Code/clientCertificateOutdated`` is told
    /// to wait: the certificate files are looked at again within a second, but a renewal
    /// takes an operator or a certificate manager.
    static let outdatedCertificateRetry = Duration.seconds(10)

    /// Throws ``AuthError/Code/clientCertificateOutdated`` when `session`'s tokens are bound to
    /// a newer certificate than `shown`, the one this process would show the token endpoint:
    /// refreshing would move the binding back, away from the replicas that show the newer
    /// one. A process alone with its store is never refused: nobody else serves its tokens.
    func checkCertificateBinding(_ session: ActiveSession, shown: CertificateBinding?) throws {
        guard coordinator.sharesStore,
            CertificateBindingRule.decide(bound: session.certificate, mine: shown) == .refuse,
            let shown, let bound = session.certificate
        else {
            if outdatedCertificateNoted != nil {
                outdatedCertificateNoted = nil
                logger.info("client certificate no longer outdated; refreshing again")
            }
            return
        }
        if outdatedCertificateNoted != bound {
            // Once per binding, not once per refused request.
            outdatedCertificateNoted = bound
            logger.warning(
                "client certificate outdated: the session's tokens are bound to a newer certificate; not refreshing",
                metadata: [
                    "auth.certificate.shown": "\(shown.thumbprint)",
                    "auth.certificate.shown_not_before": "\(RFC3339.format(shown.notBefore))",
                    "auth.certificate.bound": "\(bound.thumbprint)",
                    "auth.certificate.bound_not_before": "\(RFC3339.format(bound.notBefore))",
                ])
            events.publish(
                .refreshFailed(
                    code: AuthError.Code.clientCertificateOutdated.name, retryAfter: Self.outdatedCertificateRetry),
                status: status)
        }
        throw AuthError.clientCertificateOutdated(retryAfter: Self.outdatedCertificateRetry)
    }

    /// Whether this process's client certificate is older than the one the session's tokens
    /// are bound to (``CertificateBindingRule/Decision/refuse``), read without a hop onto the
    /// actor, for `/readyz`: such a process serves none of the session's requests the API
    /// refuses, until its certificate is renewed.
    public nonisolated var clientCertificateOutdated: Bool {
        guard coordinator.sharesStore, let shown = configuration.shownCertificate else { return false }
        let bound = publishedCertificate.withLock { $0 }
        return CertificateBindingRule.decide(bound: bound, mine: shown()) == .refuse
    }
}

/// Marks the task that performs an ``AuthActor``'s refresh request, so a transport that
/// calls back into the same actor (Alamofire#3509, okhttp#6747: the refresh call itself
/// intercepted) gets ``AuthError/Code/refreshReentered`` instead of a deadlock.
enum RefreshTaskMarker {
    /// The actor whose refresh the current task performs.
    @TaskLocal static var actor: ObjectIdentifier?
}
