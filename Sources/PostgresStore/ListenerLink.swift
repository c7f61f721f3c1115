/// What the listening connection does next: a value fed with what happened to it (connected,
/// a connection attempt failed, a ping answered or not, the connection ended), which says how
/// long to wait before connecting again and what a new connection must catch up on.
///
/// A silent partition (packets dropped, no reset) never ends a connection that only listens:
/// PostgreSQL's notifications and TCP's retransmissions are lost alike, and the replica would
/// learn of a logout elsewhere only when TCP gave up, minutes later. So the listening
/// connection is pinged every ``pingInterval``; a ping unanswered within ``pingTimeout``
/// drops it (``Step/drop``). It then reconnects at once and every ``maximumDelay`` at most.
/// A connection attempt made during the cut waits for TCP's retransmission of its SYN
/// (seconds apart), so one attempt at a time would come back up to a retransmission after
/// the heal: attempts start every ``hedgeInterval`` (up to ``attempts`` of them, each bounded
/// by ``connectTimeout``, long enough for a database 300 ms away) and the first to connect
/// wins, so the connection comes back within about ``hedgeInterval`` plus its own round
/// trips of the database answering again. Every new connection resynchronises the hub
/// (everything may have been missed); one that follows a silent loss also renews the pool,
/// whose connections are as silently dead as the listener's was.
struct ListenerLink: Sendable, Equatable {
    /// How often the listening connection is pinged.
    static let pingInterval: Duration = .seconds(1)
    /// How long a ping may take before the connection counts as cut off.
    static let pingTimeout: Duration = .seconds(2)
    /// How long one connection attempt (TCP, startup, authentication: four round trips and
    /// more) may take.
    static let connectTimeout: Duration = .seconds(5)
    /// How often another connection attempt starts while none has connected.
    static let hedgeInterval: Duration = .milliseconds(250)
    /// The most connection attempts one reconnection starts.
    static let attempts = 8
    /// The first wait after a connection attempt failed at once (refused), doubled on each.
    static let firstDelay: Duration = .milliseconds(100)
    /// The longest wait between connection attempts.
    static let maximumDelay: Duration = .seconds(1)

    /// What to do once a connection is established.
    struct Healed: Sendable, Equatable {
        /// Every waiter and follower reads its row again (always).
        var resynchronise = true
        /// The pool's connections are replaced: the loss before was silent.
        var renewPool: Bool
    }

    /// What to do after a ping.
    enum Step: Sendable, Equatable {
        /// Keep listening.
        case keep
        /// Drop the connection (without waiting for the server) and connect again.
        case drop
    }

    /// Failed connection attempts in a row.
    private(set) var failures = 0
    /// Whether the last connection was lost silently (a ping unanswered).
    private(set) var silentLoss = false

    /// A connection was established.
    mutating func connected() -> Healed {
        defer {
            failures = 0
            silentLoss = false
        }
        return Healed(renewPool: silentLoss)
    }

    /// A ping answered (`true`) or not within ``pingTimeout``.
    mutating func pinged(answered: Bool) -> Step {
        guard !answered else { return .keep }
        silentLoss = true
        return .drop
    }

    /// The connection ended, or a reconnection failed: how long to wait before the next. One
    /// whose attempts ran out their ``connectTimeout`` already waited, so the next starts at
    /// once.
    mutating func disconnected(timedOut: Bool) -> Duration {
        failures += 1
        if timedOut { return .zero }
        var delay = Self.firstDelay
        for _ in 1..<min(failures, 8) { delay = delay * 2 }
        return min(delay, Self.maximumDelay)
    }
}
