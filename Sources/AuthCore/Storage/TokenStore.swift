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
