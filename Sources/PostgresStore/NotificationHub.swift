internal import AuthCore
internal import Foundation
internal import Locking
internal import PostgresNIO

/// Hands the notifications of the store's channel to whoever waits on an account: a replica
/// waiting for another's lease wakes on its commit or release, never by polling.
///
/// Each account of interest has a version: the hub's sequence number at the last
/// notification about it. A waiter reads the version *before* it reads the row, then waits
/// for it to move: a notification that lands between the read and the wait is not lost.
/// When the listening connection is lost, every version moves (whatever was missed, every
/// waiter checks its row again).
///
/// Anyone who may connect to the database may `NOTIFY` on the channel (PostgreSQL has no
/// right for it), so nothing a notification says is trusted:
/// - Versions are kept only for the accounts this process asked about while it asks: the
///   sessions a follower serves (``changes(for:)``) and the account a refresh waits on
///   (``watching(_:_:)``). A notification about any other account is dropped. The map's keys
///   thus come from this process's own calls, never from a payload, and it is bounded by the
///   sessions this replica serves whatever anyone sends; a cap would add nothing but a way
///   to lose a waiter's wake-up.
/// - A notification changes no state by itself. It only makes a waiter or a follower read
///   its row again, and the row (which only roles with rights on the table can write)
///   decides; its kind and generation are never acted upon. A forged one costs a read.
/// - A payload that is not one of the store's own (`kind account [generation]`, a known
///   kind) is dropped.
final class NotificationHub: Sendable {
    /// One change of the table another replica announced.
    struct Change: Sendable, Equatable {
        /// The kinds the store sends.
        static let kinds: Set<String> = ["refreshed", "login", "logout", "released", "state", "device"]

        /// `refreshed`, `login`, `logout`, `released`, `state` or `device` (`resync` from the
        /// hub itself).
        var kind: String
        /// The account it is about (`*` for a `resync`).
        var account: String
        /// The row's generation after it, when the notification says.
        var generation: UInt64?
        /// The hub's sequence number at its delivery (0 until delivered): a reader of the row
        /// that began after the account's version reached it has seen what it announces.
        var version: UInt64 = 0

        /// Parses `kind account [generation]` with one of the store's kinds; `nil` for
        /// anything else.
        init?(payload: String) {
            let parts = payload.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, Self.kinds.contains(String(parts[0])), !parts[1].isEmpty else {
                return nil
            }
            kind = String(parts[0])
            account = String(parts[1])
            if parts.count == 3 {
                guard let generation = UInt64(parts[2]) else { return nil }
                self.generation = generation
            }
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
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct Subscriber {
        let accounts: Set<String>
        let continuation: AsyncStream<Change>.Continuation
    }

    /// An account someone in this process asked about.
    private struct Tracked {
        var version: UInt64
        /// How many watchers and subscribers ask about it; the entry goes at zero.
        var interest: Int
    }

    private struct State {
        /// Moved on by every notification delivered and every resynchronisation.
        var sequence: UInt64 = 0
        var accounts: [String: Tracked] = [:]
        var waiters: [UInt64: Waiter] = [:]
        /// Waits whose timeout fired before they were registered.
        var timedOut: Set<UInt64> = []
        var nextID: UInt64 = 0
        var subscribers: [UInt64: Subscriber] = [:]

        func version(of account: String) -> UInt64 { accounts[account]?.version ?? sequence }

        mutating func track(_ names: some Sequence<String>) {
            for name in names { accounts[name, default: Tracked(version: sequence, interest: 0)].interest += 1 }
        }

        mutating func untrack(_ names: some Sequence<String>) {
            for name in names {
                guard var tracked = accounts[name] else { continue }
                tracked.interest -= 1
                accounts[name] = tracked.interest > 0 ? tracked : nil
            }
        }
    }

    private let state = Locked(State())

    /// The version of `account` (its notifications, plus every reconnection): meaningful
    /// while someone watches or follows the account; otherwise the hub's sequence number.
    func version(of account: String) -> UInt64 {
        state.withLock { $0.version(of: account) }
    }

    /// How many accounts the hub keeps a version for.
    var trackedAccounts: Int { state.withLock { $0.accounts.count } }

    /// Runs `body` with `account`'s notifications counted: read ``version(of:)`` and
    /// ``wait(for:after:timeout:)`` inside it.
    func watching<R>(_ account: String, _ body: () async throws -> R) async rethrows -> R {
        state.withLock { $0.track([account]) }
        defer { state.withLock { $0.untrack([account]) } }
        return try await body()
    }

    /// A notification arrived; dropped unless someone in this process asks about its account.
    func deliver(_ change: Change) {
        var delivered = change
        let (ready, subscribers) = state.withLock {
            s -> ([CheckedContinuation<Void, Never>], [AsyncStream<Change>.Continuation]) in
            guard s.accounts[change.account] != nil else { return ([], []) }
            s.sequence &+= 1
            s.accounts[change.account]?.version = s.sequence
            delivered.version = s.sequence
            let interested = s.subscribers.values.filter { $0.accounts.contains(change.account) }.map(\.continuation)
            return (take(&s) { $0.account == change.account }, interested)
        }
        for c in ready { c.resume() }
        for s in subscribers { s.yield(delivered) }
    }

    /// The listening connection was (re)established: anything may have been missed.
    func resynchronise() {
        let (ready, subscribers, version) = state.withLock {
            s -> ([CheckedContinuation<Void, Never>], [AsyncStream<Change>.Continuation], UInt64) in
            s.sequence &+= 1
            for name in Array(s.accounts.keys) { s.accounts[name]?.version = s.sequence }
            return (take(&s) { _ in true }, s.subscribers.values.map(\.continuation), s.sequence)
        }
        for c in ready { c.resume() }
        var change = Change(kind: "resync", account: "*", generation: nil)
        change.version = version
        for s in subscribers { s.yield(change) }
    }

    /// Every change about `accounts` from now on (and a `resync` with account `*` after a
    /// reconnection); their versions are kept while the stream lives.
    func changes(for accounts: Set<String>) -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream<Change>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            s.subscribers[s.nextID] = Subscriber(accounts: accounts, continuation: continuation)
            s.track(accounts)
            return s.nextID
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { s in
                if let gone = s.subscribers.removeValue(forKey: id) { s.untrack(gone.accounts) }
            }
        }
        return stream
    }

