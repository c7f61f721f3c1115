private import Crypto

/// A PKCE code verifier and its S256 challenge (RFC 7636).
///
/// ```swift
/// let pkce = PKCEPair()
/// // send pkce.challenge with code_challenge_method=S256 in the authorization request,
/// // then .authorizationCode(code: code, redirectURI: uri, codeVerifier: pkce.verifier)
/// ```
public struct PKCEPair: Sendable, Equatable, CustomStringConvertible {
    /// The secret `code_verifier`.
    public let verifier: String
    /// The `code_challenge`: base64url(SHA-256(verifier)).
    public let challenge: String
    /// Always `S256`.
    public var method: String { "S256" }

    /// Creates a pair from 32 random bytes (a 43-character verifier).
    public init() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.init(verifier: Base64URL.encode(bytes))
    }

    /// Creates the pair for a given verifier.
    public init(verifier: String) {
        self.verifier = verifier
        self.challenge = PKCEPair.s256Challenge(for: verifier)
    }

    /// base64url(SHA-256(ASCII(verifier))).
    public static func s256Challenge(for verifier: String) -> String {
        Base64URL.encode(SHA256.hash(data: Array(verifier.utf8)))
    }

    /// The challenge only.
    public var description: String { "PKCEPair(challenge: \(challenge), verifier: <redacted>)" }
}
