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
    /// The JWT bearer grant (RFC 7523 §2.1), with the assertion the client's
    /// ``JWTBearerGrantSettings`` read from their file; `scope` nil: the settings' scope.
    case jwtBearer(scope: String? = nil)
    /// Token exchange (RFC 8693), with the subject token the client's
    /// ``TokenExchangeSettings`` read from their file; `scope` nil: the settings' scope.
    case tokenExchange(scope: String? = nil)
    /// The device authorization grant's token request (RFC 8628 §3.4): the `device_code`
    /// the device authorization endpoint issued. The code is a secret: never printed.
    case deviceCode(String)

    /// `urn:ietf:params:oauth:grant-type:jwt-bearer`.
    public static let jwtBearerType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// `urn:ietf:params:oauth:grant-type:token-exchange`.
    public static let tokenExchangeType = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// `urn:ietf:params:oauth:grant-type:device_code`.
    public static let deviceCodeType = "urn:ietf:params:oauth:grant-type:device_code"

    /// The `grant_type` value.
    public var grantType: String {
        switch self {
        case .password: "password"
        case .clientCredentials: "client_credentials"
        case .authorizationCode: "authorization_code"
        case .refreshToken: "refresh_token"
        case .jwtBearer: Self.jwtBearerType
        case .tokenExchange: Self.tokenExchangeType
        case .deviceCode: Self.deviceCodeType
        }
    }

    /// The grant that renews a session logged in with `grantType` when it holds no refresh
    /// token: the same grant again for those that need no person (client credentials, a
    /// JWT bearer assertion, a token exchange), asking for the `scope` granted; nil for the
    /// others, which cannot be repeated without someone (a device login needs a person to
    /// approve it again).
    public static func renewal(grantType: String?, scope: String?) -> Grant? {
        switch grantType {
        case "client_credentials": .clientCredentials(scope: scope)
        case jwtBearerType: .jwtBearer(scope: scope)
        case tokenExchangeType: .tokenExchange(scope: scope)
        default: nil
        }
    }

    /// Whether the grant presents a credential read from a file (an assertion, a subject
    /// token) that can be put right on disk without a restart.
    public var readsFile: Bool {
        switch self {
        case .jwtBearer, .tokenExchange: true
        default: false
        }
    }

    /// The grant type only.
    public var description: String { "Grant(\(grantType))" }
}
