/// Why ``AuthActor`` could not hand out a token. Never includes a token.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes (used in problem documents and metrics).
    public enum Code: String, Sendable {
        /// There is no session: log in first.
        case loginRequired = "login_required"
        /// The session ended while the caller waited (see ``AuthError/logoutReason``).
        case sessionEnded = "session_ended"
        /// The refresh failed transiently; tokens were kept. See ``AuthError/retryAfter``.
        case refreshFailed = "refresh_failed"
        /// A previous transient failure is still being backed off; no request was sent.
        case backingOff = "backing_off"
        /// More refreshes than the refresh window allows: something rejects every new token.
        case excessiveRefresh = "excessive_refresh"
        /// The session has no refresh token and no renewable grant.
        case refreshNotPossible = "refresh_not_possible"
        /// The refresh's own request asked this actor for a token (an interceptor applied to
        /// the token endpoint call). Answered at once instead of deadlocking.
        case refreshReentered = "refresh_reentered"
        /// The login grant was refused or failed.
        case loginFailed = "login_failed"
        /// A store failed; see ``AuthError/storeError``.
        case storage
    }

    /// The stable code.
    public var code: Code
    /// Why the session ended, for ``Code/sessionEnded``.
    public var logoutReason: LogoutReason?
    /// When to try again, for ``Code/refreshFailed`` and ``Code/backingOff``.
    public var retryAfter: Duration?
    /// The token endpoint's failure, when there was one.
    public var endpointError: TokenEndpointError?
    /// The store failure description, for ``Code/storage``.
    public var storeError: String?
    /// The token store's typed error, when a token store failed.
    public var tokenStoreError: TokenStoreError?
    /// The session state store's typed error, when the state store failed.
    public var sessionStateStoreError: SessionStateStoreError?

    /// Creates an error.
    public init(
        _ code: Code, logoutReason: LogoutReason? = nil, retryAfter: Duration? = nil,
        endpointError: TokenEndpointError? = nil, storeError: String? = nil
    ) {
        self.code = code
        self.logoutReason = logoutReason
        self.retryAfter = retryAfter
        self.endpointError = endpointError
        self.storeError = storeError
    }

    /// No session.
    public static let loginRequired = AuthError(.loginRequired)

    /// A store failure, keeping the typed error when it is one of the stores' own.
    public static func storage(_ error: any Error, logoutReason: LogoutReason? = nil) -> AuthError {
        var result = AuthError(.storage, logoutReason: logoutReason, storeError: "\(error)")
        result.tokenStoreError = error as? TokenStoreError
        result.sessionStateStoreError = error as? SessionStateStoreError
        return result
    }

    /// Whether the session survives this error (the tokens are kept).
    public var keepsSession: Bool {
        switch code {
        case .refreshFailed, .backingOff, .excessiveRefresh, .refreshNotPossible, .refreshReentered: true
        default: false
        }
    }

    public var description: String {
        var text = "auth.\(code.rawValue)"
        if let logoutReason { text += " reason=\(logoutReason)" }
        if let retryAfter { text += " retry_after=\(retryAfter)" }
        if let endpointError { text += " (\(endpointError))" }
        if let storeError { text += " (\(storeError))" }
        return text
    }
}
