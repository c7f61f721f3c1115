import Locking

/// Background work that runs once at a time: asked for again while it runs, it is not
/// started twice (the run under way sees what a new one would), and ``finish()`` waits for
/// the run under way. What `/readyz` starts beside its answer: its probes come every few
/// seconds from each kubelet and load balancer, and must not pile tasks up behind a slow one.
final class SingleFlight: Sendable {
    private let running = Locked<Task<Void, Never>?>(nil)
    private let work: @Sendable () async -> Void

    /// Work to run on ``start()``.
    init(_ work: @escaping @Sendable () async -> Void) {
        self.work = work
    }

    /// Starts the work unless it runs already; returns whether it started.
    @discardableResult
    func start() -> Bool {
        running.withLock { task in
            guard task == nil else { return false }
            // The task takes this lock to clear the slot, so it cannot clear it before the
            // assignment below, however soon its work ends.
            task = Task { [running, work] in
                await work()
                running.withLock { $0 = nil }
            }
            return true
        }
    }

    /// Waits for the run under way, if any.
    func finish() async {
        await running.withLock { $0 }?.value
    }
}
