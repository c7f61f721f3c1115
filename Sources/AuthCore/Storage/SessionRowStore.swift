/// A store that keeps an account's session state and tokens side by side (one row of a
/// database) and reads both in one operation: ``AuthActor`` then reads a session back with
/// one round trip instead of two, which is what another replica's notification costs before
/// a change made there is followed here.
public protocol SessionRowStore: AnyObject, TokenStore, SessionStateStore {
    /// The state and the token record of `account`, read together; nil where none was written.
    func loadSession(for account: AccountID) async throws -> (state: SessionState?, record: TokenRecord?)
}
