extension AuthError {
    // MARK: auth

    /// No session.
    public static let loginRequired = AuthError(.loginRequired)

    /// A device login is already waiting for a person.
    public static let deviceLoginPending = AuthError(.deviceLoginPending)

    // MARK: input

    /// The stored tokens are bound to another DPoP key than the one configured now.
    public static let dpopKeyChanged = AuthError(.dpopKeyChanged)

    /// The DPoP key file cannot be read now.
    public static let dpopKeyUnreadable = AuthError(.dpopKeyUnreadable)

    /// The session ended (`reason`) while the caller waited.
    public static func sessionEnded(_ reason: LogoutReason) -> AuthError {
        var error = AuthError(.sessionEnded)
        error.logoutReason = reason
        return error
    }

    /// A refresh failed transiently with `cause` (the token endpoint's error); try again
    /// after `retryAfter`.
    public static func refreshFailed(retryAfter: Duration, cause: AuthError) -> AuthError {
        var error = AuthError(.refreshFailed, underlying: cause)
        error.retryAfter = retryAfter
        return error
    }

    /// A transient failure (`lastError`) is being backed off for another `retryAfter`.
    public static func backingOff(retryAfter: Duration, lastError: AuthError?) -> AuthError {
        var error = AuthError(.backingOff, underlying: lastError)
        error.retryAfter = retryAfter
        return error
    }

    /// Refreshing is paused by the loop guard for `retryAfter`.
    public static func excessiveRefresh(retryAfter: Duration) -> AuthError {
        var error = AuthError(.excessiveRefresh)
        error.retryAfter = retryAfter
        return error
    }

    /// The tokens are bound to a newer client certificate than this process shows; look
    /// again after `retryAfter`.
    public static func clientCertificateOutdated(retryAfter: Duration) -> AuthError {
        var error = AuthError(
            .clientCertificateOutdated,
            message: "the session's tokens are bound to a newer client certificate than this process shows")
        error.retryAfter = retryAfter
        return error
    }

    /// The login failed with `cause` (the token endpoint's error).
    public static func loginFailed(_ cause: AuthError) -> AuthError {
        AuthError(.loginFailed, underlying: cause)
    }

    /// A store failure, keeping the store's error as ``underlying``.
    public static func storage(_ error: any Error, logoutReason: LogoutReason? = nil) -> AuthError {
        var result = AuthError(.storage, underlying: error)
        result.logoutReason = logoutReason
        return result
    }

    // MARK: token_endpoint

    /// A token endpoint failure with code `code` (``Code/Domain/tokenEndpoint``) and what it
    /// means for the session.
    public static func tokenEndpoint(
        _ code: Code, _ disposition: Disposition, status: Int? = nil, oauthError: OAuthErrorResponse? = nil,
        retryAfter: Duration? = nil, message: String = "", field: String? = nil, underlying: (any Error)? = nil
    ) -> AuthError {
        var error = AuthError(code, message: message, underlying: underlying)
        error.disposition = disposition
        error.status = status
        error.oauthError = oauthError
        error.retryAfter = retryAfter
        error.field = field
        return error
    }

    // MARK: transport

    /// A request that produced no HTTP response, with code `code`
    /// (``Code/Domain/transport``); `message` is the transport's own.
    public static func transport(_ code: Code, _ message: String = "") -> AuthError {
        AuthError(code, message: message)
    }

    // MARK: input

    /// Something AuthGate was given and cannot use (a key or assertion file, a DPoP key, a
    /// discovery document, a rejection policy), with code `code` (``Code/Domain/input``);
    /// `message` says what is wrong with it, never its content.
    public static func input(_ code: Code, _ message: String) -> AuthError {
        AuthError(code, message: message)
    }

    // MARK: store

    /// A store failure with code `code` (``Code/Domain/store``).
    public static func store(
        _ code: Code, _ store: Store? = nil, account: AccountID? = nil, message: String = ""
    ) -> AuthError {
        var error = AuthError(code, message: message)
        error.store = store
        error.account = account
        return error
    }

    /// A failed system call (``Code/io``).
    public static func io(
        _ errno: Int32, operation: String, account: AccountID? = nil, store: Store? = nil
    ) -> AuthError {
        var error = AuthError(.io)
        error.errno = errno
        error.operation = operation
        error.account = account
        error.store = store
        return error
    }

    /// This error with the store and the account filled in where they are missing.
    func about(_ account: AccountID?, in store: Store) -> AuthError {
        var error = self
        error.account = error.account ?? account
        error.store = error.store ?? store
        return error
    }
}
