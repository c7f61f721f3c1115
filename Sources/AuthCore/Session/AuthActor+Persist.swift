internal import Logging

extension AuthActor {
    /// Retries persisting credentials whose save failed after a refresh.
    func persistPendingCredentials() async {
        await acquireStoreLock()
        defer { releaseStoreLock() }
        guard needsPersist, clock.now >= persistRetryAt, case .active(let session) = phase else { return }
        do {
            let outcome = try await coordinator.commit(
                TokenRecord(
                    session.credentials, grantType: session.grantType, dpop: session.dpopBinding,
                    certificate: session.certificate), for: account,
                lease: pendingLease ?? RefreshLease(owner: "local", fence: 0))
            needsPersist = false
            pendingLease = nil
            if case .superseded(let stored) = outcome {
                logger.notice("unsaved tokens lost their fence; the stored session is adopted")
                await adoptLocked(stored)
                return
            }
            persistFailures = 0
            logger.info("pending tokens persisted", metadata: ["auth.generation": "\(session.credentials.generation)"])
        } catch {
            storeFailureCounter.increment()
            // Retry with the refresh backoff, so a full disk does not cost a write per request.
            let delay = configuration.backoff.delay(afterConsecutiveFailures: persistFailures)
            persistFailures += 1
            persistRetryAt = clock.now + delay
            logger.info(
                "pending tokens still not persisted",
                metadata: ["auth.store.error": "\(error)", "auth.store.retry_in": "\(delay)"])
        }
    }
}
