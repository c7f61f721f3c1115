public import Foundation

/// The persisted form of a session's tokens: what a ``TokenStore`` saves.
///
/// Deadlines on the monotonic clock do not survive a restart, so the record keeps the
/// wall-clock expiry; ``AuthActor/restore()`` turns it back into a deadline.
public struct TokenRecord: Sendable, Equatable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The access token.
    public var accessToken: String
    /// The refresh token.
    public var refreshToken: String?
    /// The token type.
    public var tokenType: String
    /// The granted scope.
    public var scope: String?
    /// The ID token.
    public var idToken: String?
    /// The wall-clock expiry of the access token.
    public var expiresAt: Date?
    /// When the tokens were obtained.
    public var issuedAt: Date
    /// The generation of the access token.
    public var generation: TokenGeneration
    /// The grant that started the session (`client_credentials` sessions are renewed by
    /// running that grant again).
    public var grantType: String?

    /// Creates a record.
    public init(
        accessToken: String, refreshToken: String?, tokenType: String = "Bearer",
        scope: String? = nil, idToken: String? = nil, expiresAt: Date?, issuedAt: Date,
        generation: TokenGeneration, grantType: String? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = tokenType
        self.scope = scope
        self.idToken = idToken
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.generation = generation
        self.grantType = grantType
    }

    /// The record of `credentials`.
    public init(_ credentials: Credentials, grantType: String?) {
        self.init(
            accessToken: credentials.accessToken, refreshToken: credentials.refreshToken,
            tokenType: credentials.tokenType, scope: credentials.scope,
            idToken: credentials.idToken, expiresAt: credentials.expiresAt,
            issuedAt: credentials.issuedAt, generation: credentials.generation,
            grantType: grantType)
    }

    /// Credentials for this record, with the monotonic deadline derived from the wall-clock
    /// expiry at (`now`, `wallNow`).
    public func credentials(now: MonotonicInstant, wallNow: Date) -> Credentials {
        let deadline = expiresAt.map { now + .interval($0.timeIntervalSince(wallNow)) }
        return Credentials(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType,
            scope: scope, idToken: idToken, deadline: deadline, expiresAt: expiresAt,
            issuedAt: issuedAt, generation: generation)
    }

    /// A description with every token redacted.
    public var description: String {
        "TokenRecord(\(generation), accessToken: <redacted>, refreshToken: "
            + "\(refreshToken == nil ? "nil" : "<redacted>"), expiresAt: \(expiresAt.map { "\($0)" } ?? "unknown"))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
