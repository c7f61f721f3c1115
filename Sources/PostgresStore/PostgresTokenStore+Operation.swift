internal import AuthCore
internal import Logging
internal import PostgresNIO

extension PostgresTokenStore {
    /// Runs `body` against the pool within ``operationTimeout`` (within
    /// ``unreachableTimeout`` while the last operation or ping failed: a database that is
    /// down fails a request in a second rather than five, one that came back answers within
    /// it); any failure becomes an
    /// ``AuthCore/AuthError`` of the store domain (`unavailable`) naming the SQLSTATE or the
    /// connection failure, never a value. Writes go through ``transaction(_:_:_:)``.
    func run<Result: Sendable>(
        _ account: AccountID, _ store: AuthError.Store,
        _ body: @escaping @Sendable (PostgresClient, String) async throws -> Result
    ) async throws -> Result {
        try await bounded(account, store) { client, table, _ in try await body(client, table) }
    }

    /// Runs `body` in a transaction, bounded as ``run(_:_:_:)``, that can never commit after
    /// its caller was told it failed.
    ///
    /// A query already sent runs on when its caller gives up, and a write held up (behind
    /// another connection's row lock, or queued for a connection) could otherwise commit
    /// later over what was written meanwhile: a newer pair replaced by an older one, a
    /// newer login logged out. So the transaction
    /// - passes the ``Deadline/commitPoint()`` last, just before `COMMIT`, and rolls back
    ///   once the caller was answered (this is what guarantees it; the refresh commit is
    ///   also compare-and-set on the generation, the lease's take reads the row under a lock);
    /// - runs on a connection whose `statement_timeout` is the operation's bound (a startup
    ///   parameter of every pooled connection, so it costs no round trip), so one left behind
    ///   stops holding a connection and a row lock about when its caller gave up, rather
    ///   than whenever the lock goes.
    ///
    /// `BEGIN`, the statement and `COMMIT`: three round trips.
    func transaction<Result: Sendable>(
        _ account: AccountID, _ store: AuthError.Store,
        _ body: @escaping @Sendable (PostgresConnection, String, Logger) async throws -> Result
    ) async throws -> Result {
        let logger = self.logger
        return try await bounded(account, store) { client, table, deadline in
            try await client.withTransaction(logger: logger) { connection in
                guard deadline.remaining > .zero else { throw Deadline.Expired() }
                let result = try await body(connection, table, logger)
                try deadline.commitPoint()
                return result
            }
        }
    }

    /// The bound of ``run(_:_:_:)`` and ``transaction(_:_:_:)``; `body` gets the
    /// operation's ``Deadline``.
    private func bounded<Result: Sendable>(
        _ account: AccountID, _ store: AuthError.Store,
        _ body: @escaping @Sendable (PostgresClient, String, Deadline) async throws -> Result
    ) async throws -> Result {
        let client = self.client
        let table = self.table
        let timeout = isReachable ? operationTimeout : min(operationTimeout, Self.unreachableTimeout)
        let late = AuthError.store(.unavailable, store, account: account, message: "PostgreSQL did not answer within \(timeout)")
        do {
            guard let result = try await Deadline.run(timeout, { try await body(client, table, $0) }) else { throw late }
            recordReachable(true)
            return result
        } catch let error as PostgresTransactionError where error.closureError is AuthError {
            // A record that does not open (another key, tampered) inside a transaction: the
            // store's own error, not the database's.
            throw error.closureError!
        } catch let error as PostgresTransactionError where error.closureError is Deadline.Expired {
            // The bound ran out as the transaction began.
            recordReachable(false)
            throw late
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

    /// Runs the write `statement` in a ``transaction(_:_:_:)``. The statement returns the
    /// row's generation when it changed something and notifies the other replicas itself
    /// (`kind account generation`, see ``NotificationHub/Change``): `pg_notify` in the same
    /// statement, sent by PostgreSQL only if the transaction commits. Returns the new
    /// generation, `nil` when nothing changed.
    @discardableResult
    func write(
        _ account: AccountID, _ store: AuthError.Store,
        _ statement: @escaping @Sendable (PostgresConnection, String, Logger) async throws -> PostgresRowSequence
    ) async throws -> Int64? {
        try await transaction(account, store) { connection, table, logger in
            var generation: Int64?
            for try await (g) in try await statement(connection, table, logger).decode(Int64.self) { generation = g }
            return generation
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
