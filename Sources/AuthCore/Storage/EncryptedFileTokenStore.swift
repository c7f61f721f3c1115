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
/// File layout: ``TokenSealer``'s, the same as every other token store's.
///
/// The file I/O runs on a private serial dispatch queue, never on the caller's executor.
public final class EncryptedFileTokenStore: TokenStore {
    /// The directory holding the files.
    public let directory: String
    private let sealer: TokenSealer
    private let file: AtomicFile
    private let io = BlockingIOQueue(label: "authgate.token-store")

    /// Opens (and creates, mode 0700, when absent) the store in `directory`.
    public convenience init(directory: String, key: TokenStoreKey) throws {
        try self.init(directory: directory, key: key, faults: nil)
    }

    /// Opens the store with injected system-call faults (tests only).
    init(directory: String, key: TokenStoreKey, faults: AtomicFile.FaultInjector?) throws {
        self.directory = directory
        self.sealer = TokenSealer(key: key)
        self.file = AtomicFile(faults: faults)
        try file.attributing(nil, in: .tokens) { try $0.ensureDirectory(directory) }
        // Temporary files a crash left behind (their writer is gone).
        file.removeStaleTemporaries(in: directory)
    }

    /// The file that holds `account`'s record.
    public func path(for account: AccountID) -> String {
        AtomicFile.path(for: account, in: directory, prefix: "tokens-", suffix: ".sealed")
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
        let sealed = try sealer.seal(record, for: account)
        try file.attributing(account, in: .tokens) { try $0.write(sealed, to: path(for: account), mode: 0o600) }
    }

    private func loadNow(for account: AccountID) throws -> TokenRecord? {
        let bytes = try file.attributing(account, in: .tokens) { try $0.read(path(for: account)) }
        guard let bytes else { return nil }
        return try sealer.open(bytes, for: account)
    }

    private func deleteNow(for account: AccountID) throws {
        try file.attributing(account, in: .tokens) { try $0.remove(path(for: account)) }
    }
}
