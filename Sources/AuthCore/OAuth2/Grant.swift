/// An RFC 6749 authorization grant presented to the token endpoint.
///
/// Printing a grant never prints a password, code, verifier or token.
public enum Grant: Sendable, Equatable, CustomStringConvertible {
    /// Resource owner password credentials (§4.3).
    case password(username: String, password: String, scope: String? = nil)
    /// Client credentials (§4.4).
    case clientCredentials(scope: String? = nil)
    /// Authorization code (§4.1) with the PKCE `code_verifier` (RFC 7636).
    case authorizationCode(code: String, redirectURI: String?, codeVerifier: String?)
    /// Refresh token (§6). `expiredAccessToken` is sent only when the endpoint mapping asks
    /// for it (servers that want the expired access token as `Bearer`).
    case refreshToken(String, expiredAccessToken: String? = nil, scope: String? = nil)

    /// The `grant_type` value.
    public var grantType: String {
        switch self {
        case .password: "password"
        case .clientCredentials: "client_credentials"
        case .authorizationCode: "authorization_code"
        case .refreshToken: "refresh_token"
        }
    }

    /// The grant type only.
    public var description: String { "Grant(\(grantType))" }
}
