internal import Locking

/// Something that happens once (a run began, a run ended): whoever waits for it goes on
/// when it does, or at once when it already has. A waiting task that is cancelled stops
/// waiting.
final class OneTimeSignal: Sendable {
    private struct State {
        var fired = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Locked(State())

    init() {}

    /// Whether it has happened.
    var hasFired: Bool { state.withLock { $0.fired } }

    /// It happens: every waiter goes on (the second time, nothing).
    func fire() {
        let waiters = state.withLock { s in
            s.fired = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume() }
    }

    /// Returns once it has happened, or once the task is cancelled.
    func wait() async {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    guard !s.fired && !Task.isCancelled else { return true }
                    s.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
