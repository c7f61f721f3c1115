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

extension AuthActor {
    /// Waits for the FIFO store lock. Every sequence of store writes (and the state change
    /// that goes with it) runs under it.
    ///
    /// The check and the queueing happen together inside the continuation's closure, which
    /// runs on the actor in one piece. Checking first and queueing after an `await` would
    /// let a release run in between: it would find the queue empty and free the lock, and
    /// the waiter queued just after would wait for the next holder's release, however late
    /// that comes (seen as an admin login held for 10 s while a refresh failed).
    func acquireStoreLock() async {
        await withCheckedContinuation { continuation in
            if storeLockHeld {
                storeLockQueue.append(continuation)
            } else {
                storeLockHeld = true
                continuation.resume()
            }
        }
    }

    /// Hands the lock to the next waiter, or frees it.
    func releaseStoreLock() {
        if storeLockQueue.isEmpty {
            storeLockHeld = false
        } else {
            storeLockQueue.removeFirst().resume()
        }
    }
}
