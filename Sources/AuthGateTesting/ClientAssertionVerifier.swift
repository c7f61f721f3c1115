internal import AuthCore
// P256.Signing.PublicKey is not marked Sendable on Linux; it is immutable after creation.
@preconcurrency public import Crypto
public import Foundation
public import _CryptoExtras

/// Checks a client assertion (RFC 7523 §3) as an authorization server does: one compact JWS
/// whose signature verifies with a key registered for the client, `iss` and `sub` the client,
/// `aud` one of the server's identifiers, `exp` in the future and not too far, and a `jti`
/// not seen before (the caller keeps the ones it has seen).
public struct ClientAssertionVerifier: Sendable {
    /// A key registered for a client.
    public enum Key: Sendable {
        /// ES256.
        case p256(P256.Signing.PublicKey)
        /// PS256 or RS256.
        case rsa(_RSA.Signing.PublicKey)
        /// HS256 with the client secret (`client_secret_jwt`).
        case secret(String)
    }

    /// Why an assertion is refused; each is an `invalid_client` with this description.
    public enum Refusal: String, Error, Sendable, Equatable {
        case malformed = "the assertion is not a compact JWS with JSON header and claims"
        case unsupportedAlgorithm = "the assertion's alg is not one the client may use"
        case badSignature = "the assertion's signature does not verify with the client's registered key"
        case wrongIssuer = "the assertion's iss and sub must both be the client id"
        case wrongAudience = "the assertion's aud is not this server"
        case expired = "the assertion has expired"
        case lifetimeTooLong = "the assertion's exp is too far in the future"
        case missingJWTID = "the assertion has no jti"
        case replayed = "the assertion's jti was used before"
    }

    /// The claims of a verified assertion.
    public struct Claims: Sendable, Equatable {
        /// `sub` (the client id).
        public var subject: String
        /// `jti`.
        public var jwtID: String
        /// `exp`.
        public var expiration: Date
        /// The header's `kid`, when present.
        public var keyID: String?
        /// The header's `alg`.
        public var algorithm: String
    }

    /// The keys registered for the client.
    public var keys: [Key]
    /// The identifiers `aud` may name (the token endpoint, the issuer).
    public var audiences: Set<String>
    /// The longest lifetime accepted from now, in seconds.
    public var maximumLifetime: TimeInterval
    /// A client assertion (RFC 7523 §3, the default): `iss` and `sub` the client, a `jti`
    /// required. An authorization grant (RFC 7523 §2.1, `false`): `iss` whoever issued it
    /// (the caller chose the keys by it), `sub` the subject, `jti` optional.
    public var isClientAssertion: Bool

    /// Creates a verifier.
    public init(keys: [Key], audiences: Set<String>, maximumLifetime: TimeInterval = 300, isClientAssertion: Bool = true) {
        self.isClientAssertion = isClientAssertion
        self.keys = keys
        self.audiences = audiences
        self.maximumLifetime = maximumLifetime
    }

    /// Verifies `jwt` for `clientID` at `now`; `seen` says whether a `jti` was used before.
    public func verify(_ jwt: String, clientID: String?, now: Date, seen: (String) -> Bool) -> Result<Claims, Refusal> {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let payloadData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any],
            let alg = header["alg"] as? String
        else { return .failure(.malformed) }
        let input = Data((parts[0] + "." + parts[1]).utf8)
        var usable = false
        for key in keys {
            switch (key, alg) {
            case (.p256(let k), "ES256"):
                usable = true
                if let s = try? P256.Signing.ECDSASignature(rawRepresentation: signature), k.isValidSignature(s, for: input) {
                    return check(claims, header, alg, clientID, now, seen)
                }
            case (.rsa(let k), "PS256"), (.rsa(let k), "RS256"):
                usable = true
                let padding: _RSA.Signing.Padding = alg == "PS256" ? .PSS : .insecurePKCS1v1_5
                if k.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input, padding: padding) {
                    return check(claims, header, alg, clientID, now, seen)
                }
            case (.secret(let secret), "HS256"):
                usable = true
                if HMAC<SHA256>.isValidAuthenticationCode(
                    signature, authenticating: input, using: SymmetricKey(data: Data(secret.utf8)))
                {
                    return check(claims, header, alg, clientID, now, seen)
                }
            default: continue
            }
        }
        return .failure(usable ? .badSignature : .unsupportedAlgorithm)
    }

    private func check(
        _ claims: [String: Any], _ header: [String: Any], _ alg: String, _ clientID: String?, _ now: Date,
        _ seen: (String) -> Bool
    ) -> Result<Claims, Refusal> {
        guard let iss = claims["iss"] as? String, let sub = claims["sub"] as? String, !sub.isEmpty,
            !isClientAssertion || (iss == sub && (clientID == nil || sub == clientID))
        else { return .failure(.wrongIssuer) }
        let audience: [String] = (claims["aud"] as? String).map { [$0] } ?? (claims["aud"] as? [String]) ?? []
        guard audience.contains(where: audiences.contains) else { return .failure(.wrongAudience) }
        guard let exp = (claims["exp"] as? NSNumber)?.doubleValue else { return .failure(.malformed) }
        let expiration = Date(timeIntervalSince1970: exp)
        guard expiration > now else { return .failure(.expired) }
        guard expiration.timeIntervalSince(now) <= maximumLifetime else { return .failure(.lifetimeTooLong) }
        let jti = claims["jti"] as? String ?? ""
        guard !jti.isEmpty || !isClientAssertion else { return .failure(.missingJWTID) }
        guard jti.isEmpty || !seen(jti) else { return .failure(.replayed) }
        return .success(Claims(subject: sub, jwtID: jti, expiration: expiration, keyID: header["kid"] as? String, algorithm: alg))
    }
}
