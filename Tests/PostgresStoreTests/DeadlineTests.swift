import Locking
import TestSupport
import Testing

@testable import PostgresStore

/// The bound of a store operation, without a database: the caller is answered at the
/// deadline whatever the operation does, and an operation left behind can no longer pass
/// its commit point.
@Suite struct DeadlineTests {
    /// A wait that ignores cancellation, as a query already sent does.
    final class Gate: Sendable {
        private let waiter = Locked<CheckedContinuation<Void, Never>?>(nil)
        private let opened = Locked(false)

        func wait() async {
            await withCheckedContinuation { continuation in
                let now = opened.withLock { open in
                    if open { return true }
                    waiter.withLock { $0 = continuation }
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            let continuation = opened.withLock { open in
                open = true
                return waiter.withLock { w in
                    defer { w = nil }
                    return w
                }
            }
            continuation?.resume()
        }
    }

    @Test func anOperationLeftBehindByItsDeadlineCannotPassItsCommitPoint() async throws {
        let gate = Gate()
        let outcome = Locked<Bool?>(nil)
        let result = try await Deadline.run(.milliseconds(50)) { deadline in
            await gate.wait()
            do {
                try deadline.commitPoint()
                outcome.withLock { $0 = true }
            } catch {
                outcome.withLock { $0 = false }
            }
            return 1
        }
        #expect(result == nil, "the caller is answered at the deadline")
        gate.open()
        #expect(await eventually { outcome.withLock { $0 } != nil })
        #expect(outcome.withLock { $0 } == false, "the operation left behind passed its commit point")
    }

    @Test func anOperationThatReachesItsCommitPointInTimeCommitsAndAnswers() async throws {
        // An hour, so that no machine however loaded starts the operation after its end:
        // a sanitized parallel run has been seen to start it eleven seconds late.
        let result = try await Deadline.run(.seconds(3600)) { deadline in
            #expect(deadline.remaining > .zero)
            #expect(deadline.remaining <= .seconds(3600))
            try deadline.commitPoint()
            return 7
        }
        #expect(result == 7)
    }

    @Test func theCallerIsAnsweredAtTheDeadlineWhileTheOperationIgnoresCancellation() async throws {
        let gate = Gate()
        // The operation cannot return before the gate opens, after the answer: a nil answer
        // is the deadline's, however slow the machine.
        let result = try await Deadline.run(.milliseconds(100)) { _ in
            await gate.wait()
            return 1
        }
        #expect(result == nil)
        gate.open()
    }

    @Test func anOperationsOwnFailureReachesTheCaller() async throws {
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            _ = try await Deadline.run(.seconds(3600)) { _ -> Int in throw Refused() }
        }
    }
}
