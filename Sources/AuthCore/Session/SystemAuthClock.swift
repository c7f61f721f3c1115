public import Foundation

#if canImport(Glibc)
    private import Glibc
#elseif canImport(Darwin)
    private import Darwin
#endif

/// The real clock: `CLOCK_MONOTONIC` for deadlines, the system time for display.
public struct SystemAuthClock: AuthClock {
    /// Creates the system clock.
    public init() {}

    /// The current `CLOCK_MONOTONIC` reading.
    public var now: MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(
            offset: .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec)))
    }

    /// The current wall-clock time.
    public var wallNow: Date { Date() }

    /// Sleeps on the continuous clock until `deadline`.
    public func sleep(until deadline: MonotonicInstant) async throws {
        let remaining = deadline - now
        if remaining > .zero {
            try await Task.sleep(for: remaining)
        }
    }
}
