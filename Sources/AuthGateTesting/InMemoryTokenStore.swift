public import AuthCore
internal import Locking

/// A ``TokenStore`` in memory, with failure injection, for tests and `authgate dev`.
public final class InMemoryTokenStore: TokenStore {
    /// The operations failures can be injected into.
    public enum Operation: Sendable, Hashable {
        case save, load, delete
    }

    private struct State {
        var records: [AccountID: TokenRecord] = [:]
        var failures: [Operation: [AuthError]] = [:]
        var saves = 0
        var deletes = 0
    }

    private let state = Locked(State())

    /// Creates an empty store.
    public init() {}

    /// Makes the next `count` calls of `operation` fail with `error`.
    public func failNext(_ operation: Operation, with error: AuthError, count: Int = 1) {
        state.withLock { $0.failures[operation, default: []] += Array(repeating: error, count: count) }
    }

    /// Removes every pending injected failure.
    public func clearFailures() {
        state.withLock { $0.failures.removeAll() }
    }

    /// The stored record of `account`, bypassing failure injection.
    public func record(for account: AccountID) -> TokenRecord? {
        state.withLock { $0.records[account] }
    }

    /// Replaces the stored record directly (to set up a scenario).
    public func setRecord(_ record: TokenRecord?, for account: AccountID) {
        state.withLock { $0.records[account] = record }
    }

    /// How many saves succeeded.
    public var saveCount: Int { state.withLock { $0.saves } }

    /// How many deletes succeeded.
    public var deleteCount: Int { state.withLock { $0.deletes } }

    private func takeFailure(_ operation: Operation, _ state: inout State) -> AuthError? {
        guard var queue = state.failures[operation], !queue.isEmpty else { return nil }
        let error = queue.removeFirst()
        state.failures[operation] = queue
        return error
    }

    /// Stores the record, or throws the next injected save failure.
    public func save(_ record: TokenRecord, for account: AccountID) async throws {
        try state.withLock { state in
            if let error = takeFailure(.save, &state) { throw error }
            state.records[account] = record
            state.saves += 1
        }
    }

    /// The stored record, or the next injected load failure.
    public func load(for account: AccountID) async throws -> TokenRecord? {
        try state.withLock { state in
            if let error = takeFailure(.load, &state) { throw error }
            return state.records[account]
        }
    }

    /// Removes the record, or throws the next injected delete failure.
    public func delete(for account: AccountID) async throws {
        try state.withLock { state in
            if let error = takeFailure(.delete, &state) { throw error }
            state.records[account] = nil
            state.deletes += 1
        }
    }
}
