/// Why a token endpoint call failed, and what that means for the session.
///
/// Descriptions carry the status, the OAuth error code and description, never a token.
public struct TokenEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes.
    public enum Code: String, Sendable {
        /// RFC 6749 §5.2 error body (see ``TokenEndpointError/oauthError``).
        case oauthError = "oauth_error"
        /// 429 Too Many Requests.
        case rateLimited = "rate_limited"
        /// 5xx.
        case serverError = "server_error"
        /// A status that is neither success nor an OAuth error.
        case unexpectedStatus = "unexpected_status"
        /// A success status whose body could not be understood.
        case malformedResponse = "malformed_response"
        /// A success whose token could not be used safely (see ``TokenSyntax``); the field
        /// at fault is ``TokenEndpointError/field``.
        case invalidTokenSyntax = "invalid_token_syntax"
        /// No response: the request never reached the server.
        case network
        /// No response after the request was sent: the server may have acted on it.
        case networkAfterSend = "network_after_send"
        /// The request could not be built from the configuration.
        case invalidConfiguration = "invalid_configuration"
    }

    /// What the failure means for a session whose refresh failed this way.
    public enum Disposition: String, Sendable {
        /// The grant is dead: end the session.
        case terminal
        /// Try again later; keep the tokens.
        case transient
        /// The server may or may not have acted (it may have rotated the refresh token):
        /// keep the tokens and try again later, relying on the server's reuse grace window.
        case ambiguous
    }

    /// The stable code.
    public var code: Code
    /// What it means for the session.
    public var disposition: Disposition
    /// The HTTP status, when there was a response.
    public var status: Int?
    /// The OAuth error, when the body was one.
    public var oauthError: OAuthErrorResponse?
    /// The server's `Retry-After`, when sent.
    public var retryAfter: Duration?
    /// A human message (never a token).
    public var message: String
    /// The response field at fault (`access_token`, `token_type`, `refresh_token`), for
    /// ``Code/invalidTokenSyntax``. Its value is never kept.
    public var field: String?

    /// Creates an error.
    public init(
        code: Code, disposition: Disposition, status: Int? = nil,
        oauthError: OAuthErrorResponse? = nil, retryAfter: Duration? = nil, message: String = "",
        field: String? = nil
    ) {
        self.code = code
        self.disposition = disposition
        self.status = status
        self.oauthError = oauthError
        self.retryAfter = retryAfter
        self.message = message
        self.field = field
    }

    public var description: String {
        var parts = ["token_endpoint.\(code.rawValue)", disposition.rawValue]
        if let status { parts.append("status \(status)") }
        if let oauthError { parts.append("\(oauthError)") }
        if let retryAfter { parts.append("retry after \(retryAfter)") }
        if let field { parts.append("field \(field)") }
        if !message.isEmpty { parts.append(message) }
        return parts.joined(separator: ", ")
    }
}
