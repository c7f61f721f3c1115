extension AuthError {
    /// A stable, machine-readable code: a ``Domain`` and a ``name`` (`token_endpoint` and
    /// `rate_limited`), written `token_endpoint.rate_limited`. The set is closed: codes are
    /// the static members below.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// Where a failure happened.
        public enum Domain: String, Sendable, CaseIterable {
            /// The session (``AuthActor``).
            case auth
            /// The token (or revocation) endpoint.
            case tokenEndpoint = "token_endpoint"
            /// The HTTP transport: no response came.
            case transport
            /// A ``TokenStore`` or ``SessionStateStore``.
            case store
            /// What AuthCore is given to work with cannot be used: a key or assertion file, an
            /// issuer's discovery document, a rejection policy. ``AuthError/message`` says
            /// what is wrong, naming the file or field and never its contents.
            case input
        }

        /// The domain.
        public let domain: Domain
        /// The name within the domain, e.g. `refresh_failed`: what events, logout reasons and
        /// metrics carry.
        public let name: String

        private init(_ domain: Domain, _ name: String) {
            self.domain = domain
            self.name = name
        }

        /// `domain.name`, e.g. `auth.login_required`.
        public var description: String { "\(domain.rawValue).\(name)" }

        // MARK: auth

        /// There is no session: log in first.
        public static let loginRequired = Code(.auth, "login_required")
        /// The session ended (see ``AuthError/logoutReason``): while the caller waited, or
        /// before, and no login since.
        public static let sessionEnded = Code(.auth, "session_ended")
        /// The refresh failed transiently; tokens were kept. See ``AuthError/retryAfter``.
        public static let refreshFailed = Code(.auth, "refresh_failed")
        /// A previous transient failure is still being backed off; no request was sent.
        public static let backingOff = Code(.auth, "backing_off")
        /// More refreshes than the refresh window allows: something rejects every new token.
        public static let excessiveRefresh = Code(.auth, "excessive_refresh")
        /// The session has no refresh token and no renewable grant.
        public static let refreshNotPossible = Code(.auth, "refresh_not_possible")
        /// The refresh's own request asked the actor for a token (an interceptor applied to
        /// the token endpoint call). Answered at once instead of deadlocking.
        public static let refreshReentered = Code(.auth, "refresh_reentered")
        /// The login grant was refused or failed; the token endpoint's error is
        /// ``AuthError/underlying``.
        public static let loginFailed = Code(.auth, "login_failed")
        /// A store failed; the store's error is ``AuthError/underlying``.
        public static let storage = Code(.auth, "storage")
        /// A device login (RFC 8628) is already waiting for a person: finish it, or cancel
        /// it with a logout, before starting another.
        public static let deviceLoginPending = Code(.auth, "device_login_pending")
        /// The session's tokens are bound to a newer client certificate than the one this
        /// process shows (another replica's, RFC 8705 §3): it does not refresh them, and
        /// serves again once its certificate is the tokens' or newer
        /// (``CertificateBindingRule``). See ``AuthError/retryAfter``.
        public static let clientCertificateOutdated = Code(.auth, "client_certificate_outdated")

        // MARK: token_endpoint

        /// RFC 6749 §5.2 error body (see ``AuthError/oauthError``).
        public static let oauthError = Code(.tokenEndpoint, "oauth_error")
        /// 429 Too Many Requests.
        public static let rateLimited = Code(.tokenEndpoint, "rate_limited")
        /// 5xx.
        public static let serverError = Code(.tokenEndpoint, "server_error")
        /// A status that is neither success nor an OAuth error.
        public static let unexpectedStatus = Code(.tokenEndpoint, "unexpected_status")
        /// A success status whose body could not be understood.
        public static let malformedResponse = Code(.tokenEndpoint, "malformed_response")
        /// A success whose token could not be used safely (see ``TokenSyntax``); the field
        /// at fault is ``AuthError/field``.
        public static let invalidTokenSyntax = Code(.tokenEndpoint, "invalid_token_syntax")
        /// No response: the request never reached the server.
        public static let network = Code(.tokenEndpoint, "network")
        /// No response after the request was sent: the server may have acted on it.
        public static let networkAfterSend = Code(.tokenEndpoint, "network_after_send")
        /// The request could not be built from the configuration.
        public static let invalidConfiguration = Code(.tokenEndpoint, "invalid_configuration")
        /// The client's key or assertion cannot be used now (a file missing, unreadable, of
        /// the wrong kind, expired): nothing was sent, and the session keeps its token.
        public static let clientCredentialsUnusable = Code(.tokenEndpoint, "client_credentials_unusable")

        // MARK: transport

        /// The connection could not be made (nothing was sent).
        public static let connectFailed = Code(.transport, "connect_failed")
        /// The connection broke after the request was sent: the server may have acted on it.
        public static let connectionLost = Code(.transport, "connection_lost")
        /// No answer in time.
        public static let timeout = Code(.transport, "timeout")
        /// Any other transport failure.
        public static let other = Code(.transport, "other")

        // MARK: store

        /// A record that must exist does not.
        public static let notFound = Code(.store, "not_found")
        /// The record could not be encoded.
        public static let encodingError = Code(.store, "encoding_error")
        /// The stored bytes are not a record: truncated, tampered with, or not ours.
        public static let corrupt = Code(.store, "corrupt")
        /// The record was sealed with another key.
        public static let wrongKey = Code(.store, "wrong_key")
        /// The key is missing, unreadable or the wrong size.
        public static let keyUnavailable = Code(.store, "key_unavailable")
        /// A system call failed; see ``AuthError/errno`` and ``AuthError/operation``.
        public static let io = Code(.store, "io")
        /// The backing store refused for another reason.
        public static let unavailable = Code(.store, "unavailable")

        // MARK: input

        /// A private key cannot be used (``ClientKey``): not PEM, a curve other than P-256, an
        /// RSA key under 2,048 bits, or an algorithm it cannot sign.
        public static let unusableKey = Code(.input, "unusable_key")
        /// No client assertion or grant token could be made or read (``ClientAssertion``,
        /// ``GrantTokenFiles``): a file missing, unreadable, not one JWT, or expired.
        public static let unusableAssertion = Code(.input, "unusable_assertion")
        /// No DPoP proof could be made (``DPoPProof``, ``DPoPSessionKey``): the DPoP key is
        /// missing, unreadable or cannot sign.
        public static let unusableDPoPKey = Code(.input, "unusable_dpop_key")
        /// The stored tokens are bound to another DPoP key than the one configured now
        /// (``DPoPKeySource/key(for:)``).
        public static let dpopKeyChanged = Code(.input, "dpop_key_changed")
        /// The DPoP key file the stored tokens are bound to cannot be read now.
        public static let dpopKeyUnreadable = Code(.input, "dpop_key_unreadable")
        /// An issuer's discovery document cannot be used (``OIDCDiscovery/parse(_:expectedIssuer:)``).
        public static let invalidDiscovery = Code(.input, "invalid_discovery")
        /// An ``UpstreamRejectionPolicy`` cannot be used; the message names the field.
        public static let invalidPolicy = Code(.input, "invalid_policy")

        /// Every code, in the order above.
        public static let all: [Code] = [
            .loginRequired, .sessionEnded, .refreshFailed, .backingOff, .excessiveRefresh, .refreshNotPossible,
            .refreshReentered, .loginFailed, .storage, .clientCertificateOutdated,
            .oauthError, .rateLimited, .serverError, .unexpectedStatus, .malformedResponse, .invalidTokenSyntax,
            .network, .networkAfterSend, .invalidConfiguration, .clientCredentialsUnusable,
            .connectFailed, .connectionLost, .timeout, .other,
            .notFound, .encodingError, .corrupt, .wrongKey, .keyUnavailable, .io, .unavailable,
            .unusableKey, .unusableAssertion, .unusableDPoPKey, .dpopKeyChanged, .dpopKeyUnreadable, .invalidDiscovery,
            .invalidPolicy,
        ]
    }
}
