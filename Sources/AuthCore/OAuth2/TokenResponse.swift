/// What a token endpoint answered (RFC 6749 §5.1), after the ``TokenEndpointMapping`` was
/// applied. Also the shape in which already-obtained tokens are imported.
public struct TokenResponse: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The access token.
    public var accessToken: String
    /// The token type, normally `Bearer`.
    public var tokenType: String
    /// `expires_in`, when the server sent it.
    public var expiresIn: Duration?
    /// A new refresh token, when the server issued one.
    public var refreshToken: String?
    /// The granted scope, when the server sent it.
    public var scope: String?
    /// An OpenID Connect ID token, when present.
    public var idToken: String?
    /// `issued_token_type` (RFC 8693 §2.2.1): what a token exchange issued, such as
    /// `urn:ietf:params:oauth:token-type:access_token`.
    public var issuedTokenType: String?

    /// Creates a token response.
    public init(
        accessToken: String, tokenType: String = "Bearer", expiresIn: Duration? = nil,
        refreshToken: String? = nil, scope: String? = nil, idToken: String? = nil,
        issuedTokenType: String? = nil
    ) {
        self.issuedTokenType = issuedTokenType
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.scope = scope
        self.idToken = idToken
    }

    /// A description with every token redacted.
    public var description: String {
        "TokenResponse(accessToken: <redacted>, refreshToken: \(refreshToken == nil ? "nil" : "<redacted>"), "
            + "tokenType: \(tokenType), expiresIn: \(expiresIn.map { "\($0)" } ?? "nil"), scope: \(scope ?? "nil"))"
    }

    /// Same as ``description``: tokens are never printed.
    public var debugDescription: String { description }
}
