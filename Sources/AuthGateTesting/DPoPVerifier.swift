internal import AuthCore
@preconcurrency internal import Crypto
public import Foundation
internal import _CryptoExtras

/// Checks a DPoP proof (RFC 9449 §4.3) as an authorization or resource server does: a
/// compact JWS with `typ` `dpop+jwt`, an asymmetric `alg` (ES256, PS256, RS256), a public
/// `jwk` in its header whose key verifies the signature, `htm` and `htu` the request's
/// method and URI (without query or fragment), `iat` within ``window`` of now, a `jti` not
/// seen before, the server's nonce when it asks for one, and `ath` the hash of the access
/// token it accompanies. Returns the key's thumbprint (`jkt`), which a bound token names.
public struct DPoPVerifier: Sendable {
    /// Why a proof is refused: `invalid_dpop_proof` with this description, or
    /// ``nonceNeeded``: `use_dpop_nonce`.
    public enum Refusal: String, Error, Sendable, Equatable {
        case malformed = "the DPoP proof is not a compact JWS with JSON header and claims"
        case wrongType = "the DPoP proof's typ is not dpop+jwt"
        case unsupportedAlgorithm = "the DPoP proof's alg is not ES256, PS256 or RS256"
        case badKey = "the DPoP proof's jwk is not a public EC P-256 or RSA key"
        case badSignature = "the DPoP proof's signature does not verify with its jwk"
        case wrongMethod = "the DPoP proof's htm is not the request's method"
        case wrongURI = "the DPoP proof's htu is not the request's URI"
        case stale = "the DPoP proof's iat is out of range"
        case replayed = "the DPoP proof's jti was used before"
        case wrongAccessToken = "the DPoP proof's ath is not the hash of the access token"
        case nonceNeeded = "the DPoP proof must carry the server's current nonce"
    }

    /// How far `iat` may be from now, either way.
    public var window: TimeInterval

    /// Creates a verifier.
    public init(window: TimeInterval = 60) {
        self.window = window
    }

    /// Checks `proof` for a request of `method` to `url` at `now`; `accessToken` when the
    /// request carries one, `nonce` when the server asks for one, `seen` the `jti`s seen
    /// before (this one is added). Returns the thumbprint of the proof's key.
    public func verify(
        _ proof: String, method: String, url: String, now: Date, accessToken: String? = nil, nonce: String? = nil,
        seen: inout Set<String>
    ) throws(Refusal) -> String {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { throw .malformed }
        guard header["typ"] as? String == "dpop+jwt" else { throw .wrongType }
        guard let alg = header["alg"] as? String, ["ES256", "PS256", "RS256"].contains(alg) else {
            throw .unsupportedAlgorithm
        }
        guard let jwk = header["jwk"] as? [String: Any], jwk["d"] == nil, jwk["p"] == nil else { throw .badKey }
        let input = Array("\(parts[0]).\(parts[1])".utf8)
        let thumbprint: String
        switch (jwk["kty"] as? String, alg) {
        case ("EC", "ES256"):
            guard jwk["crv"] as? String == "P-256", let x = (jwk["x"] as? String).flatMap(Base64URL.decode),
                let y = (jwk["y"] as? String).flatMap(Base64URL.decode), x.count == 32, y.count == 32,
                let key = try? P256.Signing.PublicKey(x963Representation: [4] + Array(x) + Array(y))
            else { throw .badKey }
            guard let s = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                key.isValidSignature(s, for: input)
            else { throw .badSignature }
            thumbprint = Self.thumbprint(
                #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(Array(x)))","y":"\#(Base64URL.encode(Array(y)))"}"#)
        case ("RSA", "PS256"), ("RSA", "RS256"):
            guard let n = (jwk["n"] as? String).flatMap(Base64URL.decode),
                let e = (jwk["e"] as? String).flatMap(Base64URL.decode),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { throw .badKey }
            let padding: _RSA.Signing.Padding = alg == "PS256" ? .PSS : .insecurePKCS1v1_5
            guard key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input, padding: padding)
            else { throw .badSignature }
            thumbprint = Self.thumbprint(
                #"{"e":"\#(Base64URL.encode(Array(e)))","kty":"RSA","n":"\#(Base64URL.encode(Array(n)))"}"#)
        default:
            throw .badKey
        }
        guard claims["htm"] as? String == method else { throw .wrongMethod }
        guard claims["htu"] as? String == DPoPProof.targetURI(url) else { throw .wrongURI }
        guard let iat = claims["iat"] as? Double, abs(iat - now.timeIntervalSince1970) <= window else { throw .stale }
        guard let jti = claims["jti"] as? String, !jti.isEmpty else { throw .malformed }
        if let accessToken, claims["ath"] as? String != DPoPProof.accessTokenHash(accessToken) { throw .wrongAccessToken }
        if let nonce, claims["nonce"] as? String != nonce { throw .nonceNeeded }
        guard seen.insert(jti).inserted else { throw .replayed }
        return thumbprint
    }

    private static func thumbprint(_ jwk: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(jwk.utf8))))
    }
}
