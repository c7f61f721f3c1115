public import AuthCore
public import Foundation
internal import Locking

/// A manual clock for deterministic tests: time moves only when ``advance(by:)`` is called.
public final class TestClock: AuthClock {
    private struct Sleeper {
        let deadline: MonotonicInstant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: MonotonicInstant
        var wall: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    /// Creates a clock at monotonic zero and wall time `wallStart`.
    public init(wallStart: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.state = Locked(State(now: MonotonicInstant(offset: .zero), wall: wallStart))
    }

    /// The current monotonic instant.
    public var now: MonotonicInstant { state.withLock { $0.now } }

    /// The current wall time.
    public var wallNow: Date { state.withLock { $0.wall } }

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Moves both timelines forward by `duration` and wakes every sleeper that is due.
    public func advance(by duration: Duration) {
        let due: [Sleeper] = state.withLock { state in
            state.now = state.now + duration
            state.wall = state.wall.addingTimeInterval(
                TimeInterval(duration.components.seconds)
                    + TimeInterval(duration.components.attoseconds) / 1e18)
            let ready = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in ready.keys { state.sleepers[id] = nil }
            return Array(ready.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the wall clock only (a wall-clock jump; the monotonic timeline is unaffected).
    public func jumpWallClock(by seconds: TimeInterval) {
        state.withLock { $0.wall = $0.wall.addingTimeInterval(seconds) }
    }

    /// Suspends until ``advance(by:)`` reaches `deadline`.
    public func sleep(until deadline: MonotonicInstant) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
