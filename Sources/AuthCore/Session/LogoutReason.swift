/// Why a session ended.
public enum LogoutReason: Sendable, Equatable, CustomStringConvertible {
    /// Someone asked (`POST /auth/logout`, `authgate logout`).
    case userInitiated
    /// The authorization server refused the refresh for good (`invalid_grant`, …).
    case refreshRejected(code: String)
    /// The access token expired and there is no way to renew it.
    case expiredWithoutRefreshToken
    /// A new login replaced the session.
    case replacedByLogin
    /// Found at restore: the state said "logged in" but the token store held no tokens.
    case tokensMissing
    /// The user-info call rejected the session's token even after a refresh (SEEDS row 4:
    /// on that error the tokens are cleared).
    case userInfoRejected(status: Int)
    /// Another process that shares the token store ended the session (a logout, a refused
    /// refresh, … there); this process followed without writing the store.
    case endedElsewhere
    /// The session's tokens are bound to a DPoP key other than the one configured now (the
    /// key file changed, or the store holds no generated key for them): no proof could
    /// carry them any more.
    case keyChanged

    /// A stable code for logs, metrics and problem documents.
    public var code: String {
        switch self {
        case .userInitiated: "user_initiated"
        case .refreshRejected: "refresh_rejected"
        case .expiredWithoutRefreshToken: "expired_without_refresh_token"
        case .replacedByLogin: "replaced_by_login"
        case .tokensMissing: "tokens_missing"
        case .userInfoRejected: "user_info_rejected"
        case .endedElsewhere: "ended_elsewhere"
        case .keyChanged: "key_changed"
        }
    }

    public var description: String {
        switch self {
        case .refreshRejected(let code): "refresh_rejected(\(code))"
        case .userInfoRejected(let status): "user_info_rejected(\(status))"
        default: code
        }
    }
}
