/// A change of session state, as broadcast by ``EventBroadcaster``.
public enum AuthEvent: Sendable, Equatable {
    /// The current state: the first element every new subscriber receives.
    case state(SessionStatus)
    /// The session was restored from the stores at start.
    case restored(SessionStatus)
    /// A login succeeded.
    case loggedIn(SessionStatus)
    /// A refresh installed a new access token.
    case refreshed(generation: TokenGeneration, persisted: Bool)
    /// A refresh failed transiently; tokens were kept. `retryAfter` is the backoff.
    case refreshFailed(code: String, retryAfter: Duration)
    /// The session ended. Sent exactly once per session epoch.
    case loggedOut(reason: LogoutReason, epoch: UInt64)
    /// A device login (RFC 8628) is waiting for a person: the user code and where to enter
    /// it. It ends with ``loggedIn(_:)``, or with ``deviceLoginEnded(_:)``.
    case deviceAuthorization(DeviceAuthorizationStatus)
    /// A device login ended without logging in.
    case deviceLoginEnded(DeviceLoginEnd)

    /// The event name (used as the SSE `event:` field).
    public var name: String {
        switch self {
        case .state: "state"
        case .restored: "restored"
        case .loggedIn: "logged_in"
        case .refreshed: "refreshed"
        case .refreshFailed: "refresh_failed"
        case .loggedOut: "logged_out"
        case .deviceAuthorization: "device_authorization"
        case .deviceLoginEnded: "device_login_ended"
        }
    }
}
