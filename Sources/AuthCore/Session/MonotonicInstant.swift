/// A point on a monotonic timeline, as an offset from an arbitrary origin chosen by its clock.
///
/// Monotonic instants from different clocks are not comparable; an ``AuthActor`` only ever
/// compares instants from its own injected ``AuthClock``.
public struct MonotonicInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The offset from the clock's origin.
    public var offset: Duration

    /// Creates an instant at `offset` from the clock's origin.
    public init(offset: Duration) {
        self.offset = offset
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.offset < rhs.offset
    }

    /// The instant `duration` later.
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        MonotonicInstant(offset: lhs.offset + rhs)
    }

    /// The instant `duration` earlier.
    public static func - (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        MonotonicInstant(offset: lhs.offset - rhs)
    }

    /// The duration from `rhs` to `lhs`.
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        lhs.offset - rhs.offset
    }

    public var description: String { "monotonic(\(offset))" }
}
