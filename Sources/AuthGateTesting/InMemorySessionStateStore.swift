public import AuthCore
internal import Locking

/// A ``SessionStateStore`` in memory, with failure injection.
public final class InMemorySessionStateStore: SessionStateStore {
    private struct State {
        var states: [AccountID: SessionState] = [:]
        var saveFailures: [AuthError] = []
        var loadFailures: [AuthError] = []
    }

    private let state = Locked(State())

    /// Creates an empty store.
    public init() {}

    /// Makes the next `count` saves fail with `error`.
    public func failNextSave(with error: AuthError = AuthError.io(28, operation: "write", store: .sessionState), count: Int = 1) {
        state.withLock { $0.saveFailures += Array(repeating: error, count: count) }
    }

    /// Makes the next `count` loads fail with `error`.
    public func failNextLoad(with error: AuthError = AuthError.store(.corrupt, .sessionState), count: Int = 1) {
        state.withLock { $0.loadFailures += Array(repeating: error, count: count) }
    }

    /// The stored state of `account`, bypassing failure injection.
    public func stored(for account: AccountID) -> SessionState? {
        state.withLock { $0.states[account] }
    }

    /// Replaces the stored state directly (to set up a scenario).
    public func setStored(_ value: SessionState?, for account: AccountID) {
        state.withLock { $0.states[account] = value }
    }

    /// The stored state, or the next injected load failure.
    public func load(for account: AccountID) async throws -> SessionState? {
        try state.withLock { state in
            if !state.loadFailures.isEmpty { throw state.loadFailures.removeFirst() }
            return state.states[account]
        }
    }

    /// Stores the state, or throws the next injected save failure.
    public func save(_ value: SessionState, for account: AccountID) async throws {
        try state.withLock { state in
            if !state.saveFailures.isEmpty { throw state.saveFailures.removeFirst() }
            state.states[account] = value
        }
    }
}
