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
