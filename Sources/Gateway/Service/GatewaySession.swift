public import AuthCore

/// One named session of a gateway: its actor (tokens, refresh, events) and, when
/// configured, its user-info call.
public struct GatewaySession: Sendable {
    /// The name routes and the admin API (`?session=`) use; the account in the stores.
    public let name: String
    /// The session's actor.
    public let actor: AuthActor
    /// The session's user-info call, if configured.
    public let userInfo: UserInfoProbe?
    /// Whether the session can log in with the device grant (RFC 8628): it has a device
    /// authorization endpoint.
    public let deviceLogin: Bool

    /// Creates a session.
    public init(name: String, actor: AuthActor, userInfo: UserInfoProbe? = nil, deviceLogin: Bool = false) {
        self.deviceLogin = deviceLogin
        self.name = name
        self.actor = actor
        self.userInfo = userInfo
    }
}
