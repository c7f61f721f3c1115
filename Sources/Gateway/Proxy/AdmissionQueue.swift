/// Who may send to an upstream now, when at most `limit` exchanges may be there at once:
/// the rest wait in order, replays ahead of first tries. A pure value; ``InFlightLimiter``
/// runs it under a lock and resumes the waiters it names.
///
/// Why replays go first: a replay has already waited its turn once, and its session's token
/// moved on while it was at the upstream. Sending it behind newer first tries would make it
/// wait out another queue, and with it the new token's lifetime.
public struct AdmissionQueue: Sendable, Equatable {
    /// Which lane a request waits in.
    public enum Lane: Sendable, Equatable {
        /// A request's first try.
        case first
        /// A replay after its token was rejected: served before every first try.
        case replay
    }

    /// What ``admit(_:lane:)`` decided.
    public enum Admission: Sendable, Equatable {
        /// Send now; a slot is taken until ``release()``.
        case proceed
        /// Wait until a ``release()`` names this ticket.
        case wait
    }

    /// Exchanges allowed at the upstream at once (a reload may change it: ``setLimit(_:)``).
    public private(set) var limit: Int
    /// Exchanges at the upstream now.
    public private(set) var inFlight = 0
    private var replays: [UInt64] = []
    private var firsts: [UInt64] = []

    /// Creates an empty queue; `limit` is at least 1.
    public init(limit: Int) {
        precondition(limit >= 1, "an admission limit is at least 1")
        self.limit = limit
    }

    /// Tickets waiting, both lanes.
    public var waiting: Int { replays.count + firsts.count }

    /// Takes a slot when one is free and nobody waits; otherwise changes nothing.
    public mutating func admitWithoutWaiting() -> Bool {
        guard inFlight < limit && waiting == 0 else { return false }
        inFlight += 1
        return true
    }

    /// A request with `ticket` (unique) asks to send.
    public mutating func admit(_ ticket: UInt64, lane: Lane) -> Admission {
        if admitWithoutWaiting() { return .proceed }
        switch lane {
        case .replay: replays.append(ticket)
        case .first: firsts.append(ticket)
        }
        return .wait
    }

    /// An exchange left the upstream. Returns the ticket that takes its slot (it proceeds
    /// now), if any waits and the limit still allows the slot (it may have shrunk).
    public mutating func release() -> UInt64? {
        precondition(inFlight > 0, "released more slots than were taken")
        if inFlight <= limit, let next = nextWaiting() { return next }
        inFlight -= 1
        return nil
    }

    /// Changes the limit (a reload): the exchanges at the upstream stay counted against the
    /// new one, so a smaller limit admits nobody until enough of them have left, and a larger
    /// one admits waiters at once. Returns the tickets admitted now, in order.
    public mutating func setLimit(_ newLimit: Int) -> [UInt64] {
        precondition(newLimit >= 1, "an admission limit is at least 1")
        limit = newLimit
        var admitted: [UInt64] = []
        while inFlight < limit, let next = nextWaiting() {
            inFlight += 1
            admitted.append(next)
        }
        return admitted
    }

    private mutating func nextWaiting() -> UInt64? {
        if !replays.isEmpty { return replays.removeFirst() }
        if !firsts.isEmpty { return firsts.removeFirst() }
        return nil
    }

    /// A waiting ticket gives up (cancelled, or waited too long). Returns whether it was
    /// still waiting; false means a ``release()`` already handed it a slot, which it must
    /// give back with ``release()``.
    public mutating func withdraw(_ ticket: UInt64) -> Bool {
        if let i = replays.firstIndex(of: ticket) {
            replays.remove(at: i)
            return true
        }
        if let i = firsts.firstIndex(of: ticket) {
            firsts.remove(at: i)
            return true
        }
        return false
    }
}
