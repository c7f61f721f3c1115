internal import Crypto
public import Foundation

/// Seals a ``TokenRecord`` for storage and opens it again: the one sealed format every token
/// store writes, so that a file, a database row or a backup of either shows no token.
///
/// Layout: `"AGTS"`, a version byte (1), the 8-byte key fingerprint, then the AES-GCM
/// combined box (12-byte nonce, ciphertext, 16-byte tag) of the JSON-encoded record. The
/// account name is authenticated data: a record copied to another account does not open.
///
/// ```swift
/// let sealer = TokenSealer(key: key)
/// let bytes = try sealer.seal(record, for: account)      // store these
/// let again = try sealer.open(bytes, for: account)       // == record
/// ```
public struct TokenSealer: Sendable {
    private let key: TokenStoreKey

    private static let magic: [UInt8] = Array("AGTS".utf8)
    private static let version: UInt8 = 1

    /// A sealer with `key`.
    public init(key: TokenStoreKey) {
        self.key = key
    }

    private func associatedData(for account: AccountID) -> [UInt8] {
        Array("authgate.tokens.v1:\(account.rawValue)".utf8)
    }

    /// The sealed bytes of `record` for `account`. Throws ``AuthError/Code/encodingError``.
    public func seal(_ record: TokenRecord, for account: AccountID) throws -> [UInt8] {
        let plaintext: Data
        do {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .secondsSince1970
            plaintext = try encoder.encode(record)
        } catch {
            throw AuthError.store(.encodingError, .tokens, account: account, message: "record did not encode")
        }
        return try seal(plaintext, authenticating: associatedData(for: account), for: account)
    }

    /// The sealed bytes of `plaintext`, with `associatedData` authenticated.
    func seal(_ plaintext: Data, authenticating associatedData: [UInt8], for account: AccountID) throws -> [UInt8] {
        do {
            let box = try AES.GCM.seal(plaintext, using: key.key, authenticating: associatedData)
            guard let combined = box.combined else {
                throw AuthError.store(.encodingError, .tokens, account: account, message: "no combined box")
            }
            return Self.magic + [Self.version] + key.identifier + Array(combined)
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError.store(.encodingError, .tokens, account: account, message: "sealing failed")
        }
    }

    /// The record `bytes` hold for `account`. Throws ``AuthError/Code/corrupt`` (not a
    /// sealed record, tampered, truncated, another account's) or ``AuthError/Code/wrongKey``.
    public func open(_ bytes: [UInt8], for account: AccountID) throws -> TokenRecord {
        let plaintext = try open(bytes, authenticating: associatedData(for: account), for: account)
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            return try decoder.decode(TokenRecord.self, from: plaintext)
        } catch {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "record did not decode")
        }
    }

    /// The plaintext of the sealed `bytes`, with `associatedData` authenticated.
    func open(_ bytes: [UInt8], authenticating associatedData: [UInt8], for account: AccountID) throws -> Data {
        let headerLength = Self.magic.count + 1 + 8
        guard bytes.count > headerLength + 28, Array(bytes.prefix(4)) == Self.magic else {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "not a sealed token record")
        }
        guard bytes[4] == Self.version else {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "unknown version \(bytes[4])")
        }
        guard Array(bytes[5..<headerLength]) == key.identifier else {
            throw AuthError.store(.wrongKey, .tokens, account: account, message: "record was sealed with another key")
        }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(combined: Data(bytes[headerLength...]))
            plaintext = try AES.GCM.open(box, using: key.key, authenticating: associatedData)
        } catch {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "authentication failed (tampered or truncated)")
        }
        return plaintext
    }
}
