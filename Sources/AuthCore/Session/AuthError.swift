/// Every failure AuthCore reports, in one shape: a stable ``code``, a ``message``, the
/// ``underlying`` error that caused it, and the context its code needs (the account, the
/// HTTP status, when to try again, …).
///
/// Build one with a static factory: ``loginRequired``, ``sessionEnded(_:)``,
/// ``tokenEndpoint(_:_:status:oauthError:retryAfter:message:field:)``,
/// ``transport(_:_:)``, ``store(_:_:account:message:)``, ``io(_:operation:account:store:)``…
///
/// ```swift
/// do { _ = try await actor.accessToken() } catch let error as AuthError where error.code == .loginRequired {
///     // log in first
/// }
/// ```
///
/// The ``description`` names the code and the context, never a token, a client secret, a
/// key or an `Authorization` value: text that came from outside (a transport's message, an
/// authorization server's `error_description`, an underlying error) is shown only with
/// every credential-shaped word replaced by `<redacted>`.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What a token endpoint failure means for a session whose refresh failed this way.
    public enum Disposition: String, Sendable {
        /// The grant is dead: end the session.
        case terminal
        /// Try again later; keep the tokens.
        case transient
        /// The server may or may not have acted (it may have rotated the refresh token):
        /// keep the tokens and try again later, relying on the server's reuse grace window.
        case ambiguous
    }

    /// Which store failed, for the ``Code/Domain/store`` codes.
    public enum Store: String, Sendable {
        /// The ``TokenStore``.
        case tokens = "token_store"
        /// The ``SessionStateStore``.
        case sessionState = "session_state"
    }

    /// The stable code.
    public var code: Code
    /// A human sentence (never a token). Empty when the code says it all.
    public var message: String
    /// The error that caused this one, when there was one.
    public var underlying: (any Error)?

    /// Why the session ended, for ``Code/sessionEnded``.
    public var logoutReason: LogoutReason?
    /// When to try again, for ``Code/refreshFailed``, ``Code/backingOff``,
    /// ``Code/excessiveRefresh``, ``Code/clientCertificateOutdated`` and a token endpoint's
    /// `Retry-After`.
    public var retryAfter: Duration?
    /// What a token endpoint failure means for the session.
    public var disposition: Disposition?
    /// The HTTP status, when there was a response.
    public var status: Int?
    /// The RFC 6749 §5.2 error, when the token endpoint answered with one.
    public var oauthError: OAuthErrorResponse?
    /// The response field at fault (`access_token`, `token_type`, `refresh_token`), for
    /// ``Code/invalidTokenSyntax``. Its value is never kept.
    public var field: String?
    /// The account concerned, for store failures.
    public var account: AccountID?
    /// The store that failed.
    public var store: Store?
    /// The operation that failed, e.g. `fsync`.
    public var operation: String?
    /// The `errno` of a failed system call.
    public var errno: Int32?
    /// How far the token endpoint's clock (its answer's `Date`) was from this one when it
    /// refused a DPoP proof (`invalid_dpop_proof`); positive: the server's is ahead.
    public var serverClockOffset: Duration?

    /// Creates an error with `code`; prefer the static factories, which fill in the context.
    public init(_ code: Code, message: String = "", underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The underlying error when it is one of AuthCore's own (the token endpoint's failure
    /// behind ``Code/loginFailed`` or ``Code/refreshFailed``, the store's behind
    /// ``Code/storage``).
    public var underlyingAuthError: AuthError? { underlying as? AuthError }

    /// Whether the session survives this error (the tokens are kept).
    public var keepsSession: Bool {
        [.refreshFailed, .backingOff, .excessiveRefresh, .refreshNotPossible, .refreshReentered, .clientCertificateOutdated]
            .contains(code)
    }

    /// Whether the server may have processed the request (for refresh with rotation, the
    /// old refresh token may already be spent): a transport error after the request left.
    public var requestMayHaveBeenProcessed: Bool {
        code == .connectionLost || code == .timeout
    }

    /// Equal when the code and the context are; underlying errors are compared only when
    /// both are ``AuthError``s.
    public static func == (lhs: AuthError, rhs: AuthError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.logoutReason == rhs.logoutReason
            && lhs.retryAfter == rhs.retryAfter && lhs.disposition == rhs.disposition && lhs.status == rhs.status
            && lhs.oauthError == rhs.oauthError && lhs.field == rhs.field && lhs.account == rhs.account
            && lhs.store == rhs.store && lhs.operation == rhs.operation && lhs.errno == rhs.errno
            && (lhs.underlying == nil) == (rhs.underlying == nil) && lhs.underlyingAuthError == rhs.underlyingAuthError
    }

    /// The code, then the context: `auth.refresh_failed retry_after=2.0 seconds
    /// (token_endpoint.server_error transient status=503)`.
    public var description: String {
        var text = code.description
        if let store { text += " store=\(store.rawValue)" }
        if let account { text += " account=\(account)" }
        if let operation { text += " op=\(operation)" }
        if let errno { text += " errno=\(errno)" }
        if let disposition { text += " \(disposition.rawValue)" }
        if let status { text += " status=\(status)" }
        if let oauthError { text += " oauth=\(String(describing: oauthError).redactingCredentials)" }
        if let field { text += " field=\(field)" }
        if let logoutReason { text += " reason=\(String(describing: logoutReason).redactingCredentials)" }
        if let retryAfter { text += " retry_after=\(retryAfter)" }
        if !message.isEmpty { text += ": \(message.redactingCredentials)" }
        if let underlying { text += " (\(String(describing: underlying).redactingCredentials))" }
        return text
    }
}
