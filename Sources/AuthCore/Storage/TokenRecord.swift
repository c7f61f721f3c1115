public import Foundation

/// The persisted form of a session's tokens: what a ``TokenStore`` saves.
///
/// Deadlines on the monotonic clock do not survive a restart, so the record keeps the
/// wall-clock expiry; ``AuthActor/restore()`` turns it back into a deadline.
public struct TokenRecord: TokenSetCarrier, Sendable, Equatable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The tokens and their wall-clock facts (read as the record's own fields:
    /// `record.accessToken`).
    public var tokens: TokenSet
    /// The grant that started the session (`client_credentials` sessions are renewed by
    /// running that grant again).
    public var grantType: String?
    /// The DPoP key the tokens are bound to: its thumbprint, and the key itself when it was
    /// generated (sealed with the tokens, like them).
    public var dpop: DPoPBinding?
    /// The client certificate the tokens are bound to (RFC 8705 §3): the one shown to the
    /// token endpoint when they were obtained; nil without one, or for tokens stored before
    /// bindings were kept.
    public var certificate: CertificateBinding?

    /// Creates a record.
    public init(
        accessToken: String, refreshToken: String?, tokenType: String = "Bearer",
        scope: String? = nil, idToken: String? = nil, expiresAt: Date?, issuedAt: Date,
        generation: TokenGeneration, grantType: String? = nil, dpop: DPoPBinding? = nil,
        certificate: CertificateBinding? = nil
    ) {
        self.dpop = dpop
        self.certificate = certificate
        self.tokens = TokenSet(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope, idToken: idToken,
            expiresAt: expiresAt, issuedAt: issuedAt, generation: generation)
        self.grantType = grantType
    }

    /// The record of `credentials`.
    public init(
        _ credentials: Credentials, grantType: String?, dpop: DPoPBinding? = nil, certificate: CertificateBinding? = nil
    ) {
        self.tokens = credentials.tokens
        self.grantType = grantType
        self.dpop = dpop
        self.certificate = certificate
    }

    /// Credentials for this record, with the monotonic deadline derived from the wall-clock
    /// expiry at (`now`, `wallNow`).
    public func credentials(now: MonotonicInstant, wallNow: Date) -> Credentials {
        let deadline = tokens.expiresAt.map { now + .interval($0.timeIntervalSince(wallNow)) }
        return Credentials(tokens: tokens, deadline: deadline)
    }

    private enum CodingKeys: String, CodingKey {
        case grantType
        case dpop
        case certificate
    }

    /// Reads the flat form the stores write: the ``TokenSet`` fields and `grantType` side by side.
    public init(from decoder: any Decoder) throws {
        tokens = try TokenSet(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        grantType = try container.decodeIfPresent(String.self, forKey: .grantType)
        dpop = try container.decodeIfPresent(DPoPBinding.self, forKey: .dpop)
        certificate = try container.decodeIfPresent(CertificateBinding.self, forKey: .certificate)
    }

    /// Writes the flat form: the ``TokenSet`` fields and `grantType` side by side.
    public func encode(to encoder: any Encoder) throws {
        try tokens.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(grantType, forKey: .grantType)
        try container.encodeIfPresent(dpop, forKey: .dpop)
        try container.encodeIfPresent(certificate, forKey: .certificate)
    }

    /// A description with every token redacted.
    public var description: String {
        "TokenRecord(\(tokens.generation), accessToken: <redacted>, refreshToken: "
            + "\(tokens.refreshToken == nil ? "nil" : "<redacted>"), expiresAt: \(tokens.expiresAt.map { "\($0)" } ?? "unknown"))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
