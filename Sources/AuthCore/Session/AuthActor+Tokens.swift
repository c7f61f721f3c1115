internal import Foundation

extension AuthActor {
    /// The current access token, refreshed first when it expires within the skew window.
    ///
    /// When that refresh fails transiently and the token has not yet expired, the current
    /// token is returned. Throws ``AuthError``: with no session, ``noSessionError``.
    public func token() async throws -> AccessToken {
        guard case .active = phase else { throw noSessionError }
        if needsPersist, clock.now >= persistRetryAt { await persistPendingCredentials() }
        // Read the session after any suspension above.
        guard case .active(let session) = phase else { throw noSessionError }
        if session.isDue(at: clock.now) {
            return try await tokenAfterProactiveRefresh(seen: session.credentials.generation)
        }
        return session.token
    }

    /// Call after the upstream rejected the token of `generation` as invalid.
    ///
    /// Returns the current token at once when it is newer than `generation` (no network);
    /// otherwise joins the single in-flight refresh (starting it if needed) and returns its
    /// token. Throws ``AuthError``: with no session, ``noSessionError``; when the tokens are
    /// bound to a newer client certificate than this process shows, whatever their
    /// generation (the API refuses every one of them over its connections),
    /// ``AuthError/Code/clientCertificateOutdated``.
    public func refresh(after generation: TokenGeneration) async throws -> AccessToken {
        guard case .active(let session) = phase else { throw noSessionError }
        try checkCertificateBinding(session, shown: configuration.shownCertificate?())
        if session.credentials.generation > generation {
            return session.token
        }
        return try await joinRefresh(.rejected(generation))
    }

    /// The session as it stands.
    public var status: SessionStatus {
        var status = SessionStatus(
            account: account, isLoggedIn: false, subject: sessionState.subject,
            lastLogin: sessionState.lastLogin, isGuest: sessionState.isGuest, epoch: epoch)
        switch phase {
        case .active(let session):
            status.isLoggedIn = true
            status.generation = session.credentials.generation
            status.expiresAt = session.credentials.expiresAt
            status.dpopThumbprint = session.dpopBinding?.thumbprint
            status.issuedTokenType = session.credentials.issuedTokenType
        case .loggedOut(let reason):
            status.logoutReason = reason
        }
        status.deviceAuthorization = deviceFlow?.status
        return status
    }

    /// What a request for a token meets while there is no session: the reason the last
    /// session ended (``AuthError/Code/sessionEnded``, the same for every request until a
    /// login, whichever process ended it), or ``AuthError/Code/loginRequired`` when none
    /// ended since this process started (``LogoutReason/tokensMissing`` is what restore
    /// found at start), or in guest mode.
    var noSessionError: AuthError {
        if case .loggedOut(let reason?) = phase, reason != .tokensMissing, !sessionState.isGuest {
            return AuthError.sessionEnded(reason)
        }
        return AuthError.loginRequired
    }

    /// Whether a refresh is in flight.
    public var isRefreshing: Bool { inFlight != nil }

    /// How many callers wait for the in-flight refresh (for tests and metrics).
    public var refreshWaiterCount: Int { inFlight?.waiters.count ?? 0 }

    /// How many refreshes this actor started.
    public var refreshCount: Int { refreshesStarted }

    private func tokenAfterProactiveRefresh(seen generation: TokenGeneration) async throws -> AccessToken {
        do {
            return try await joinRefresh(.due(seen: generation))
        } catch let error as AuthError where error.keepsSession {
            if case .active(let session) = phase, !session.credentials.isExpired(at: clock.now) {
                return session.token
            }
            if error.code == .refreshNotPossible, case .active = phase {
                _ = try? await endSession(reason: .expiredWithoutRefreshToken, onlyEpoch: epoch)
                throw AuthError.sessionEnded(.expiredWithoutRefreshToken)
            }
            throw error
        }
    }

    /// The session for `credentials` obtained at `obtainedAt` (monotonic). Without it (restore),
    /// the instant is derived from the credentials' wall-clock `issuedAt`.
    func makeSession(
        _ credentials: Credentials, grantType: String?, dpopKey: DPoPSessionKey?, storedDPoP: DPoPBinding? = nil,
        certificate: CertificateBinding? = nil, obtainedAt: MonotonicInstant? = nil
    ) -> ActiveSession {
        let now = clock.now
        var refreshAt: MonotonicInstant?
        if let deadline = credentials.deadline {
            let lifetime = deadline - now
            refreshAt = deadline - refreshLead(lifetime: lifetime)
        }
        let age = Duration.interval(max(0, clock.wallNow.timeIntervalSince(credentials.issuedAt)))
        return ActiveSession(
            credentials: credentials, token: AccessToken(credentials, dpopKey: dpopKey), refreshAt: refreshAt,
            grantType: grantType, obtainedAt: min(obtainedAt ?? now - age, now), dpopKey: dpopKey,
            storedDPoP: dpopKey == nil ? storedDPoP : nil, certificate: certificate)
    }

    /// How long before expiry a token of `lifetime` (what is left of it) is refreshed.
    func refreshLead(lifetime: Duration) -> Duration {
        guard lifetime > .zero else { return .zero }
        let r = max(0, min(1, randomFraction()))
        // Jitter spreads replicas apart; it never moves a refresh by more than a tenth of the
        // lifetime, so `skew: 0` still means "at expiry" for short tokens.
        let jitter = min(configuration.jitter, lifetime / 10) * r
        if let f = configuration.leadFraction {
            // Here jitter only delays: "at half-life" never means more than two refreshes
            // per lifetime.
            return max(.zero, lifetime * f - jitter)
        }
        let half = lifetime / 2
        if configuration.skew + jitter >= half, let latency = configuration.upstreamLatency?() {
            // The cap binds: the requests' own time at the upstream is the lead they need.
            return min(half, max(latency, lifetime / 10) + jitter)
        }
        return min(configuration.skew + jitter, half)
    }
}

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
