/// The connection's one timer: connecting, the exchange's idle and total deadlines, and
/// the idle time in the pool.
extension HTTP1Connection {
    /// Closes the connection after the idle time in the pool.
    func startIdleTimer() {
        arm(after: timeouts.idle)
    }

    /// Arms the timer for the exchange's nearer deadline: idle or total.
    func armExchangeTimer() {
        let idleDeadline = lastActivity + timeouts.idle
        let at = min(idleDeadline, totalDeadline)
        arm(after: at > now ? at - now : 0)
    }

    /// Makes ``timerFired()`` due in `ms` (at least 1). A deadline later than the pending one
    /// moves nothing in libuv (``LoopTimer/arm(at:)``).
    func arm(after ms: UInt64) {
        do throws(RuntimeError) {
            try timer.arm(at: now + max(1, ms))
        } catch {
            // Only a closing timer refuses, and then the connection is closing too.
        }
    }

    /// The deadline of the current state passed (or the exchange's idle deadline moved on).
    func timerFired() {
        switch state {
        case .connecting:
            fail(.upstream(.timeout, "connecting to the upstream timed out"))
        case .idle:
            close()
        case .busy:
            let t = now
            if t >= totalDeadline {
                fail(.upstream(.timeout, "the upstream did not answer in time"))
            } else if refused == nil && t >= lastActivity + timeouts.idle {
                fail(.upstream(.timeout, "the upstream did not answer in time"))
            } else {
                if refused != nil { lastActivity = t }
                armExchangeTimer()
            }
        case .closed:
            break
        }
    }
}
