/// Storage for the non-secret ``SessionState`` of each account.
public protocol SessionStateStore: Sendable {
    /// The state of `account`; `nil` when none was ever written.
    func load(for account: AccountID) async throws -> SessionState?

    /// Replaces the state of `account`. Durable on return.
    func save(_ state: SessionState, for account: AccountID) async throws
}
