public import Crypto
internal import Foundation
public import _CryptoExtras

// Unchecked Sendable: swift-crypto's keys are immutable values over BoringSSL key objects
// whose signing operations BoringSSL makes safe to run from several threads at once; they
// are only not declared Sendable.

/// A private key the client signs with: its assertions (`private_key_jwt`, RFC 7523 §2.2)
/// and DPoP proofs (RFC 9449). An EC P-256 key (ES256) or an RSA key of at least 2,048 bits
/// (PS256 or RS256), read from a PEM file or generated.
public enum ClientKey: @unchecked Sendable {
    /// An EC key on P-256.
    case p256(P256.Signing.PrivateKey)
    /// An RSA key of at least 2,048 bits.
    case rsa(_RSA.Signing.PrivateKey)

    /// The JWS algorithms a key can sign with.
    public enum Algorithm: String, Sendable, Equatable, CaseIterable {
        /// ECDSA on P-256 with SHA-256.
        case es256 = "ES256"
        /// RSASSA-PSS with SHA-256.
        case ps256 = "PS256"
        /// RSASSA-PKCS1-v1_5 with SHA-256.
        case rs256 = "RS256"
    }

    /// Parses a PEM private key (PKCS #8, SEC 1 or PKCS #1).
    public init(pem: String) throws(AuthError) {
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            self = .p256(key)
            return
        }
        if pem.contains("EC PRIVATE KEY") || (try? P384.Signing.PrivateKey(pemRepresentation: pem)) != nil
            || (try? P521.Signing.PrivateKey(pemRepresentation: pem)) != nil
        {
            throw AuthError.input(.unusableKey, "is an EC key on a curve other than P-256 (ES256 needs P-256)")
        }
        if let key = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: pem) {
            guard key.keySizeInBits >= 2048 else {
                throw AuthError.input(.unusableKey, "is an RSA key of \(key.keySizeInBits) bits; at least 2048 are needed")
            }
            self = .rsa(key)
            return
        }
        throw AuthError.input(.unusableKey, "holds no EC P-256 or RSA private key in PEM")
    }

    /// The algorithm used when none is configured: ES256 for an EC key, RS256 for an RSA key
    /// (the one every OpenID Connect server supports).
    public var defaultAlgorithm: Algorithm {
        switch self {
        case .p256: .es256
        case .rsa: .rs256
        }
    }

    /// Whether the key can sign with `algorithm`.
    public func supports(_ algorithm: Algorithm) -> Bool {
        switch (self, algorithm) {
        case (.p256, .es256), (.rsa, .ps256), (.rsa, .rs256): true
        default: false
        }
    }

    /// The JWS signature of `input` with `algorithm` (ES256: the raw 64-byte r‖s).
    public func sign(_ input: [UInt8], with algorithm: Algorithm) throws -> [UInt8] {
        switch (self, algorithm) {
        case (.p256(let key), .es256):
            return Array(try key.signature(for: input).rawRepresentation)
        case (.rsa(let key), .ps256):
            return Array(try key.signature(for: input, padding: .PSS).rawRepresentation)
        case (.rsa(let key), .rs256):
            // RS256 is RSASSA-PKCS1-v1_5 by definition (RFC 7518 §3.3).
            return Array(try key.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
        default:
            throw AuthError.input(.unusableKey, "cannot sign with \(algorithm.rawValue)")
        }
    }

    /// The public key as a JWK (RFC 7517) with only its required members, in lexicographic
    /// order and without whitespace: the form RFC 7638 hashes, and the `jwk` header of a DPoP
    /// proof.
    public func publicJWK() throws -> String {
        switch self {
        case .p256(let key):
            let point = Array(key.publicKey.x963Representation)
            let x = Base64URL.encode(Array(point[1..<33]))
            let y = Base64URL.encode(Array(point[33..<65]))
            return #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        case .rsa(let key):
            let primitives = try key.publicKey.getKeyPrimitives()
            let n = Base64URL.encode(Array(primitives.modulus))
            let e = Base64URL.encode(Array(primitives.publicExponent))
            return #"{"e":"\#(e)","kty":"RSA","n":"\#(n)"}"#
        }
    }

    /// The public key's JWK thumbprint (RFC 7638, SHA-256), base64url: the default `kid`,
    /// and the `jkt` a DPoP-bound token names.
    public func thumbprint() throws -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(try publicJWK().utf8))))
    }
}