    /// Ends every subscription.
    func finish() {
        for s in state.withLock({ $0.subscribers.values.map(\.continuation) }) { s.finish() }
    }

    /// Waits until `account`'s version moves past `after`, or `timeout` passes.
    func wait(for account: String, after: UInt64, timeout: Duration) async {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.resume(id) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.version(of: account) != after || s.timedOut.remove(id) != nil { return true }
                s.waiters[id] = Waiter(account: account, continuation: continuation)
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
        await timer.value
        state.withLock { _ = $0.timedOut.remove(id) }
    }

    private func resume(_ id: UInt64) {
        let waiter = state.withLock { s -> Waiter? in
            guard let waiter = s.waiters.removeValue(forKey: id) else {
                // Not registered yet: it must not wait once it is.
                s.timedOut.insert(id)
                return nil
            }
            return waiter
        }
        waiter?.continuation.resume()
    }

    private func take(_ s: inout State, where matches: (Waiter) -> Bool) -> [CheckedContinuation<Void, Never>] {
        let ids = s.waiters.filter { matches($0.value) }.map(\.key)
        return ids.compactMap { s.waiters.removeValue(forKey: $0)?.continuation }
    }
}

extension PostgresQuery {
    /// `change`, an `INSERT` or `UPDATE` of `account`'s row (without `RETURNING`), as one
    /// statement that returns the row's new generation when it changed the row, and then
    /// tells the other replicas (`kind account generation` on `channel`, see
    /// ``NotificationHub/Change``): a `pg_notify` in the same statement is sent by PostgreSQL
    /// only if the transaction commits, and only for a row the change touched.
    static func notifying(_ kind: String, account: AccountID, on channel: String, _ change: PostgresQuery) -> PostgresQuery {
        var binds = change.binds
        binds.append(channel)
        binds.append("\(kind) \(account.rawValue) ")
        let (channelBind, prefixBind) = (binds.count - 1, binds.count)
        return PostgresQuery(
            unsafeSQL: """
                WITH w AS (
                \(change.sql)
                RETURNING generation)
                SELECT w.generation FROM w, pg_notify($\(channelBind), $\(prefixBind) || w.generation) AS n
                """,
            binds: binds)
    }
}
