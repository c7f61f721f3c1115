/// The connection's one timer: connecting, the exchange's idle and total deadlines, and
/// the idle time in the pool, each armed and judged by the ``HTTP1Connection/StateMachine``.
extension HTTP1Connection {
    /// Closes the connection after the idle time in the pool.
    func startIdleTimer() {
        execute(machine.parked(now: now))
    }

    /// The deadline of the current state passed (or the exchange's idle deadline moved on).
    func timerFired() {
        execute(machine.timerFired(now: now))
    }
}
