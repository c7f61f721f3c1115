public import Foundation

/// The few registered claims AuthGate reads from a JWT-shaped access token, without
/// verifying its signature (the authorization server and the upstream do that).
///
/// Used only to learn an expiry when the token response has no `expires_in`, and a subject
/// for display.
public struct JWTClaims: Sendable, Equatable, Decodable {
    /// `exp`: expiry, seconds since 1970.
    public var expiration: Double?
    /// `iat`: issued at, seconds since 1970.
    public var issuedAt: Double?
    /// `sub`: the subject.
    public var subject: String?

    enum CodingKeys: String, CodingKey {
        case expiration = "exp"
        case issuedAt = "iat"
        case subject = "sub"
    }

    /// Creates claims by hand.
    public init(expiration: Double? = nil, issuedAt: Double? = nil, subject: String? = nil) {
        self.expiration = expiration
        self.issuedAt = issuedAt
        self.subject = subject
    }

    /// Decodes the payload of a compact JWT (`header.payload.signature`); `nil` when the token
    /// is opaque or its payload is not a JSON object.
    public init?(decodingPayloadOf token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else { return nil }
        guard let claims = try? JSONDecoder().decode(JWTClaims.self, from: payload) else {
            return nil
        }
        self = claims
    }

    /// `exp` as a date.
    public var expirationDate: Date? {
        expiration.map { Date(timeIntervalSince1970: $0) }
    }
}
