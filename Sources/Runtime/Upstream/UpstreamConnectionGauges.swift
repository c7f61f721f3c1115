import Locking
import Synchronization

/// How many of the loops' own HTTP/1.1 connections to each `http://` origin are busy (an
/// exchange under way, or connecting for one) and how many idle in their pool, summed over
/// every loop: for the `authgate_upstream_connections` gauge. A connection that stays busy
/// while nothing is under way at the proxy is a leak made visible.
///
/// Shared by every ``UpstreamClient`` made with it (``UpstreamClientConfiguration/connectionGauges``);
/// each pool finds its origin's counters once and then only adds to them, without a lock.
public final class UpstreamConnectionGauges: Sendable {
    /// One origin's counters.
    final class Counters: Sendable {
        let busy = Atomic<Int>(0)
        let idle = Atomic<Int>(0)
    }

    private let origins = Locked<[String: Counters]>([:])

    /// Creates gauges at zero.
    public init() {}

    /// The counters of `origin` (`http://host:port`), made on first use.
    func counters(for origin: String) -> Counters {
        origins.withLock { all in
            if let c = all[origin] { return c }
            let c = Counters()
            all[origin] = c
            return c
        }
    }

    /// Each origin with its busy and idle connections, sorted by origin.
    public func snapshot() -> [(origin: String, busy: Int, idle: Int)] {
        origins.withLock { all in
            all.map { ($0.key, $0.value.busy.load(ordering: .relaxed), $0.value.idle.load(ordering: .relaxed)) }
        }.sorted { $0.origin < $1.origin }
    }
}
