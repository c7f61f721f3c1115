internal import Foundation

extension AuthActor {
    struct ActiveSession {
        var credentials: Credentials
        var token: AccessToken
        var refreshAt: MonotonicInstant?
        var grantType: String?
        /// When the token was obtained, on the monotonic clock (for the loop guard).
        var obtainedAt: MonotonicInstant
        /// The DPoP key the tokens are bound to; nil without DPoP, or while a key file that
        /// could not be read at restore is waited for (``storedDPoP`` then says which key).
        var dpopKey: DPoPSessionKey?
        /// The binding the store held for the tokens when their key could not be had.
        var storedDPoP: DPoPBinding?
        /// The client certificate the tokens are bound to, as the store keeps it.
        var certificate: CertificateBinding?

        /// What the store keeps of the DPoP key with the tokens.
        var dpopBinding: DPoPBinding? { dpopKey?.binding ?? storedDPoP }

        /// Whether `token()` must refresh at `now`.
        func isDue(at now: MonotonicInstant) -> Bool {
            guard let refreshAt else { return false }
            return now >= refreshAt
        }

        /// The token as the loop guard sees it.
        var gateToken: RefreshGate.CurrentToken {
            RefreshGate.CurrentToken(
                generation: credentials.generation, obtainedAt: obtainedAt,
                lifetime: credentials.deadline.map { $0 - obtainedAt })
        }
    }

    /// Why a caller asks for a refresh, with the generation it saw. The decision to join,
    /// start or skip a refresh is taken from this and the state at the moment the caller
    /// registers, never from what the caller read before a suspension.
    enum RefreshTrigger {
        /// `token()` found the token of this generation due for refresh.
        case due(seen: TokenGeneration)
        /// The upstream rejected the token of this generation (`refresh(after:)`).
        case rejected(TokenGeneration)
    }

    enum Phase {
        case loggedOut(LogoutReason?)
        case active(ActiveSession)
    }

    struct InFlightRefresh {
        let id: UInt64
        let epoch: UInt64
        /// When the token request was sent: the new token's lifetime counts from here.
        let requestedAt: MonotonicInstant
        let requestedAtWall: Date
        /// The client certificate shown for this refresh: what its tokens are bound to.
        let certificate: CertificateBinding?
        var waiters: [UInt64: CheckedContinuation<AccessToken, any Error>] = [:]
        /// The token endpoint has issued the new pair (and spent the previous refresh
        /// token): what is left is its save.
        var answered = false
    }
}
