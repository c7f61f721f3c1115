internal import Foundation

/// A ``SessionStateStore`` keeping one JSON file per account, written atomically
/// (temporary file, `fsync`, `rename`, `fsync` of the directory), mode 0600.
public final class FileSessionStateStore: SessionStateStore {
    /// The directory holding the files.
    public let directory: String
    private let file: AtomicFile
    private let io = BlockingIOQueue(label: "authgate.session-state")

    /// Opens (and creates, mode 0700, when absent) the store in `directory`.
    public convenience init(directory: String) throws {
        try self.init(directory: directory, faults: nil)
    }

    /// Opens the store with injected system-call faults (tests only).
    init(directory: String, faults: AtomicFile.FaultInjector?) throws {
        self.directory = directory
        self.file = AtomicFile(faults: faults)
        try file.attributing(nil, in: .sessionState) { try $0.ensureDirectory(directory) }
        // Temporary files a crash left behind (their writer is gone).
        file.removeStaleTemporaries(in: directory)
    }

    /// The file that holds `account`'s state.
    public func path(for account: AccountID) -> String {
        AtomicFile.path(for: account, in: directory, prefix: "state-", suffix: ".json")
    }

    /// Reads the state of `account`; `nil` when there is no file.
    public func load(for account: AccountID) async throws -> SessionState? {
        try await io.run { try self.loadNow(for: account) }
    }

    /// Replaces the state of `account`.
    public func save(_ state: SessionState, for account: AccountID) async throws {
        try await io.run { try self.saveNow(state, for: account) }
    }

    private func loadNow(for account: AccountID) throws -> SessionState? {
        let bytes = try file.attributing(account, in: .sessionState) { try $0.read(path(for: account)) }
        guard let bytes else { return nil }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(SessionState.self, from: Data(bytes))
        } catch {
            throw AuthError.store(.corrupt, .sessionState, account: account)
        }
    }

    private func saveNow(_ state: SessionState, for account: AccountID) throws {
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            data = try encoder.encode(state)
        } catch {
            throw AuthError.store(.encodingError, .sessionState, account: account)
        }
        try file.attributing(account, in: .sessionState) { try $0.write(Array(data), to: path(for: account), mode: 0o600) }
    }
}
