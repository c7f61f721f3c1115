public import Foundation

/// The clock an ``AuthActor`` and the token stores read: a monotonic timeline for deadlines
/// and a wall clock for display, persistence and `Retry-After` dates.
///
/// Production code uses ``SystemAuthClock``; tests use a manual clock (`TestClock` in
/// `AuthGateTesting`) and move time by hand.
public protocol AuthClock: Sendable {
    /// The current monotonic instant.
    var now: MonotonicInstant { get }

    /// The current wall-clock time.
    var wallNow: Date { get }

    /// Suspends until `deadline` on this clock, or throws `CancellationError`.
    func sleep(until deadline: MonotonicInstant) async throws
}

extension AuthClock {
    /// Suspends for `duration` on this clock, or throws `CancellationError`.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}
