public import Foundation
import Glibc
internal import Locking

/// Signs the DPoP proof of each proxied request with a session's key (RFC 9449 §7), on the
/// request's loop: the key is parsed once and kept, its file looked at again at most once a
/// second (one `stat`) and read again only when it changed; the nonces resource servers
/// asked for are kept per origin.
public final class DPoPSigner: Sendable, Equatable {
    /// The key and its file.
    public let key: DPoPKey
    /// The nonces resource servers sent (`DPoP-Nonce`), by origin.
    public let nonces = DPoPNonces()
    private let cache = Locked<Cached?>(nil)
    private let recheck: Duration

    private struct Cached {
        var key: ClientKey
        var algorithm: ClientKey.Algorithm
        /// The proofs' base64url header, the same for all of them.
        var header: String
        var stamp: [Int]
        var checked: ContinuousClock.Instant
    }

    /// A signer for `key`; the file is looked at again after `recheck`.
    public init(key: DPoPKey, recheck: Duration = .seconds(1)) {
        self.key = key
        self.recheck = recheck
    }

    private static let registry = Locked<[DPoPKey: DPoPSigner]>([:])

    /// The one signer of the process for `key`: routes made again by a reload keep its
    /// parsed key and its nonces.
    public static func shared(for key: DPoPKey) -> DPoPSigner {
        registry.withLock { signers in
            if let signer = signers[key] { return signer }
            let signer = DPoPSigner(key: key)
            signers[key] = signer
            return signer
        }
    }

    /// The proof for a request of `method` to `url` carrying `accessToken`, with the nonce
    /// `url`'s server asked for, if any; nil when the key file cannot be used (the request
    /// goes without one, and the API's refusal says so).
    public func proof(method: String, url: String, accessToken: String, now: Date = Date()) -> String? {
        guard let c = current() else { return nil }
        return try? DPoPProof.make(
            key: c.key, algorithm: c.algorithm, header: c.header, method: method, url: url, now: now,
            nonce: nonces.nonce(for: url), accessToken: accessToken)
    }

    /// The parsed key and its proofs' header, read again when the file changed.
    private func current(now: ContinuousClock.Instant = .now) -> Cached? {
        if let fresh = cache.withLock({ c -> Cached? in
            guard let c, now - c.checked < recheck else { return nil }
            return c
        }) {
            return fresh
        }
        let stamp = Self.stamp(key.path)
        if let unchanged = cache.withLock({ c -> Cached? in
            guard var cached = c, !stamp.isEmpty, cached.stamp == stamp else { return nil }
            cached.checked = now
            c = cached
            return cached
        }) {
            return unchanged
        }
        guard let pem = try? Data(contentsOf: URL(fileURLWithPath: key.path)),
            let parsed = try? ClientKey(pem: String(decoding: pem, as: UTF8.self)),
            let header = try? DPoPProof.header(key: parsed, algorithm: key.algorithm(for: parsed))
        else {
            cache.withLock { $0 = nil }
            return nil
        }
        let fresh = Cached(key: parsed, algorithm: key.algorithm(for: parsed), header: header, stamp: stamp, checked: now)
        cache.withLock { $0 = fresh }
        return fresh
    }

    /// Whether both sign with the same key file and algorithm.
    public static func == (lhs: DPoPSigner, rhs: DPoPSigner) -> Bool { lhs.key == rhs.key }

    /// Inode, size and modification time of the file at `path`; empty when it cannot be read.
    private static func stamp(_ path: String) -> [Int] {
        var s = stat()
        guard stat(path, &s) == 0 else { return [] }
        return [Int(s.st_ino), Int(s.st_size), s.st_mtim.tv_sec, s.st_mtim.tv_nsec]
    }
}
