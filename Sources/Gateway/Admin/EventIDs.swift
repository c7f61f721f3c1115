import Foundation

/// The SSE event ids of one run of the gateway: the broadcaster's ids (1, 2, 3, … from each
/// start) plus a base taken from the wall clock at start, in microseconds.
///
/// So ids keep growing across restarts: a client that resumes with a `Last-Event-ID` from
/// before a restart is told the current state instead of being replayed this run's events
/// from the wrong place (the broadcaster's own ids start again at 1, so its `5` of the last
/// run would otherwise skip this run's first five events). The base stays below 2^53 until
/// the year 2255, so the ids are exact in JavaScript too. Pure.
public struct EventIDs: Sendable, Equatable {
    /// Added to every broadcaster id.
    public let base: UInt64

    /// Ids based on `base`.
    public init(base: UInt64) {
        self.base = base
    }

    /// Ids based on the wall clock now, in microseconds since 1970.
    public init() {
        base = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    }

    /// The id a client sees for the broadcaster's `id`.
    public func sseID(_ id: UInt64) -> UInt64 {
        base &+ id
    }

    /// The broadcaster's id for a client's `Last-Event-ID`, or nil when it is not one of
    /// this run's (it came from an earlier run: the client gets the current state).
    public func broadcasterID(_ lastEventID: UInt64) -> UInt64? {
        lastEventID >= base ? lastEventID - base : nil
    }
}
