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

    /// Exchanges allowed at the upstream at once.
    public let limit: Int
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
    /// now), if any waits.
    public mutating func release() -> UInt64? {
        precondition(inFlight > 0, "released more slots than were taken")
        if !replays.isEmpty { return replays.removeFirst() }
        if !firsts.isEmpty { return firsts.removeFirst() }
        inFlight -= 1
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
