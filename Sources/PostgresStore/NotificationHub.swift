internal import Foundation
internal import Locking

/// Hands the notifications of the store's channel to whoever waits on an account: a replica
/// waiting for another's lease wakes on its commit or release, never by polling.
///
/// Each account has a counter that every notification for it bumps. A waiter reads the
/// counter *before* it reads the row, then waits for the counter to move past what it read:
/// a notification that lands between the read and the wait is not lost. When the listening
/// connection is lost, every counter is bumped (whatever was missed, every waiter checks
/// its row again).
final class NotificationHub: Sendable {
    /// One change of the table another replica announced.
    struct Change: Sendable, Equatable {
        /// `refreshed`, `login`, `logout`, `released` or `state`.
        var kind: String
        /// The account it is about.
        var account: String
        /// The row's generation after it, when the notification says.
        var generation: UInt64?

        /// Parses `kind account [generation]`; `nil` for anything else.
        init?(payload: String) {
            let parts = payload.split(separator: " ")
            guard parts.count == 2 || parts.count == 3 else { return nil }
            kind = String(parts[0])
            account = String(parts[1])
            generation = parts.count == 3 ? UInt64(parts[2]) : nil
        }

        init(kind: String, account: String, generation: UInt64?) {
            self.kind = kind
            self.account = account
            self.generation = generation
        }

        /// The payload `NOTIFY` carries.
        var payload: String { generation.map { "\(kind) \(account) \($0)" } ?? "\(kind) \(account)" }
    }

    private struct Waiter {
        let account: String
        let after: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var versions: [String: UInt64] = [:]
        var epoch: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var subscribers: [UInt64: AsyncStream<Change>.Continuation] = [:]
    }

    private let state = Locked(State())

    /// The counter of `account` (its notifications, plus every reconnection).
    func version(of account: String) -> UInt64 {
        state.withLock { ($0.versions[account] ?? 0) &+ $0.epoch }
    }

    /// A notification arrived.
    func deliver(_ change: Change) {
        let (ready, subscribers) = state.withLock { s -> ([CheckedContinuation<Void, Never>], [AsyncStream<Change>.Continuation]) in
            s.versions[change.account, default: 0] &+= 1
            return (take(&s) { $0.account == change.account }, Array(s.subscribers.values))
        }
        for c in ready { c.resume() }
        for s in subscribers { s.yield(change) }
    }

    /// The listening connection was (re)established: anything may have been missed.
    func resynchronise() {
        let (ready, subscribers) = state.withLock { s -> ([CheckedContinuation<Void, Never>], [AsyncStream<Change>.Continuation]) in
            s.epoch &+= 1
            return (take(&s) { _ in true }, Array(s.subscribers.values))
        }
        for c in ready { c.resume() }
        for s in subscribers { s.yield(Change(kind: "resync", account: "*", generation: nil)) }
    }

    /// Every change from now on (and a `resync` with account `*` after a reconnection).
    func changes() -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream<Change>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            s.subscribers[s.nextID] = continuation
            return s.nextID
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    /// Ends every subscription.
    func finish() {
        let subscribers = state.withLock { s in
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for s in subscribers { s.finish() }
    }

    /// Waits until `account`'s counter moves past `after`, or `timeout` passes.
    func wait(for account: String, after: UInt64, timeout: Duration) async {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.resume(id)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if (s.versions[account] ?? 0) &+ s.epoch != after { return true }
                s.waiters[id] = Waiter(account: account, after: after, continuation: continuation)
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }

    private func resume(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume()
    }

    private func take(_ s: inout State, where matches: (Waiter) -> Bool) -> [CheckedContinuation<Void, Never>] {
        let ids = s.waiters.filter { matches($0.value) }.map(\.key)
        return ids.compactMap { s.waiters.removeValue(forKey: $0)?.continuation }
    }
}
