import Locking
public import Runtime

/// Counts the tasks a responder starts for its requests, so that shutdown can wait for
/// them before it stops the event loops: a task that resumed after its loop had stopped
/// would never run again, and everything it holds would be lost with it.
public final class TaskTracker: Sendable {
    private let running = Locked(0)
    private let total = Locked(0)

    /// Creates a tracker.
    public init() {}

    /// Tasks started and not yet finished, and waits entered and not yet left.
    public var count: Int { running.withLock { $0 } }

    /// Tasks started since the tracker was made.
    public var started: Int { total.withLock { $0 } }

    /// Starts `body` in a task that prefers `loop` (any executor when `nil`), counted until
    /// it returns.
    @discardableResult
    public func start(on loop: EventLoop?, _ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        running.withLock { $0 += 1 }
        total.withLock { $0 += 1 }
        let done: @Sendable () -> Void = { [running] in running.withLock { $0 -= 1 } }
        if let loop {
            return Task(executorPreference: loop) {
                await body()
                done()
            }
        }
        return Task {
            await body()
            done()
        }
    }

    /// `body`, counted from now until it returns, for the caller to run where it chooses (a
    /// task group's child): shutdown waits for it as for a task ``start(on:_:)`` started.
    /// Run it once.
    public func counted(_ body: @escaping @Sendable () async -> Void) -> @Sendable () async -> Void {
        running.withLock { $0 += 1 }
        total.withLock { $0 += 1 }
        return { [running] in
            await body()
            running.withLock { $0 -= 1 }
        }
    }

    /// Counts one wait that runs without a task (a request in an in-flight limiter's queue,
    /// told by a callback) until ``leave()``: shutdown waits for it as for a task. Not counted
    /// in ``started``.
    public func enter() {
        running.withLock { $0 += 1 }
    }

    /// Ends a wait ``enter()`` counted.
    public func leave() {
        running.withLock { $0 -= 1 }
    }

    /// Waits until every task has finished, or `timeout` has passed; returns whether they
    /// all finished.
    @discardableResult
    public func idle(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while count > 0 {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
