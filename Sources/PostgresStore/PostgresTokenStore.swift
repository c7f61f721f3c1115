public import AuthCore
internal import Foundation
internal import Locking
public import Logging
internal import PostgresNIO
public import ServiceLifecycle

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
/// - It starts no task of its own: its connections (the pool, the listening connection, the
///   ping) live in ``run()``, a swift-service-lifecycle `Service` that the gateway's service
///   group runs; until ``run()`` runs, operations wait (within their bound).
public final class PostgresTokenStore: SessionRowStore, Service {
    /// The settings it was opened with.
    public let configuration: PostgresStoreConfiguration
    /// How long one operation may take before it fails as unavailable.
    public let operationTimeout: Duration
    /// The bound of an operation while the database is known not to answer (the last
    /// operation or ping failed).
    public static let unreachableTimeout: Duration = .seconds(1)
    /// The bound of the ping that keeps ``isReachable`` current every 2 s: a database that
    /// stopped answering is noticed within 4 s even while no session writes.
    public static let pingTimeout: Duration = .seconds(2)
    /// This replica's name in the lease column (`lease_owner`).
    public let replicaID: String
    /// The lease's term and the longest wait for another replica's.
    public let leaseTerms: LeaseRule.Terms
    let pool: RenewablePool
    /// The pool operations use now (replaced after a silent partition, see ``RenewablePool``).
    var client: PostgresClient { pool.client }
    let sealer: TokenSealer
    let logger: Logger
    let hub = NotificationHub()
    /// The generation at which each account's pair was last seen (the fence a refresh tries first).
    let seen = SeenGenerations()
    /// The leases this replica holds and ``run()`` renews (``renewHeldLeases()``).
    let held = Locked<[HeldKey: HeldLease]>([:])
    /// The listening connection's settings (``run()`` keeps one open).
    let listener: PostgresConnection.Configuration
    /// Whether ``run()`` runs, and who waits for it to end.
    let lifetime = RunLifetime()
    /// The sessions to keep in line with the other replicas' writes, which ``run()`` follows.
    let followed = FollowRequests()
    private let reachable = Locked(true)

    /// Whether the last operation reached the database (read without waiting, for `/readyz`).
    public var isReachable: Bool { reachable.withLock { $0 } }

    /// Records whether an operation reached the database.
    func recordReachable(_ ok: Bool) { reachable.withLock { $0 = ok } }

    /// The channel of the table's notifications.
    var channel: String { configuration.table + "_events" }

    init(
        configuration: PostgresStoreConfiguration, pool: RenewablePool, listener: PostgresConnection.Configuration,
        sealer: TokenSealer, logger: Logger, operationTimeout: Duration, replicaID: String, leaseTerms: LeaseRule.Terms
    ) {
        self.configuration = configuration
        self.pool = pool
        self.sealer = sealer
        self.logger = logger
        self.operationTimeout = operationTimeout
        self.replicaID = replicaID
        self.leaseTerms = leaseTerms
        self.listener = listener
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
    ///   - replicaID: this replica's name in the lease column (default: host name, process
    ///     id and a random suffix).
    ///   - leaseTerms: the refresh lease's term and the longest wait for another's.
    public static func open(
        _ configuration: PostgresStoreConfiguration, password: String?, key: TokenStoreKey, logger: Logger,
        operationTimeout: Duration = .seconds(5), replicaID: String? = nil, leaseTerms: LeaseRule.Terms = .init()
    ) async throws -> PostgresTokenStore {
        let tls = try PostgresStoreTLS(configuration.tlsMode)
        let listener = try await PostgresSchema.prepare(configuration, password: password, tls: tls, logger: logger)
        var clientConfiguration = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username, password: password,
            database: configuration.database, tls: tls.client)
        clientConfiguration.options.connectTimeout = .seconds(5)
        clientConfiguration.options.maximumConnections = 8
        clientConfiguration.options.additionalStartupParameters = connectionSettings(operationTimeout: operationTimeout)
        let poolConfiguration = clientConfiguration
        let pool = RenewablePool { PostgresClient(configuration: poolConfiguration, backgroundLogger: logger) }
        logger.info(
            "token store opened",
            metadata: [
                "store.kind": "postgres", "store.host": "\(configuration.host)", "store.database": "\(configuration.database)",
                "store.table": "\(configuration.table)", "store.schema_version": "\(PostgresSchema.version)",
            ])
        let me = replicaID ?? "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UInt32.random(in: 0...UInt32.max))"
        return PostgresTokenStore(
            configuration: configuration, pool: pool, listener: listener, sealer: TokenSealer(key: key), logger: logger,
            operationTimeout: operationTimeout, replicaID: me, leaseTerms: leaseTerms)
    }

