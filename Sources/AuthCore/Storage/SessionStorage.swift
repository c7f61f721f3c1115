/// Secret storage for tokens, one record per account: the Keychain's job on iOS.
///
/// The verbs follow the Keychain wrappers AuthGate replaces: ``save(_:for:)`` updates on
/// duplicate, ``load(for:)`` answers `nil` when nothing is stored, ``delete(for:)`` accepts
/// an absent record. Every failure is an ``AuthError`` of the ``AuthError/Code/Domain/store`` domain; a record that cannot be read
/// (corrupt, tampered, wrong key) is an error, never an empty session.
public protocol TokenStore: Sendable {
    /// Saves `record` for `account`, replacing any previous record. Durable on return.
    func save(_ record: TokenRecord, for account: AccountID) async throws

    /// Loads the record of `account`; `nil` when there is none.
    func load(for account: AccountID) async throws -> TokenRecord?

    /// Deletes the record of `account`; succeeds when there is none. Durable on return.
    func delete(for account: AccountID) async throws
}

/// Storage for the non-secret ``SessionState`` of each account.
public protocol SessionStateStore: Sendable {
    /// The state of `account`; `nil` when none was ever written.
    func load(for account: AccountID) async throws -> SessionState?

    /// Replaces the state of `account`. Durable on return.
    func save(_ state: SessionState, for account: AccountID) async throws
}

/// A store that keeps an account's session state and tokens side by side (one row of a
/// database) and reads both in one operation: ``AuthActor`` then reads a session back with
/// one round trip instead of two, which is what another replica's notification costs before
/// a change made there is followed here.
public protocol SessionRowStore: AnyObject, TokenStore, SessionStateStore {
    /// The state and the token record of `account`, read together; nil where none was written.
    func loadSession(for account: AccountID) async throws -> (state: SessionState?, record: TokenRecord?)
}
