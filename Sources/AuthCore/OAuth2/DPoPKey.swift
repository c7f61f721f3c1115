public import Foundation
internal import Locking

/// A DPoP key file (RFC 9449): a PEM file holding an EC P-256 key, or an RSA key of at
/// least 2,048 bits, and the algorithm its proofs are signed with.
public struct DPoPKey: Sendable, Hashable {
    /// The PEM file of the key.
    public var path: String
    /// `ES256`, `PS256` or `RS256`; nil: ES256 for an EC key, PS256 for an RSA key.
    public var algorithm: ClientKey.Algorithm?

    /// A key read from `path`.
    public init(path: String, algorithm: ClientKey.Algorithm? = nil) {
        self.path = path
        self.algorithm = algorithm
    }

    /// The algorithm proofs with `key` are signed with.
    public func algorithm(for key: ClientKey) -> ClientKey.Algorithm {
        if let algorithm { return algorithm }
        switch key {
        case .p256: return .es256
        case .rsa: return .ps256
        }
    }
}

/// Where a session's DPoP key comes from.
public enum DPoPKeySource: Sendable, Hashable {
    /// A key file: read when a session begins; a session whose tokens are bound to another
    /// key than the file's ends (``LogoutReason/keyChanged``).
    case file(DPoPKey)
    /// A key generated when a session begins, kept sealed with its tokens, forgotten when
    /// it ends.
    case generated(ClientKey.Algorithm)

    /// A key for a session beginning now: the file's, read now, or a new one.
    public func keyForNewSession() throws(AuthError) -> DPoPSessionKey {
        switch self {
        case .file(let file): try DPoPSessionKey(file: file)
        case .generated(let algorithm): try DPoPSessionKey.generate(algorithm: algorithm)
        }
    }

    /// The key of tokens stored with `binding`, or why they cannot be used with this source:
    /// ``AuthError/dpopKeyChanged`` when the file now holds another key, or the store holds
    /// no generated key; ``AuthError/dpopKeyUnreadable`` when the key file cannot be read now
    /// (the session may keep its tokens and try again).
    ///
    /// Tokens stored without a binding (before bindings were kept) take the file's key.
    public func key(for binding: DPoPBinding?) -> Result<DPoPSessionKey, AuthError> {
        switch self {
        case .file(let file):
            guard let key = try? DPoPSessionKey(file: file) else { return .failure(.dpopKeyUnreadable) }
            if let binding, binding.thumbprint != key.thumbprint || binding.generatedKey != nil {
                return .failure(.dpopKeyChanged)
            }
            return .success(key)
        case .generated(let algorithm):
            guard let pem = binding?.generatedKey,
                let key = try? DPoPSessionKey(pem: pem, algorithm: algorithm, generated: true),
                key.thumbprint == binding?.thumbprint
            else { return .failure(.dpopKeyChanged) }
            return .success(key)
        }
    }

}

/// The last `DPoP-Nonce` each server sent (RFC 9449 §8 and §9), by origin: a proof to that
/// origin carries it until the server sends another.
public final class DPoPNonces: Sendable {
    private let nonces = Locked<[String: String]>([:])

    /// An empty store.
    public init() {}

    /// The nonce to put in a proof for `url`, if its server gave one.
    public func nonce(for url: String) -> String? {
        // Most servers never send one: no origin to work out then.
        if nonces.withLock({ $0.isEmpty }) { return nil }
        let origin = Self.origin(url)
        return nonces.withLock { $0[origin] }
    }

    /// Keeps `nonce` for `url`'s server, replacing the one before.
    public func remember(_ nonce: String, for url: String) {
        let origin = Self.origin(url)
        nonces.withLock { $0[origin] = nonce }
    }

    /// `scheme://authority` of `url`, lower-cased.
    static func origin(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url.lowercased() }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return (url[..<schemeEnd.upperBound] + authority).lowercased()
    }
}
