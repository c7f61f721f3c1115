internal import Crypto
internal import Foundation

/// The 256-bit AES-GCM key that seals token records.
///
/// The key is bound to the deployment and never derived from anything synced: it comes from
/// a file (a Kubernetes secret, a systemd credential) or from a value the executable read
/// from its environment and passes in. The library never reads the environment itself.
public struct TokenStoreKey: Sendable, CustomStringConvertible {
    private let bytes: [UInt8]
    /// The AES key (rebuilt on use: `SymmetricKey` is not `Sendable`).
    var key: SymmetricKey { SymmetricKey(data: bytes) }
    /// A short, non-secret fingerprint (HMAC of a fixed label) written beside each record, so
    /// a record sealed with another key is reported as ``AuthError/Code/wrongKey``
    /// rather than as corruption.
    let identifier: [UInt8]

    /// Creates a key from 32 raw bytes.
    public init(rawBytes: [UInt8]) throws {
        guard rawBytes.count == 32 else {
            throw AuthError.store(.keyUnavailable, message: "key must be 32 bytes, got \(rawBytes.count)")
        }
        self.init(checked: rawBytes)
    }

    /// A key from 32 bytes the caller has counted.
    private init(checked bytes: [UInt8]) {
        self.bytes = bytes
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("authgate.token-store.key-id.v1".utf8), using: SymmetricKey(data: bytes))
        self.identifier = Array(Array(mac).prefix(8))
    }

    /// Creates a key from base64 (or base64url) text holding 32 bytes, e.g. the value of an
    /// environment variable the executable read.
    public init(base64 text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed) ?? Base64URL.decode(trimmed) else {
            throw AuthError.store(.keyUnavailable, message: "key is not base64")
        }
        try self.init(rawBytes: Array(data))
    }

    /// A new random key.
    public static func random() -> TokenStoreKey {
        // 32 bytes by construction.
        TokenStoreKey(checked: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    /// Loads the key from `path` (32 raw bytes, or base64 text). When the file is absent and
    /// `createIfMissing` is true, writes a new random key there with mode 0600 (atomically)
    /// and returns it; otherwise throws ``AuthError/Code/keyUnavailable``. Processes
    /// creating the key at once all end with the same key: the file is created only once.
    public static func load(fromFile path: String, createIfMissing: Bool) throws -> TokenStoreKey {
        let file = AtomicFile()
        let bytes: [UInt8]?
        do {
            bytes = try file.read(path)
        } catch let error as AuthError {
            throw error.unreadableKey("cannot read key file \(path)")
        }
        if let bytes {
            if bytes.count == 32 { return try TokenStoreKey(rawBytes: bytes) }
            return try TokenStoreKey(base64: String(decoding: bytes, as: UTF8.self))
        }
        guard createIfMissing else {
            throw AuthError.store(.keyUnavailable, message: "key file \(path) does not exist")
        }
        let key = TokenStoreKey.random()
        let text = Data(key.bytes).base64EncodedString() + "\n"
        let created: Bool
        do {
            created = try file.create(Array(text.utf8), at: path, mode: 0o600)
        } catch let error as AuthError {
            throw error.unreadableKey("cannot create key file \(path)")
        }
        // Another process created it first: use its key, so both seal with the same one.
        return created ? key : try load(fromFile: path, createIfMissing: false)
    }

    /// The fingerprint only.
    public var description: String {
        "TokenStoreKey(id: \(identifier.map { String($0, radix: 16) }.joined()), <redacted>)"
    }
}

extension AuthError {
    /// This system call failure, as ``AuthError/Code/keyUnavailable`` with `message`.
    fileprivate func unreadableKey(_ message: String) -> AuthError {
        var error = self
        error.code = .keyUnavailable
        error.message = message
        return error
    }
}