    /// Settings of every pooled connection, sent with its startup message (no round trip):
    /// `statement_timeout` is the operation's bound, so a statement left behind by its caller
    /// stops on the server too; the server's own TCP keepalive and `tcp_user_timeout` end a
    /// backend whose client vanished behind a silent partition (its row locks, its `LISTEN`)
    /// within seconds rather than the kernel's minutes.
    static func connectionSettings(operationTimeout: Duration) -> [(String, String)] {
        let millis = max(Int64(operationTimeout / .milliseconds(1)), 1)
        return [
            ("statement_timeout", "\(millis)"), ("tcp_keepalives_idle", "5"), ("tcp_keepalives_interval", "2"),
            ("tcp_keepalives_count", "3"), ("tcp_user_timeout", "10000"),
        ]
    }

    static func ping(_ client: PostgresClient, timeout: Duration) async -> Bool {
        (try? await Deadline.run(timeout, { _ in _ = try await client.query("SELECT 1") })) != nil
    }

    var table: String { configuration.table }

    // MARK: - TokenStore

    /// Seals `record` and writes it into `account`'s row (created when absent): a login. The
    /// row's generation and session epoch move on and any lease is void, so a refresh of
    /// the previous session still in flight on any replica can no longer commit; the other
    /// replicas are notified.
    public func save(_ record: TokenRecord, for account: AccountID) async throws {
        let sealed = Data(try sealer.seal(record, for: account))
        let channel = self.channel
        let generation = try await write(account, .tokens) { connection, table, logger in
            try await connection.query(
                .notifying(
                    "login", account: account, on: channel,
                    """
                    INSERT INTO \(unescaped: table) AS t (account, sealed, generation, session_epoch)
                    VALUES (\(account.rawValue), \(sealed), 1, 1)
                    ON CONFLICT (account) DO UPDATE SET sealed = EXCLUDED.sealed, generation = t.generation + 1,
                    session_epoch = t.session_epoch + 1, lease_owner = NULL, lease_until = NULL, updated_at = now()
                    """), logger: logger)
        }
        seen.remember(record.accessToken, generation: generation, for: account.rawValue)
    }

    /// Reads and opens `account`'s record; `nil` when the row has none.
    public func load(for account: AccountID) async throws -> TokenRecord? {
        guard let sealed = try await column("sealed", as: Data.self, of: account, .tokens) else { return nil }
        return try sealer.open(Array(sealed), for: account)
    }

    /// Removes `account`'s tokens (the row stays, with its state): a logout. The generation
    /// and session epoch move on, so no late refresh result can store a pair again; the
    /// other replicas are notified.
    public func delete(for account: AccountID) async throws {
        seen.forget(account.rawValue)
        let channel = self.channel
        try await write(account, .tokens) { connection, table, logger in
            try await connection.query(
                .notifying(
                    "logout", account: account, on: channel,
                    """
                    UPDATE \(unescaped: table) SET sealed = NULL, generation = generation + 1, session_epoch = session_epoch + 1,
                    lease_owner = NULL, lease_until = NULL, updated_at = now()
                    WHERE account = \(account.rawValue) AND sealed IS NOT NULL
                    """), logger: logger)
        }
    }

    // MARK: - SessionStateStore

    /// Reads `account`'s session state; `nil` when none was written.
    public func load(for account: AccountID) async throws -> SessionState? {
        guard let text = try await column("state", as: String.self, of: account, .sessionState) else { return nil }
        do {
            return try Self.stateDecoder.decode(SessionState.self, from: Data(text.utf8))
        } catch {
            throw AuthError.store(.corrupt, .sessionState, account: account, message: "state did not decode")
        }
    }

    /// `account`'s session state and tokens, in one statement.
    public func loadSession(for account: AccountID) async throws -> (state: SessionState?, record: TokenRecord?) {
        let (text, sealed, generation) = try await run(account, .tokens) { client, table -> (String?, Data?, Int64?) in
            let rows = try await client.query(
                "SELECT state, sealed, generation FROM \(unescaped: table) WHERE account = \(account.rawValue)")
            for try await (state, sealed, generation) in rows.decode((String?, Data?, Int64).self) {
                return (state, sealed, generation)
            }
            return (nil, nil, nil)
        }
        var state: SessionState?
        if let text {
            do {
                state = try Self.stateDecoder.decode(SessionState.self, from: Data(text.utf8))
            } catch {
                throw AuthError.store(.corrupt, .sessionState, account: account, message: "state did not decode")
            }
        }
        let record = try sealed.map { try sealer.open(Array($0), for: account) }
        seen.remember(record?.accessToken, generation: generation, for: account.rawValue)
        return (state, record)
    }

    /// Replaces `account`'s session state.
    public func save(_ state: SessionState, for account: AccountID) async throws {
        let text: String
        do {
            text = String(decoding: try Self.stateEncoder.encode(state), as: UTF8.self)
        } catch {
            throw AuthError.store(.encodingError, .sessionState, account: account)
        }
        let channel = self.channel
        try await write(account, .sessionState) { connection, table, logger in
            try await connection.query(
                .notifying(
                    "state", account: account, on: channel,
                    """
                    INSERT INTO \(unescaped: table) AS t (account, state) VALUES (\(account.rawValue), \(text))
                    ON CONFLICT (account) DO UPDATE SET state = EXCLUDED.state, updated_at = now()
                    """), logger: logger)
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
