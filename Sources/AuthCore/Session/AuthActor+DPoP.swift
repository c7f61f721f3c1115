internal import Logging

// The session's DPoP key (RFC 9449): made when a session begins, kept with its tokens, and
// checked against the configured key whenever they are read back or refreshed.
extension AuthActor {
    /// The key for tokens stored with `binding`: `current` when it is that key (its nonces
    /// kept), else the one the configured source gives; nil without DPoP.
    func dpopKey(
        for binding: DPoPBinding?, current: DPoPSessionKey? = nil
    ) -> Result<DPoPSessionKey?, AuthError> {
        guard let source = configuration.dpop else { return .success(nil) }
        if let current, let binding, binding.thumbprint == current.thumbprint { return .success(current) }
        return source.key(for: binding).map { $0 }
    }

    /// Counts a token endpoint's refusal of the session's DPoP proof, and reads its clock.
    func noteProofRefusal(_ error: AuthError) {
        guard error.oauthError?.error == "invalid_dpop_proof" else { return }
        countDPoPProofRefused(by: "token_endpoint")
        if let offset = error.serverClockOffset { clockSkew.proofRefused(offset: offset) }
    }

    /// The DPoP key of the active session, if any.
    var sessionDPoPKey: DPoPSessionKey? {
        guard case .active(let session) = phase else { return nil }
        return session.dpopKey
    }

    /// The key a session that begins now proves: the key file's, read now, or a generated
    /// key (the one ``nextSessionDPoPThumbprint()`` announced, if any). Throws
    /// ``AuthError/Code/loginFailed`` when the file cannot be used.
    func keyForNewSession() throws -> DPoPSessionKey? {
        guard let source = configuration.dpop else { return nil }
        if case .generated = source, let next = nextDPoPKey { return next }
        do {
            return try source.keyForNewSession()
        } catch {
            throw AuthError.loginFailed(.tokenEndpoint(.clientCredentialsUnusable, .transient, message: error.message))
        }
    }

    /// The thumbprint of the DPoP key the next login will prove: what an authorization
    /// request sends as `dpop_jkt` (RFC 9449 §10) for the code AuthGate then exchanges. For
    /// a generated key, the key is made now and kept (in memory only) for that login; nil
    /// without DPoP, or when the key file cannot be read.
    public func nextSessionDPoPThumbprint() -> String? {
        guard let source = configuration.dpop else { return nil }
        if case .generated = source {
            if nextDPoPKey == nil { nextDPoPKey = try? source.keyForNewSession() }
            return nextDPoPKey?.thumbprint
        }
        return (try? source.keyForNewSession())?.thumbprint
    }

    /// Checks the session's DPoP key against the key file: a session whose tokens are bound
    /// to another key than the file holds now ends (``LogoutReason/keyChanged``), since no
    /// proof of the new key can carry them; a key file that could not be read at restore and
    /// can now is taken up. Does nothing for a generated key (it lives in the token store),
    /// without DPoP, or while the file cannot be read. Returns whether it ended the session.
    ///
    /// With a store other replicas share, the session ends here only: the stored tokens are
    /// left to the replicas whose key file still holds their key (a replica given another
    /// key file never logs everyone out), and a login anywhere replaces them.
    @discardableResult
    public func checkDPoPKey() async -> Bool {
        guard let source = configuration.dpop, case .file = source, case .active(let session) = phase else { return false }
        let sessionEpoch = epoch
        switch source.key(for: session.dpopBinding) {
        case .success(let key):
            guard session.dpopKey == nil else { return false }
            var updated = session
            updated.dpopKey = key
            updated.storedDPoP = nil
            updated.token = AccessToken(session.credentials, dpopKey: key)
            phase = .active(updated)
            return false
        case .failure(let mismatch) where mismatch.code == .dpopKeyChanged:
            logger.notice("the DPoP key file holds another key than the session's tokens are bound to; logging out")
            await acquireStoreLock()
            defer { releaseStoreLock() }
            guard epoch == sessionEpoch else { return false }
            return (try? await endSessionLocked(reason: .keyChanged, persist: !coordinator.sharesStore)) != nil
        case .failure:
            // The key file cannot be read now: keep the session and look again later.
            return false
        }
    }
}
