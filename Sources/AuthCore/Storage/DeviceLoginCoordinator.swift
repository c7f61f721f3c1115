/// Shares one account's device login (RFC 8628) between every process that shares its
/// stores, so that a person sees one user code whichever process they ask, and exactly one
/// process polls the token endpoint with its device code at a time.
///
/// ``AuthActor`` consults it when the store it was given is shared:
/// 1. ``sharedDeviceLogin(for:)`` before it asks the device authorization endpoint for a
///    code: a login still waiting (not ended, not expired) is adopted as it is.
/// 2. ``claimDeviceStart(replacing:for:)`` before it asks: when another process is asking
///    already, it waits for that one's codes and adopts them;
///    ``shareDeviceLogin(_:replacing:for:)`` with the one it was just issued, in place of
///    the one it read (compare-and-set: when another process shared one meanwhile, that one
///    is adopted and the new code is left to expire).
/// 3. ``claimDevicePolling(_:for:)`` before each poll: only the holder of the polling lease
///    polls; the others wait (``waitForDeviceChange(for:atMost:)``) and take the lease over
///    once its holder stops renewing it (it died).
/// 4. ``recordDeviceInterval(_:of:for:)`` after a `slow_down`, ``endDeviceLogin(_:outcome:for:)``
///    when the login ends for everyone (approved, refused, expired, cancelled, replaced),
///    ``releaseDevicePolling(_:for:)`` when this process stops polling without an ending.
///
/// A store that only this process writes has no such coordinator: the device login stays
/// in the actor's memory.
public protocol DeviceLoginCoordinator: Sendable {
    /// The device login shared for `account`, whatever its state; nil when none is. Throws
    /// ``AuthError`` (store domain) when it cannot tell.
    func sharedDeviceLogin(for account: AccountID) async throws -> SharedDeviceLogin?

    /// Claims the right to ask for new codes in place of the login whose id is `replacing`
    /// (nil: none was shared), so that processes starting together ask once: the claim lasts
    /// until the codes are shared, given up (``releaseDeviceStart(for:)``) or a lease's term.
    func claimDeviceStart(replacing: String?, for account: AccountID) async throws -> DeviceStartClaim

    /// Gives a claim to ask for new codes up (the request failed).
    func releaseDeviceStart(for account: AccountID) async

    /// Shares `login` in place of the one whose id is `replacing` (nil: none was shared);
    /// false when that is no longer the one shared. Ends this process's claim to ask.
    func shareDeviceLogin(_ login: SharedDeviceLogin, replacing: String?, for account: AccountID) async throws -> Bool

    /// Takes or keeps the polling lease of the login `id`, or says who polls or how it ended.
    func claimDevicePolling(_ id: String, for account: AccountID) async throws -> DevicePollClaim

    /// Waits until the shared device login of `account` may have changed (another process
    /// ended it, recorded an interval or let its lease go), at most `atMost`.
    func waitForDeviceChange(for account: AccountID, atMost: Duration) async

    /// Records the interval polling has now (it grows with each `slow_down`), for whoever
    /// polls next.
    func recordDeviceInterval(_ interval: Duration, of id: String, for account: AccountID) async

    /// Ends the login `id` for every process: `outcome` is `approved` or a
    /// ``DeviceLoginEnd/code``. Nothing happens when it has ended already.
    func endDeviceLogin(_ id: String, outcome: String, for account: AccountID) async

    /// Gives the polling lease of the login `id` up, so that another process takes it at once.
    func releaseDevicePolling(_ id: String, for account: AccountID) async
}

/// What ``DeviceLoginCoordinator/claimDevicePolling(_:for:)`` found.
public enum DevicePollClaim: Sendable, Equatable {
    /// This process holds the polling lease: poll now, at `interval` from the last poll.
    case poll(interval: Duration)
    /// Another process polls: ask again after at most this long (its lease's remaining term).
    case wait(atMost: Duration)
    /// The login ended: `approved` or a ``DeviceLoginEnd/code``; nil when another login
    /// took its place or none is shared.
    case ended(String?)
}

/// What ``DeviceLoginCoordinator/claimDeviceStart(replacing:for:)`` found.
public enum DeviceStartClaim: Sendable, Equatable {
    /// This process asks for the codes, and shares them.
    case start
    /// Another process is asking: read again after its codes are shared, at most this long.
    case wait(atMost: Duration)
    /// The shared login is no longer the one read: read it again.
    case changed
}
