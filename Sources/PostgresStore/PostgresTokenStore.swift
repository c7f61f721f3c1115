public import AuthCore
internal import Foundation
public import Logging
internal import PostgresNIO
internal import Locking

/// A ``AuthCore/TokenStore`` and ``AuthCore/SessionStateStore`` in one PostgreSQL table, shared
/// by every replica that serves the same identity: one row per account.
///
/// - Tokens are sealed with ``AuthCore/TokenSealer`` (the encrypted file store's AES-GCM key
///   and format) before they leave the process: the table, a dump or a backup shows no token.
/// - The session state (logged in, subject, last login, guest) sits beside them in the same
///   row, so every replica agrees on it.
/// - ``open(_:password:key:logger:)`` connects once on its own to name what is wrong
///   (unreachable, password, database, rights), creates or migrates the schema (with a
///   version row, under an advisory lock so that replicas starting together do not race),
///   and checks that the role may read and write the table.
/// - Every operation is bounded by ``operationTimeout``: a database that does not answer is
///   an ``AuthCore/AuthError/Code/unavailable`` error, never a request that hangs.
public final class PostgresTokenStore: TokenStore, SessionStateStore {
    /// The settings it was opened with.
    public let configuration: PostgresStoreConfiguration
    /// How long one operation may take before it fails as unavailable.
    public let operationTimeout: Duration
    let client: PostgresClient
    let sealer: TokenSealer
    let logger: Logger
    private let runTask: Task<Void, Never>
    private let reachable = Locked(true)

    /// Whether the last operation reached the database (read without waiting, for `/readyz`).
    public var isReachable: Bool { reachable.withLock { $0 } }

    /// Records whether an operation reached the database.
    func recordReachable(_ ok: Bool) { reachable.withLock { $0 = ok } }

    init(
        configuration: PostgresStoreConfiguration, client: PostgresClient, sealer: TokenSealer, logger: Logger,
        operationTimeout: Duration
    ) {
        self.configuration = configuration
        self.client = client
        self.sealer = sealer
        self.logger = logger
        self.operationTimeout = operationTimeout
        let reachable = self.reachable
        self.runTask = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                group.addTask {
                    // Whether the database answers, for `/readyz`, even while no session writes.
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(2))
                        if Task.isCancelled { break }
                        let ok = await Self.ping(client, timeout: operationTimeout)
                        reachable.withLock { $0 = ok }
                    }
                }
            }
        }
    }

    /// Connects, migrates and checks the store; throws a ``PostgresStoreError`` naming the
    /// configuration field at fault (`store.url`, `store.passwordFile`, `store.table`,
    /// `store.tlsMode`).
    ///
    /// - Parameters:
    ///   - configuration: where the database is.
    ///   - password: the role's password (from `store.passwordFile`), if it needs one.
    ///   - key: the key that seals the tokens (the same as the file store's).
    ///   - logger: where to log (no secret is ever logged).
    ///   - operationTimeout: the bound of each operation once open.
    public static func open(
        _ configuration: PostgresStoreConfiguration, password: String?, key: TokenStoreKey, logger: Logger,
        operationTimeout: Duration = .seconds(5)
    ) async throws -> PostgresTokenStore {
        let tls = try PostgresStoreTLS(configuration.tlsMode)
        try await PostgresSchema.prepare(configuration, password: password, tls: tls, logger: logger)
        var clientConfiguration = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username, password: password,
            database: configuration.database, tls: tls.client)
        clientConfiguration.options.connectTimeout = .seconds(5)
        clientConfiguration.options.maximumConnections = 8
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        logger.info(
            "token store opened",
            metadata: [
                "store.kind": "postgres", "store.host": "\(configuration.host)", "store.database": "\(configuration.database)",
                "store.table": "\(configuration.table)", "store.schema_version": "\(PostgresSchema.version)",
            ])
        return PostgresTokenStore(
            configuration: configuration, client: client, sealer: TokenSealer(key: key), logger: logger,
            operationTimeout: operationTimeout)
    }

    static func ping(_ client: PostgresClient, timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await client.query("SELECT 1")) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
    }

    /// Stops the connection pool. Operations after this fail as unavailable.
    public func close() async {
        runTask.cancel()
        await runTask.value
    }

    var table: String { configuration.table }

    // MARK: - TokenStore

    /// Seals `record` and writes it into `account`'s row (created when absent).
    public func save(_ record: TokenRecord, for account: AccountID) async throws {
        let sealed = Data(try sealer.seal(record, for: account))
        let generation = Int64(bitPattern: record.generation.rawValue)
        try await run(account, .tokens) { client, table in
            _ = try await client.query(
                """
                INSERT INTO \(unescaped: table) (account, sealed, generation) VALUES (\(account.rawValue), \(sealed), \(generation))
                ON CONFLICT (account) DO UPDATE SET sealed = EXCLUDED.sealed, generation = EXCLUDED.generation, updated_at = now()
                """)
        }
    }

    /// Reads and opens `account`'s record; `nil` when the row has none.
    public func load(for account: AccountID) async throws -> TokenRecord? {
        let sealed: Data? = try await run(account, .tokens) { client, table in
            let rows = try await client.query("SELECT sealed FROM \(unescaped: table) WHERE account = \(account.rawValue)")
            for try await (sealed) in rows.decode((Data?).self) { return sealed }
            return nil
        }
        guard let sealed else { return nil }
        return try sealer.open(Array(sealed), for: account)
    }

    /// Removes `account`'s tokens (the row stays, with its state).
    public func delete(for account: AccountID) async throws {
        try await run(account, .tokens) { client, table in
            _ = try await client.query(
                "UPDATE \(unescaped: table) SET sealed = NULL, updated_at = now() WHERE account = \(account.rawValue)")
        }
    }

    // MARK: - SessionStateStore

    /// Reads `account`'s session state; `nil` when none was written.
    public func load(for account: AccountID) async throws -> SessionState? {
        let text: String? = try await run(account, .sessionState) { client, table in
            let rows = try await client.query("SELECT state FROM \(unescaped: table) WHERE account = \(account.rawValue)")
            for try await (state) in rows.decode((String?).self) { return state }
            return nil
        }
        guard let text else { return nil }
        do {
            return try Self.stateDecoder.decode(SessionState.self, from: Data(text.utf8))
        } catch {
            throw AuthError.store(.corrupt, .sessionState, account: account, message: "state did not decode")
        }
    }

    /// Replaces `account`'s session state.
    public func save(_ state: SessionState, for account: AccountID) async throws {
        let text: String
        do {
            text = String(decoding: try Self.stateEncoder.encode(state), as: UTF8.self)
        } catch {
            throw AuthError.store(.encodingError, .sessionState, account: account)
        }
        try await run(account, .sessionState) { client, table in
            _ = try await client.query(
                """
                INSERT INTO \(unescaped: table) (account, state) VALUES (\(account.rawValue), \(text))
                ON CONFLICT (account) DO UPDATE SET state = EXCLUDED.state, updated_at = now()
                """)
        }
    }

    static let stateEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static let stateDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
