internal import Foundation
internal import Logging

extension AuthActor {
    /// The refresh `flightID` found, before sending anything, that another process already
    /// replaced the pair (or ended the session): what is stored is adopted, with no token
    /// request.
    func adoptStored(_ stored: TokenRecord?, flightID: UInt64, epoch flightEpoch: UInt64) async {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        guard inFlight?.id == flightID, epoch == flightEpoch, case .active = phase else { return }
        await adoptLocked(stored)
    }

    /// Installs the pair another process stored (a refresh or a login of theirs), resuming
    /// every waiter of the refresh in flight with it; or, when nothing is stored, ends the
    /// session here without writing the shared store (whoever ended it wrote it, and a
    /// login since must not be undone). The store lock is held.
    func adoptLocked(_ stored: TokenRecord?) async {
        guard case .active(let session) = phase else { return }
        guard let stored, TokenSyntax.violation(in: stored) == nil else {
            logger.info("the shared store holds no session any more; ending it here")
            _ = try? await endSessionLocked(reason: .endedElsewhere, persist: false)
            return
        }
        guard case .success(let dpop) = dpopKey(for: stored.dpop, current: session.dpopKey) else {
            // Bound to a key this process cannot prove (another key file than the replica
            // that stored them): unusable here, whatever the store says.
            logger.notice("the stored tokens are bound to a DPoP key this process does not hold; ending the session here")
            _ = try? await endSessionLocked(reason: .keyChanged, persist: false)
            return
        }
        let credentials = takeOver(stored)
        let generation = credentials.generation
        let adopted = makeSession(
            credentials, grantType: stored.grantType ?? session.grantType, dpopKey: dpop, storedDPoP: stored.dpop,
            certificate: stored.certificate)
        phase = .active(adopted)
        gate.recordSuccess()
        needsPersist = false
        pendingLease = nil
        let waiters = inFlight?.waiters ?? [:]
        inFlight = nil
        logger.debug(
            "adopted the pair another replica stored",
            metadata: ["auth.generation": "\(generation)", "auth.waiters": "\(waiters.count)"])
        events.publish(.refreshed(generation: generation, persisted: true), status: status)
        for continuation in waiters.values {
            continuation.resume(returning: adopted.token)
        }
    }

    /// `stored`, a pair another process wrote, as this actor's credentials: under this
    /// actor's next generation (the generations of another process are not ours), with its
    /// lifetime counted from now.
    func takeOver(_ stored: TokenRecord) -> Credentials {
        let generation = lastGeneration.next
        lastGeneration = generation
        var credentials = stored.credentials(now: clock.now, wallNow: clock.wallNow)
        credentials.tokens.generation = generation
        return credentials
    }
}

extension AuthActor {
    /// Brings the session in line with the stores after another process that shares them
    /// changed them (a notification said so, or the notifications were interrupted):
    /// a pair refreshed or logged in elsewhere is adopted, a session logged out elsewhere
    /// ends here (one ``AuthEvent/loggedOut(reason:epoch:)``, as
    /// ``LogoutReason/endedElsewhere``), a guest switch is taken over. A login elsewhere (told
    /// from a refresh by the state's ``SessionState/loginID``) begins a new session here too,
    /// logged in or not: a new epoch, one ``AuthEvent/loggedIn(_:)``, and a device login
    /// waiting here ends (``DeviceLoginEnd/replaced``), as a login here would. Nothing is written:
    /// whoever changed the stores wrote them. Calling it when nothing changed does nothing,
    /// but for a refresh backoff that only waited for the store (a refresh that could not
    /// reach it): the store just answered, so that backoff ends.
    ///
    /// Throws ``AuthError`` (``AuthError/Code/storage``) when the stores cannot be read; the
    /// session is left as it was.
    public func synchronize() async throws {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        let (state, record) = try await loadStored()
        let stored = record.flatMap { TokenSyntax.violation(in: $0) == nil ? $0 : nil }
        // The store answered: a backoff that only waited for it to (a refresh that could not
        // reach it) is over, whatever the row says.
        if gate.lastError?.code.domain == .store { gate.recordSuccess() }
        switch (phase, stored) {
        case (.active(let session), let stored?):
            // A login elsewhere writes its tokens, then its state: its pair may have been
            // adopted (as a refresh) before its state said it was a login.
            let anotherLogin = state.map { $0.isAnotherLogin(than: sessionState) } ?? false
            if stored.accessToken != session.credentials.accessToken {
                if let state, state.isLoggedIn { sessionState = state }
                await adoptLocked(stored)
            }
            if anotherLogin, let state, case .active = phase { await beginLoginElsewhere(state) }
        case (.active, nil):
            logger.info("the session ended on another replica; ending it here")
            _ = try? await endSessionLocked(reason: .endedElsewhere, persist: false)
        case (.loggedOut, let stored?):
            // A login elsewhere: installed once its state says so (it is written second).
            guard let state, state.isLoggedIn else { return }
            guard case .success(let dpop) = dpopKey(for: stored.dpop) else {
                logger.notice("a session logged in elsewhere is bound to a DPoP key this process does not hold; not adopted")
                return
            }
            let credentials = takeOver(stored)
            let generation = credentials.generation
            epoch += 1
            sessionState = state
            phase = .active(
                makeSession(
                    credentials, grantType: stored.grantType, dpopKey: dpop, storedDPoP: stored.dpop,
                    certificate: stored.certificate))
            gate.reset()
            needsPersist = false
            pendingLease = nil
            await endDeviceLoginReplacedElsewhere()
            logger.info("logged in on another replica", metadata: ["auth.generation": "\(generation)", "auth.epoch": "\(epoch)"])
            events.publish(.loggedIn(status), status: status)
        case (.loggedOut, nil):
            guard let state, state.isGuest != sessionState.isGuest else { return }
            sessionState.isGuest = state.isGuest
            sessionState.updatedAt = state.updatedAt
            events.publish(.state(status), status: status)
        }
    }

    /// Makes the pair just adopted the session a login elsewhere began (`state`): a new
    /// epoch, so that nothing decided about the previous session (a user-info rejection)
    /// ends this one, and one ``AuthEvent/loggedIn(_:)``. The store lock is held.
    func beginLoginElsewhere(_ state: SessionState) async {
        sessionState = state
        epoch += 1
        gate.reset()
        await endDeviceLoginReplacedElsewhere()
        logger.info("logged in on another replica", metadata: ["auth.epoch": "\(epoch)"])
        events.publish(.loggedIn(status), status: status)
    }
}
