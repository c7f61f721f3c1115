public import Foundation

/// What a token endpoint issued, with its wall-clock facts: the fields ``Credentials`` (the
/// tokens as the ``AuthActor`` holds them) and ``TokenRecord`` (as a store persists them)
/// share. Both read these fields through dynamic member lookup, so `credentials.accessToken`
/// and `record.generation` work as if the fields were their own.
///
/// Printing a `TokenSet` never prints a token.
public struct TokenSet: Sendable, Equatable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The access token.
    public var accessToken: String
    /// The refresh token, when the server issued one.
    public var refreshToken: String?
    /// The token type, normally `Bearer`.
    public var tokenType: String
    /// The granted scope.
    public var scope: String?
    /// An OpenID Connect ID token, when present.
    public var idToken: String?
    /// When the access token expires, on the wall clock; `nil` when unknown.
    public var expiresAt: Date?
    /// When the tokens were obtained (wall clock).
    public var issuedAt: Date
    /// The generation of the access token.
    public var generation: TokenGeneration
    /// What a token exchange issued (RFC 8693 §2.2.1 `issued_token_type`), for a session a
    /// token exchange started; `nil` for other sessions.
    public var issuedTokenType: String?

    /// Creates a token set.
    public init(
        accessToken: String, refreshToken: String?, tokenType: String = "Bearer", scope: String? = nil,
        idToken: String? = nil, expiresAt: Date?, issuedAt: Date, generation: TokenGeneration,
        issuedTokenType: String? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = tokenType
        self.scope = scope
        self.idToken = idToken
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.generation = generation
        self.issuedTokenType = issuedTokenType
    }

    /// The fields a description may show, every token redacted.
    var redactedFields: String {
        "accessToken: <redacted>, refreshToken: \(refreshToken == nil ? "nil" : "<redacted>"), tokenType: \(tokenType), "
            + "scope: \(scope ?? "nil"), expiresAt: \(expiresAt.map { "\($0)" } ?? "unknown")"
    }

    /// A description with every token redacted.
    public var description: String { "TokenSet(\(generation), \(redactedFields))" }

    /// Same as ``description``: tokens are never printed.
    public var debugDescription: String { description }
}

/// A type that carries a ``TokenSet`` and reads its fields as its own
/// (`credentials.accessToken` for `credentials.tokens.accessToken`).
@dynamicMemberLookup
public protocol TokenSetCarrier {
    /// The tokens and their wall-clock facts.
    var tokens: TokenSet { get set }
}

extension TokenSetCarrier {
    /// A field of ``tokens``.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<TokenSet, Value>) -> Value {
        get { tokens[keyPath: keyPath] }
        set { tokens[keyPath: keyPath] = newValue }
    }
}
