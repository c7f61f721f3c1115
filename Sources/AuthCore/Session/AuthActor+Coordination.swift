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
            _ = try? await endSessionLocked(reason: .tokensMissing, persist: false)
            return
        }
        let generation = lastGeneration.next
        lastGeneration = generation
        var credentials = stored.credentials(now: clock.now, wallNow: clock.wallNow)
        credentials.tokens.generation = generation
        let adopted = makeSession(credentials, grantType: stored.grantType ?? session.grantType)
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
}
