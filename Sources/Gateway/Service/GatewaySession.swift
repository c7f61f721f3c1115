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

    /// Creates a session.
    public init(name: String, actor: AuthActor, userInfo: UserInfoProbe? = nil) {
        self.name = name
        self.actor = actor
        self.userInfo = userInfo
    }
}
