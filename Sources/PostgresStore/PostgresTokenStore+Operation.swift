internal import AuthCore
internal import Logging
internal import PostgresNIO

extension PostgresTokenStore {
    /// Runs `body` against the pool within ``operationTimeout`` (within
    /// ``unreachableTimeout`` while the last operation or ping failed: a database that is
    /// down fails a request in a second rather than five, one that came back answers within
    /// it); any failure becomes an
    /// ``AuthCore/AuthError`` of the store domain (`unavailable`) naming the SQLSTATE or the
    /// connection failure, never a value.
    func run<Result: Sendable>(
        _ account: AccountID, _ store: AuthError.Store,
        _ body: @escaping @Sendable (PostgresClient, String) async throws -> Result
    ) async throws -> Result {
        let client = self.client
        let table = self.table
        let timeout = isReachable ? operationTimeout : min(operationTimeout, Self.unreachableTimeout)
        do {
            guard let result = try await Deadline.run(timeout, { try await body(client, table) }) else {
                throw AuthError.store(
                    .unavailable, store, account: account, message: "PostgreSQL did not answer within \(timeout)")
            }
            recordReachable(true)
            return result
        } catch let error as PostgresTransactionError where error.closureError is AuthError {
            // A record that does not open (another key, tampered) inside a transaction: the
            // store's own error, not the database's.
            throw error.closureError!
        } catch let error as AuthError {
            recordReachable(false)
            logger.info("token store operation failed", metadata: ["store.error": "\(error)"])
            throw error
        } catch {
            recordReachable(false)
            let reason = PostgresStoreError.classify(error, configuration: configuration)
            logger.info("token store operation failed", metadata: ["store.error": "\(reason.code)"])
            throw AuthError.store(.unavailable, store, account: account, message: "PostgreSQL: \(reason.message)")
        }
    }

    /// Runs the write `statement` (which returns the row's generation when it changed
    /// something) in a transaction that also notifies the other replicas (`kind account
    /// generation`) when it did. Returns the new generation, `nil` when nothing changed.
    @discardableResult
    func write(
        _ account: AccountID, _ store: AuthError.Store, kind: String,
        _ statement: @escaping @Sendable (PostgresConnection, String, Logger) async throws -> PostgresRowSequence
    ) async throws -> Int64? {
        let channel = self.channel
        let logger = self.logger
        return try await run(account, store) { client, table in
            try await client.withTransaction(logger: logger) { connection in
                var generation: Int64?
                for try await (g) in try await statement(connection, table, logger).decode(Int64.self) { generation = g }
                if let generation {
                    let payload = NotificationHub.Change(kind: kind, account: account.rawValue, generation: UInt64(generation)).payload
                    _ = try await connection.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
                }
                return generation
            }
        }
    }

    /// The value of `column` (one of the table's own column names, never input) in
    /// `account`'s row, read through ``run(_:_:_:)``; `nil` when there is no row or the
    /// column is null.
    func column<Value: PostgresDecodable & Sendable>(
        _ column: String, as type: Value.Type, of account: AccountID, _ store: AuthError.Store
    ) async throws -> Value? where Value._DecodableType == Value {
        try await run(account, store) { client, table in
            let rows = try await client.query(
                "SELECT \(unescaped: column) FROM \(unescaped: table) WHERE account = \(account.rawValue)")
            for try await (value) in rows.decode((Value?).self) { return value }
            return nil
        }
    }
}
