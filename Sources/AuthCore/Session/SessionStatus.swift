public import Foundation

/// A snapshot of a session for display and for new event subscribers. Holds no secret.
public struct SessionStatus: Sendable, Equatable {
    /// The account.
    public var account: AccountID
    /// Whether a session is logged in.
    public var isLoggedIn: Bool
    /// The subject, when known.
    public var subject: String?
    /// The generation of the current access token.
    public var generation: TokenGeneration?
    /// When the current access token expires (wall clock).
    public var expiresAt: Date?
    /// When the last login happened.
    public var lastLogin: Date?
    /// Whether the session is in guest mode.
    public var isGuest: Bool
    /// The session epoch (grows at every login and logout).
    public var epoch: UInt64
    /// Why the last session ended, while logged out (`nil` when it never existed here).
    public var logoutReason: LogoutReason?
    /// The JWK thumbprint (RFC 7638) of the DPoP key the session's tokens are bound to,
    /// while logged in with DPoP.
    public var dpopThumbprint: String?
    /// A device login waiting for a person (RFC 8628), if one is.
    public var deviceAuthorization: DeviceAuthorizationStatus?
    /// What the token exchange that started the session issued (RFC 8693 §2.2.1
    /// `issued_token_type`), while logged in with such a session.
    public var issuedTokenType: String?

    /// Creates a status.
    public init(
        account: AccountID, isLoggedIn: Bool, subject: String? = nil,
        generation: TokenGeneration? = nil, expiresAt: Date? = nil, lastLogin: Date? = nil,
        isGuest: Bool = false, epoch: UInt64 = 0, logoutReason: LogoutReason? = nil,
        deviceAuthorization: DeviceAuthorizationStatus? = nil
    ) {
        self.deviceAuthorization = deviceAuthorization
        self.account = account
        self.isLoggedIn = isLoggedIn
        self.subject = subject
        self.generation = generation
        self.expiresAt = expiresAt
        self.lastLogin = lastLogin
        self.isGuest = isGuest
        self.epoch = epoch
        self.logoutReason = logoutReason
    }
}
