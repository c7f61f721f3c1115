public import AuthCore

/// What `authorization.autoLogin` does on each event of its session (pure).
///
/// - The session's state at start (or on resubscription) logged out: log in. A restart logs
///   in even after a logout someone asked for: the configuration says the sidecar runs
///   logged in; to keep it out, remove `autoLogin`.
/// - A logout someone asked for (`POST /auth/logout`, `authgate logout`): pause. The
///   operator ended the session on purpose (to rotate a credential, to cut a compromised
///   one off); logging straight back in with the same files would undo that. The next login
///   through the admin API, or a restart, resumes.
/// - A replacing login: nothing; the new session follows.
/// - A session ended by another replica sharing the store: nothing; that replica logs in
///   again (or was asked to log out) and this one follows through the store.
/// - Any other ending (a refused refresh, a revoked token, an expiry without a way to
///   renew, a user-info rejection, tokens missing at restore): log in again, with backoff.
/// - A login, from any source: logged in, stop trying.
/// - With the device grant: a device login that expired, was declined or refused starts a
///   new one (a new user code, logged); one that a logout cancelled or a login replaced
///   does not.
public enum AutoLoginRule {
    /// What to do.
    public enum Action: Sendable, Equatable {
        /// Log in (with backoff on failure) unless already trying.
        case logIn
        /// Logged in: stop trying, resume after a pause.
        case loggedIn
        /// Stay logged out until a login or a restart.
        case pause
        /// Nothing changes.
        case none
    }

    /// The action for `event`.
    public static func decide(_ event: AuthEvent) -> Action {
        switch event {
        case .state(let s), .restored(let s):
            return s.isLoggedIn ? .loggedIn : .logIn
        case .loggedIn:
            return .loggedIn
        case .loggedOut(let reason, _):
            switch reason {
            case .userInitiated: return .pause
            case .replacedByLogin, .endedElsewhere: return .none
            case .refreshRejected, .expiredWithoutRefreshToken, .tokensMissing, .userInfoRejected, .keyChanged: return .logIn
            }
        case .refreshed, .refreshFailed, .deviceAuthorization:
            return .none
        case .deviceLoginEnded(let end):
            // A device login nobody approved in time, or declined, starts again (a new user
            // code); one cancelled by a logout or replaced by a login does not.
            switch end {
            case .expired, .denied, .rejected, .storeFailed: return .logIn
            case .cancelled, .replaced: return .none
            }
        }
    }
}
