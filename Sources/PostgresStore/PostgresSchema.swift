internal import Foundation
internal import Logging
internal import PostgresNIO

/// The store's tables and their migration: created at start when absent, migrated when
/// older, refused when newer than this build. Idempotent, and safe when several replicas
/// start at once (a transaction-scoped advisory lock serialises them).
///
/// `<table>`: one row per account: `sealed` (the ``AuthCore/TokenSealer`` box, `NULL` when
/// logged out), `generation`, `session_epoch` (bumped by every login and logout, on any
/// replica), `state` (the non-secret session state, JSON), `lease_owner` and `lease_until`
/// (who refreshes now, until when on the database's clock), `updated_at`; since version 2,
/// the device login the replicas share: `device_id`, `device_sealed` (its device code and
/// user code, sealed as the tokens are), `device_interval_ms`, `device_outcome` (how it
/// ended), `device_owner` and `device_until` (who polls now, until when),
/// `device_starting` and `device_starting_until` (who is asking for new codes, until when).
/// `<table>_schema`: one row, the version.
///
/// A migration adds to a table, in place, in the transaction that records the new version:
/// the rows and every session in them stay as they were.
public enum PostgresSchema {
    /// The version this build writes and reads.
    public static let version = 2

    /// The statements that take a table from version `n - 1` to `n` (index `n - 1`).
    static func migrations(_ table: String) -> [[String]] {
        [
            [
                """
                CREATE TABLE IF NOT EXISTS \(table) (
                    account text PRIMARY KEY,
                    sealed bytea,
                    generation bigint NOT NULL DEFAULT 0,
                    session_epoch bigint NOT NULL DEFAULT 0,
                    state text,
                    lease_owner text,
                    lease_until timestamptz,
                    updated_at timestamptz NOT NULL DEFAULT now()
                )
                """
            ],
            // 2: a device login shared by the replicas (issue 28).
            [
                """
                ALTER TABLE \(table)
                    ADD COLUMN IF NOT EXISTS device_id text,
                    ADD COLUMN IF NOT EXISTS device_sealed bytea,
                    ADD COLUMN IF NOT EXISTS device_interval_ms bigint,
                    ADD COLUMN IF NOT EXISTS device_outcome text,
                    ADD COLUMN IF NOT EXISTS device_owner text,
                    ADD COLUMN IF NOT EXISTS device_until timestamptz,
                    ADD COLUMN IF NOT EXISTS device_starting text,
                    ADD COLUMN IF NOT EXISTS device_starting_until timestamptz
                """
            ],
        ]
    }

    /// Connects once on a connection of its own (so that every failure is named), then
    /// creates or migrates the schema and checks the role's rights. Throws
    /// ``PostgresStoreError``. Returns the configuration of that connection (the listener's).
    static func prepare(
        _ c: PostgresStoreConfiguration, password: String?, tls: PostgresStoreTLS, logger: Logger
    ) async throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: c.host, port: c.port, username: c.username, password: password, database: c.database, tls: tls.connection)
        configuration.options.connectTimeout = .seconds(5)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } catch {
            throw PostgresStoreError.classify(error, configuration: c)
        }
        do {
            try await migrate(c.table, on: connection, logger: logger)
            try await checkRights(c.table, on: connection, logger: logger)
        } catch {
            try? await connection.close()
            throw PostgresStoreError.classify(error, configuration: c)
        }
        try? await connection.close()
        return configuration
    }

    /// Brings `table` to ``version`` in one transaction.
    static func migrate(_ table: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            // Serialises replicas migrating at once: two `CREATE TABLE IF NOT EXISTS` racing
            // can both miss the table and one then fails on the catalog's unique index.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\("authgate.schema." + table)))", logger: logger)
            // Created only when missing: `CREATE TABLE IF NOT EXISTS` needs CREATE on the
            // schema even when the table exists, which a role that only reads and writes lacks.
            var exists = false
            let found = try await connection.query("SELECT to_regclass(\(table + "_schema")) IS NOT NULL", logger: logger)
            for try await (e) in found.decode(Bool.self) { exists = e }
            if !exists {
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            CREATE TABLE \(table)_schema (
                                id int PRIMARY KEY CHECK (id = 1),
                                version int NOT NULL,
                                migrated_at timestamptz NOT NULL DEFAULT now()
                            )
                            """), logger: logger)
            }
            var current = 0
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT version FROM \(table)_schema WHERE id = 1"), logger: logger)
            for try await (v) in rows.decode(Int.self) { current = v }
            if current > version {
                throw PostgresStoreError(
                    .schemaTooNew, field: "store.table",
                    "\(table) has schema version \(current), newer than this build's \(version): upgrade AuthGate")
            }
            guard current < version else { return }
            for step in migrations(table)[current..<version] {
                for statement in step {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO \(table)_schema (id, version) VALUES (1, \(version))
                        ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()
                        """), logger: logger)
            logger.info(
                "token store schema migrated",
                metadata: ["store.table": "\(table)", "store.from": "\(current)", "store.to": "\(version)"])
        }
    }

    /// Writes and reads a probe row in a transaction that is rolled back: a role that may
    /// not is refused at start, not at the first login.
    static func checkRights(_ table: String, on connection: PostgresConnection, logger: Logger) async throws {
        do {
            try await connection.query("BEGIN", logger: logger)
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO \(table) (account) VALUES ('#rights-check')
                        ON CONFLICT (account) DO UPDATE SET updated_at = now()
                        """), logger: logger)
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT account FROM \(table) WHERE account = '#rights-check' FOR UPDATE"),
                logger: logger)
            try await connection.query("ROLLBACK", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }
}
