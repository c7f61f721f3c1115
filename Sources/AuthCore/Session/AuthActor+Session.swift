internal import CoreMetrics
internal import Foundation
internal import Logging

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
        // A new session proves a key of its own: the key file's now, or a new one.
        let dpop = try keyForNewSession()
        // Read before the request, like the transport: the tokens are bound to this one.
        let certificate = configuration.shownCertificate?()
        do {
            response = try await client.requestToken(grant, dpop: dpop)
        } catch let error as AuthError where error.code.domain == .tokenEndpoint {
            noteProofRefusal(error)
            throw AuthError.loginFailed(error)
        }
        if dpop != nil { clockSkew.proofAccepted() }
        var subject = subject
        if subject == nil, case .password(let username, _, _) = grant { subject = username }
        return try await install(
            response, grantType: grant.grantType, subject: subject, requestedAt: requestedAt, dpop: dpop,
            certificate: certificate)
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
        // Imported tokens were bound (if at all) to the configured key file's key.
        let dpop: DPoPSessionKey?
        switch dpopKey(for: nil) {
        case .success(let key): dpop = key
        case .failure: dpop = nil
        }
        return try await install(response, grantType: nil, subject: subject, dpop: dpop)
    }

    /// Installs a new session; `requestedAt` (when the token request left) is where the
    /// lifetime counts from, as for a refresh.
    ///
    /// `deviceFlowID` names the device login whose tokens these are: when that login has
    /// been cancelled or replaced meanwhile (checked under the store lock, so a logout that
    /// cancelled it is never undone), nothing is installed and `CancellationError` is
    /// thrown. Any other login ends a pending device login (``DeviceLoginEnd/replaced``).
    func install(
        _ response: TokenResponse, grantType: String?, subject: String?,
        requestedAt: (MonotonicInstant, Date)? = nil, dpop: DPoPSessionKey?, certificate: CertificateBinding? = nil,
        deviceFlowID: UInt64? = nil
    ) async throws -> AccessToken {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        if let deviceFlowID, deviceFlow?.id != deviceFlowID { throw CancellationError() }
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
            try await tokenStore.save(
                TokenRecord(credentials, grantType: grantType, dpop: dpop?.binding, certificate: certificate),
                for: account)
        } catch {
            throw AuthError.storage(error)
        }
        let wallNow = clock.wallNow
        let newState = SessionState(
            isLoggedIn: true, subject: subject, lastLogin: wallNow, isGuest: false, updatedAt: wallNow,
            loginID: SessionState.newLoginID())
        do {
            try await stateStore.save(newState, for: account)
        } catch {
            try? await tokenStore.delete(for: account)
            throw AuthError.storage(error)
        }
        lastGeneration = generation
        epoch += 1
        if let dpop, dpop === nextDPoPKey { nextDPoPKey = nil }
        sessionState = newState
        let session = makeSession(
            credentials, grantType: grantType, dpopKey: dpop, certificate: certificate, obtainedAt: obtainedAt)
        phase = .active(session)
        gate.reset()
        needsPersist = false
        logger.info("logged in", metadata: ["auth.generation": "\(generation)", "auth.epoch": "\(epoch)"])
        if let flow = deviceFlow {
            deviceFlow = nil
            if flow.id != deviceFlowID {
                flow.task?.cancel()
                if let shared = flow.shared, let deviceCoordinator {
                    await deviceCoordinator.endDeviceLogin(shared, outcome: DeviceLoginEnd.replaced.code, for: account)
                }
                endedDeviceLogin(.replaced)
            }
        }
        events.publish(.loggedIn(status), status: status)
        return session.token
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
}
