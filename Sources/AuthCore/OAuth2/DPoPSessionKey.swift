public import Crypto
public import Foundation
internal import Locking
internal import _CryptoExtras

/// The key a session's tokens are bound to (RFC 9449): read from the key file when the
/// session began, or generated for it. Proofs for the session's token requests and for every
/// request its routes proxy are signed with it, never with a newer file: tokens bound to
/// one key are refused with a proof of another. The session's access token carries it
/// (``AccessToken/dpopKey``), so a proxied request finds key and token together.
///
/// The key is parsed once and its proofs' header encoded once; the nonces servers asked for
/// are kept with it, by origin.
public final class DPoPSessionKey: Sendable, Equatable, CustomStringConvertible {
    /// The private key.
    let key: ClientKey
    /// The algorithm proofs are signed with.
    public let algorithm: ClientKey.Algorithm
    /// The base64url header every proof starts with.
    let header: String
    /// The public key's JWK thumbprint (RFC 7638), base64url: the `jkt` tokens bound to this
    /// key carry (`cnf.jkt`), and the `dpop_jkt` of an authorization request.
    public let thumbprint: String
    /// A generated key in PKCS #8 PEM, kept sealed with the session's tokens; nil for a key
    /// read from the key file (the file is where it lives).
    let generatedPEM: String?
    /// The `DPoP-Nonce` each server sent, for the proofs that go there next.
    public let nonces = DPoPNonces()
    /// The bytes of the proofs' `jti`s.
    private let random = Locked(RandomBlock())
    /// The `ath` of the access token proved last: a session proves the same token on every
    /// request until it is refreshed, so it is hashed once per token, not once per request.
    private let lastHash = Locked<(token: String, hash: String)?>(nil)

    private init(key: ClientKey, algorithm: ClientKey.Algorithm?, generatedPEM: String?) throws(AuthError) {
        let algorithm = algorithm ?? Self.defaultAlgorithm(for: key)
        self.key = key
        self.algorithm = algorithm
        self.header = try DPoPProof.header(key: key, algorithm: algorithm)
        do { self.thumbprint = try key.thumbprint() } catch {
            throw AuthError.input(.unusableDPoPKey, "the DPoP key has no usable public key")
        }
        self.generatedPEM = generatedPEM
    }

    /// The key in `pem` (a key file's contents, or a generated key from the store when
    /// `generated`); `algorithm` nil means ES256 for an EC key, PS256 for an RSA key.
    public convenience init(pem: String, algorithm: ClientKey.Algorithm?, generated: Bool) throws(AuthError) {
        let key: ClientKey
        do { key = try ClientKey(pem: pem) } catch { throw AuthError.input(.unusableDPoPKey, "the DPoP key \(error.message)") }
        try self.init(key: key, algorithm: algorithm, generatedPEM: generated ? pem : nil)
    }

    /// The key in the file of `file`, read now.
    public convenience init(
        file: DPoPKey, read: (String) throws -> Data = { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    ) throws(AuthError) {
        let pem: Data
        do { pem = try read(file.path) } catch {
            throw AuthError.input(.unusableDPoPKey, "the DPoP key file \(file.path) cannot be read")
        }
        let key: ClientKey
        do { key = try ClientKey(pem: String(decoding: pem, as: UTF8.self)) } catch {
            throw AuthError.input(.unusableDPoPKey, "the DPoP key file \(file.path) \(error.message)")
        }
        try self.init(key: key, algorithm: file.algorithm, generatedPEM: nil)
    }

    /// A new key for `algorithm`: EC P-256 for ES256, RSA of 2,048 bits for PS256 and RS256.
    public static func generate(algorithm: ClientKey.Algorithm) throws(AuthError) -> DPoPSessionKey {
        switch algorithm {
        case .es256:
            let key = P256.Signing.PrivateKey()
            return try DPoPSessionKey(key: .p256(key), algorithm: algorithm, generatedPEM: key.pemRepresentation)
        case .ps256, .rs256:
            let key: _RSA.Signing.PrivateKey
            do { key = try _RSA.Signing.PrivateKey(keySize: .bits2048) } catch {
                throw AuthError.input(.unusableDPoPKey, "no RSA key could be generated")
            }
            return try DPoPSessionKey(key: .rsa(key), algorithm: algorithm, generatedPEM: key.pemRepresentation)
        }
    }

    private static func defaultAlgorithm(for key: ClientKey) -> ClientKey.Algorithm {
        switch key {
        case .p256: .es256
        case .rsa: .ps256
        }
    }

    /// Whether the key was generated (and lives in the token store) rather than read from a file.
    public var isGenerated: Bool { generatedPEM != nil }

    /// What the token store keeps of this key with the tokens bound to it.
    public var binding: DPoPBinding { DPoPBinding(thumbprint: thumbprint, generatedKey: generatedPEM) }

    /// The proof of `method` to `url` at `now`, with the nonce `url`'s server asked for, and
    /// `ath` when it goes with `accessToken`; nil when the key cannot sign.
    public func proof(method: String, url: String, accessToken: String? = nil, now: Date = Date()) -> String? {
        try? DPoPProof.make(
            key: key, algorithm: algorithm, header: header, method: method, url: url, now: now,
            nonce: nonces.nonce(for: url), ath: accessToken.map(hash), jti: random.withLock { $0.take(16) })
    }

    /// `ath` of `accessToken`, hashed once per token.
    private func hash(_ accessToken: String) -> String {
        if let last = lastHash.withLock({ $0 }), last.token == accessToken { return last.hash }
        let hash = DPoPProof.accessTokenHash(accessToken)
        lastHash.withLock { $0 = (accessToken, hash) }
        return hash
    }

    /// Two keys are the same when their public keys are (the same thumbprint) and they sign
    /// with the same algorithm.
    public static func == (lhs: DPoPSessionKey, rhs: DPoPSessionKey) -> Bool {
        lhs.thumbprint == rhs.thumbprint && lhs.algorithm == rhs.algorithm
    }

    /// The thumbprint and algorithm; never the key.
    public var description: String {
        "DPoPSessionKey(\(algorithm.rawValue), jkt: \(thumbprint)\(isGenerated ? ", generated" : ""))"
    }
}

/// What the token store keeps, sealed with the tokens, of the DPoP key they are bound to:
/// its thumbprint, and the key itself when AuthGate generated it (so that a restart, or
/// another replica sharing the store, proves the same key).
public struct DPoPBinding: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The key's JWK thumbprint (RFC 7638), base64url.
    public var thumbprint: String
    /// A generated key in PKCS #8 PEM; nil for a key file's.
    public var generatedKey: String?

    /// Creates a binding.
    public init(thumbprint: String, generatedKey: String?) {
        self.thumbprint = thumbprint
        self.generatedKey = generatedKey
    }

    /// The thumbprint; a generated key redacted.
    public var description: String {
        "DPoPBinding(jkt: \(thumbprint), key: \(generatedKey == nil ? "file" : "<redacted>"))"
    }
}
