public import Foundation
internal import Locking

/// The key a session proves possession of with DPoP (RFC 9449): read from a PEM file for
/// each token request, like a `private_key_jwt` key, and the nonces servers asked for.
public struct DPoPKey: Sendable, Hashable {
    /// The PEM file of the key (EC P-256, or RSA of at least 2,048 bits).
    public var path: String
    /// `ES256`, `PS256` or `RS256`; nil: ES256 for an EC key, PS256 for an RSA key.
    public var algorithm: ClientKey.Algorithm?

    /// A key read from `path`.
    public init(path: String, algorithm: ClientKey.Algorithm? = nil) {
        self.path = path
        self.algorithm = algorithm
    }

    /// A proof of `method` to `url` at `now`; `read` reads the file (injected for tests).
    public func proof(
        method: String, url: String, now: Date, nonce: String?, accessToken: String? = nil,
        read: (String) throws -> Data = { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    ) throws(DPoPProof.Unusable) -> String {
        let pem: Data
        do { pem = try read(path) } catch { throw DPoPProof.Unusable(description: "the DPoP key file \(path) cannot be read") }
        let key: ClientKey
        do { key = try ClientKey(pem: String(decoding: pem, as: UTF8.self)) } catch {
            throw DPoPProof.Unusable(description: "the DPoP key file \(path) \(error.description)")
        }
        return try DPoPProof.make(
            key: key, algorithm: algorithm(for: key), method: method, url: url, now: now, nonce: nonce,
            accessToken: accessToken)
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

/// The last `DPoP-Nonce` each server sent (RFC 9449 §8 and §9), by origin: a proof to that
/// origin carries it until the server sends another.
public final class DPoPNonces: Sendable {
    private let nonces = Locked<[String: String]>([:])

    /// An empty store.
    public init() {}

    /// The nonce to put in a proof for `url`, if its server gave one.
    public func nonce(for url: String) -> String? {
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
