public import Foundation

/// The access token handed to a caller of ``AuthActor/token()``, with the generation to
/// pass to ``AuthActor/refresh(after:)`` if the upstream rejects it.
public struct AccessToken: Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The token itself.
    public let value: String
    /// The token type, normally `Bearer`.
    public let tokenType: String
    /// The generation of this token.
    public let generation: TokenGeneration
    /// When it expires on the wall clock, for display; `nil` when unknown.
    public let expiresAt: Date?
    /// The value of an `Authorization` header carrying this token, e.g. `Bearer abc`. Made
    /// once with the token: every authenticated request sends it.
    public let authorizationHeaderValue: String
    /// Whether ``value`` is an RFC 6750 `b64token` and ``tokenType`` an RFC 9110 `token`
    /// (``TokenSyntax``), so that ``authorizationHeaderValue`` holds visible ASCII only and
    /// can go into a header line unchecked. Decided once with the token, not per request;
    /// AuthGate accepts no other token, but a value made by hand may be anything.
    public let isWellFormed: Bool
    /// The DPoP key the token is bound to, when the session has one: every request carrying
    /// a DPoP token (``isDPoP``) goes with a proof signed by it.
    public let dpopKey: DPoPSessionKey?

    /// Whether the token is bound to a DPoP key (`token_type` `DPoP`, RFC 9449 §5): each
    /// request carrying it needs a proof.
    public var isDPoP: Bool {
        tokenType.utf8.count == 4 && tokenType.lowercased() == "dpop"
    }

    /// Creates an access token value.
    public init(
        value: String, tokenType: String, generation: TokenGeneration, expiresAt: Date?, dpopKey: DPoPSessionKey? = nil
    ) {
        self.value = value
        self.dpopKey = dpopKey
        self.tokenType = tokenType
        self.generation = generation
        self.expiresAt = expiresAt
        let type = tokenType.lowercased() == "bearer" ? "Bearer" : tokenType
        authorizationHeaderValue = "\(type) \(value)"
        isWellFormed = TokenSyntax.isB64Token(value) && TokenSyntax.isTokenType(tokenType)
    }

    /// Creates the access token of `credentials`.
    public init(_ credentials: Credentials, dpopKey: DPoPSessionKey? = nil) {
        self.init(
            value: credentials.accessToken, tokenType: credentials.tokenType,
            generation: credentials.generation, expiresAt: credentials.expiresAt, dpopKey: dpopKey)
    }

    /// A description with the token redacted.
    public var description: String { "AccessToken(\(generation), <redacted>)" }

    /// Same as ``description``: tokens are never printed.
    public var debugDescription: String { description }
}
