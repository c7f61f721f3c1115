/// Coordinates the refreshes of one account between every process that shares its tokens,
/// so that exactly one of them presents a refresh token however many want to.
///
/// ``AuthActor`` consults it around each refresh it starts:
/// 1. ``acquire(for:replacing:)`` before the token request: ``RefreshClaim/granted(_:)``
///    when this process may refresh the pair whose access token it names (the lease is
///    renewed by the coordinator while the request is in flight); ``RefreshClaim/superseded(_:)``
///    when the stored pair is no longer that one (another process refreshed, logged in or
///    out meanwhile): the actor adopts what is stored instead of refreshing. While another
///    process holds the lease, `acquire` waits for its outcome.
/// 2. ``commit(_:for:lease:)`` with the rotated pair: stored only when the stored pair is
///    still the one the lease was taken on (compare-and-set), so a late result never
///    overwrites a newer pair nor revives a session that was logged out.
/// 3. ``release(_:for:)`` when the request failed, so that another process may try.
///
/// A single process needs none of this: ``LocalRefreshCoordinator`` grants every request
/// and commits with a plain save.
public protocol RefreshCoordinator: Sendable {
    /// Takes the lease to replace the stored pair whose access token is `accessToken`, or
    /// says what is stored now. Throws ``AuthError`` (store domain) when it cannot tell.
    func acquire(for account: AccountID, replacing accessToken: String) async throws -> RefreshClaim

    /// Stores `record` if the lease still fences the pair it replaces.
    func commit(_ record: TokenRecord, for account: AccountID, lease: RefreshLease) async throws -> RefreshCommit

    /// Gives the lease up without a commit.
    func release(_ lease: RefreshLease, for account: AccountID) async

    /// Whether other processes write the same stores (then what looks like a half-finished
    /// login or logout at restore may be another process's, in progress, and is left alone).
    var sharesStore: Bool { get }
}

extension RefreshCoordinator {
    /// A coordinator coordinates processes that share the stores, unless it says otherwise.
    public var sharesStore: Bool { true }
}

/// The right to refresh one stored pair, as a coordinator granted it.
public struct RefreshLease: Sendable, Equatable, CustomStringConvertible {
    /// Who holds it (a replica's identity).
    public let owner: String
    /// The stored pair's version when the lease was taken: the fence of the commit.
    public let fence: UInt64

    /// Creates a lease.
    public init(owner: String, fence: UInt64) {
        self.owner = owner
        self.fence = fence
    }

    /// `owner@fence`.
    public var description: String { "\(owner)@\(fence)" }
}

/// What ``RefreshCoordinator/acquire(for:replacing:)`` found.
public enum RefreshClaim: Sendable, Equatable {
    /// This process refreshes; commit with the lease.
    case granted(RefreshLease)
    /// The stored pair is another one (adopt it), or none (`nil`: the session ended elsewhere).
    case superseded(TokenRecord?)
}

/// What ``RefreshCoordinator/commit(_:for:lease:)`` did.
public enum RefreshCommit: Sendable, Equatable {
    /// The rotated pair is stored.
    case committed
    /// The fence no longer held: this is what is stored now (`nil`: no session).
    case superseded(TokenRecord?)
}

/// The coordinator of a process that shares its tokens with no other: every acquire is
/// granted, every commit is a ``TokenStore/save(_:for:)``.
public struct LocalRefreshCoordinator: RefreshCoordinator {
    let store: any TokenStore

    /// A coordinator that commits to `store`.
    public init(store: any TokenStore) {
        self.store = store
    }

    /// Always granted.
    public func acquire(for account: AccountID, replacing accessToken: String) async throws -> RefreshClaim {
        .granted(RefreshLease(owner: "local", fence: 0))
    }

    /// Saves `record`.
    public func commit(_ record: TokenRecord, for account: AccountID, lease: RefreshLease) async throws -> RefreshCommit {
        try await store.save(record, for: account)
        return .committed
    }

    /// Nothing to give up.
    public func release(_ lease: RefreshLease, for account: AccountID) async {}

    /// No other process writes these stores.
    public var sharesStore: Bool { false }
}
