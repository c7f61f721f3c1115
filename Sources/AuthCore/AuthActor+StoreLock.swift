extension AuthActor {
    /// Waits for the FIFO store lock. Every sequence of store writes (and the state change
    /// that goes with it) runs under it.
    func acquireStoreLock() async {
        if !storeLockHeld {
            storeLockHeld = true
            return
        }
        await withCheckedContinuation { continuation in
            storeLockQueue.append(continuation)
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
