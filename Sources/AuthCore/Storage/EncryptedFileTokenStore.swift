internal import Crypto
internal import Foundation

/// A ``TokenStore`` that keeps one AES-GCM-sealed file per account in a directory.
///
/// - Files are mode 0600 in a directory created with mode 0700.
/// - Writes are atomic and durable: temporary file, `fsync`, `rename`, `fsync` of the
///   directory. A crash leaves the old record or the new one.
/// - The account name is authenticated data: a record copied to another account's file
///   does not open.
/// - A record that does not open is an error (``AuthError/Code/corrupt`` or
///   ``AuthError/Code/wrongKey``), never an empty session.
///
/// File layout: `"AGTS"`, a version byte (1), the 8-byte key fingerprint, then the AES-GCM
/// combined box (12-byte nonce, ciphertext, 16-byte tag) of the JSON-encoded ``TokenRecord``.
///
/// The file I/O runs on a private serial dispatch queue, never on the caller's executor.
public final class EncryptedFileTokenStore: TokenStore {
    /// The directory holding the files.
    public let directory: String
    private let key: TokenStoreKey
    private let file: AtomicFile
    private let io = BlockingIOQueue(label: "authgate.token-store")

    private static let magic: [UInt8] = Array("AGTS".utf8)
    private static let version: UInt8 = 1

    /// Opens (and creates, mode 0700, when absent) the store in `directory`.
    public convenience init(directory: String, key: TokenStoreKey) throws {
        try self.init(directory: directory, key: key, faults: nil)
    }

    /// Opens the store with injected system-call faults (tests only).
    init(directory: String, key: TokenStoreKey, faults: AtomicFile.FaultInjector?) throws {
        self.directory = directory
        self.key = key
        self.file = AtomicFile(faults: faults)
        try file.attributing(nil, in: .tokens) { try $0.ensureDirectory(directory) }
        // Temporary files a crash left behind (their writer is gone).
        file.removeStaleTemporaries(in: directory)
    }

    /// The file that holds `account`'s record.
    public func path(for account: AccountID) -> String {
        AtomicFile.path(for: account, in: directory, prefix: "tokens-", suffix: ".sealed")
    }

    private func associatedData(for account: AccountID) -> [UInt8] {
        Array("authgate.tokens.v1:\(account.rawValue)".utf8)
    }

    /// Seals and writes `record`, replacing the previous one.
    public func save(_ record: TokenRecord, for account: AccountID) async throws {
        try await io.run { try self.saveNow(record, for: account) }
    }

    /// Reads and opens the record of `account`; `nil` when there is no file.
    public func load(for account: AccountID) async throws -> TokenRecord? {
        try await io.run { try self.loadNow(for: account) }
    }

    /// Deletes the record of `account`; an absent file is fine.
    public func delete(for account: AccountID) async throws {
        try await io.run { try self.deleteNow(for: account) }
    }

    private func saveNow(_ record: TokenRecord, for account: AccountID) throws {
        let plaintext: Data
        do {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .secondsSince1970
            plaintext = try encoder.encode(record)
        } catch {
            throw AuthError.store(.encodingError, .tokens, account: account, message: "record did not encode")
        }
        let sealed: [UInt8]
        do {
            let box = try AES.GCM.seal(
                plaintext, using: key.key, authenticating: associatedData(for: account))
            guard let combined = box.combined else {
                throw AuthError.store(.encodingError, .tokens, account: account, message: "no combined box")
            }
            sealed = Self.magic + [Self.version] + key.identifier + Array(combined)
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError.store(.encodingError, .tokens, account: account, message: "sealing failed")
        }
        try file.attributing(account, in: .tokens) { try $0.write(sealed, to: path(for: account), mode: 0o600) }
    }

    private func loadNow(for account: AccountID) throws -> TokenRecord? {
        let bytes = try file.attributing(account, in: .tokens) { try $0.read(path(for: account)) }
        guard let bytes else { return nil }
        let headerLength = Self.magic.count + 1 + 8
        guard bytes.count > headerLength + 28, Array(bytes.prefix(4)) == Self.magic else {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "not a sealed token record")
        }
        guard bytes[4] == Self.version else {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "unknown version \(bytes[4])")
        }
        let identifier = Array(bytes[5..<headerLength])
        guard identifier == key.identifier else {
            throw AuthError.store(.wrongKey, .tokens, account: account, message: "record was sealed with another key")
        }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(combined: Data(bytes[headerLength...]))
            plaintext = try AES.GCM.open(
                box, using: key.key, authenticating: associatedData(for: account))
        } catch {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "authentication failed (tampered or truncated)")
        }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            return try decoder.decode(TokenRecord.self, from: plaintext)
        } catch {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "record did not decode")
        }
    }

    private func deleteNow(for account: AccountID) throws {
        try file.attributing(account, in: .tokens) { try $0.remove(path(for: account)) }
    }
}
